#pragma once
// The PS's gemm_engine for a fleet: each product is planned (selective: stay
// local, or hybrid tiles over M, N and K), its tiles go to devices as tasks
// keyed by (step, gemm, tile), and results are checked and assembled here.
// K-split partials are added in tile order, so a run's numbers do not depend
// on which device answers first.
//
// It runs in the training loop's thread and talks to the actors through a
// scoped (blocking) actor: the loop waits for its tiles, which is what a
// synchronous training step means.
//
// Its parts: plan_cache (plans for the run), fleet_client (the members and
// the planner), tile_policy (who takes a tile that must move; pure),
// tile_schedule (when tiles move: timeout, speculation, a lost device; pure),
// fold_order (results into C in tile order; pure) and accounts. This class
// issues tiles and waits for them: distributed_gemm.cpp runs a batch of
// products, tile_issue.cpp cuts, sends and reassigns, and
// tile_check.cpp checks what comes back (actors/ps/verify/).

#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <caf/all.hpp>

#include "actors/device/block_cache.hpp"
#include "actors/planner/planner_protocol.hpp"
#include "actors/ps/engine/accounts.hpp"
#include "actors/ps/engine/fleet_client.hpp"
#include "actors/ps/engine/fold_order.hpp"
#include "actors/ps/engine/paced_link.hpp"
#include "actors/ps/engine/plan_cache.hpp"
#include "actors/ps/engine/send_window.hpp"
#include "actors/ps/engine/sent_mirrors.hpp"
#include "actors/ps/engine/snapshot_shelf.hpp"
#include "actors/ps/engine/step_predictor.hpp"
#include "training/elapsed.hpp"
#include "actors/ps/engine/tile_policy.hpp"
#include "actors/ps/engine/tile_schedule.hpp"
#include "actors/ps/ps_protocol.hpp"
#include "actors/ps/verify/freivalds.hpp"
#include "actors/ps/verify/reputation.hpp"
#include "kernels/gemm.hpp"

namespace cleave {

struct engine_options {
  // The tile timeout and speculation (tile_schedule.hpp); of a speculated
  // tile, the first result wins.
  schedule_options schedule;
  // Tests: every decision of the tile schedule, with what it was told.
  schedule_log* schedule_record = nullptr;
  // The baselines' way, for comparison: a device declared dead stops the run
  // at the next step (to be resumed from the last checkpoint).
  bool stop_on_failure = false;
  // In-process: finds the planner's successor after the supervisor restarted
  // it (the registry's "planner"). Without it a lost planner ends the run.
  std::function<caf::actor()> find_planner;
  // This engine is shard `shard` of `shards` (--ps-shards): its GEMM ids are
  // seq * shards + shard, so tile keys never collide between shards.
  // Shards multiply at the same time, so a GEMM the planner keeps
  // local runs on one thread instead of widening Eigen's process-wide pool.
  uint32_t shard = 0;
  uint32_t shards = 1;
  // Every result is checked (freivalds.hpp); a fraction `replicate` of the
  // tiles is also computed by a second device and the two compared
  // element by element, which sees changes too small for the check.
  double replicate = 0;
  // Results are taken without Freivalds' test (shape and finiteness are
  // still checked): for a fleet the operator owns, and for measuring
  // what the test costs.
  bool trust_results = false;
  reputation_options trust;
  // Bytes/s of this engine's own link to the fleet (--pace-ps-link); 0
  // leaves it unpaced, as fast as the process can move messages.
  double paced_egress = 0;
  double paced_ingress = 0;
  // The precision tiles cross the device links in (--wire): with bf16
  // operands (bf16, bf16_operands) the operands are rounded before they are
  // hashed, sent and checked, and are 2 bytes an element; with bf16 results
  // (bf16) results come back rounded, 2 bytes an element, and Freivalds'
  // tolerance allows for the rounding.
  wire_precision wire = wire_precision::fp32;
  // Devices pipeline their tiles (--pipelined-devices, device processes):
  // each is sent at most as many tasks at once as its memory holds
  // (send_window.hpp), the rest as its results come back.
  bool pipelined_devices = false;
};

class distributed_gemm final : public gemm_engine<float> {
 public:
  distributed_gemm(caf::actor_system& sys, caf::actor planner, engine_options opts);

  // Refreshes the fleet from the planner and starts a new idempotency epoch.
  // Fleet events (a device dead, suspected, joined) are acted on as they
  // arrive: a failed device's outstanding tiles move to others at once.
  caf::error begin_step(uint64_t step);
  // Ends the step begun last (begin_step does this too): its wall time is
  // compared with its prediction and profiles the PS's own work.
  void finish_step();
  // An evaluation batch after training: its tiles are keyed as a step of
  // their own past the last one, so the devices' caches let go of the
  // previous batch's blocks and the PS of their snapshots, as when a
  // training step begins. Nothing is timed.
  void begin_evaluation_batch();
  // After the evaluation: the snapshots' buffers go back to the heap.
  void run_over() { snapshots_.release(); }

  void gemm(gemm_tag tag, const_view<float> a, bool trans_a, const_view<float> b, bool trans_b,
            mut_view<float> c, float beta) override;
  // The products' tiles are all in flight before the engine waits.
  void gemm_batch(const std::vector<gemm_job<float>>& jobs) override;
  // A product its plan keeps on the PS (planned here on first sight).
  bool computes_here(gemm_tag tag, int64_t m, int64_t n, int64_t k) override;
  // The plan a product of C[m,n], K = k runs under, as gemm would ask it
  // (a test compares the simulator's operand caches on the same plans).
  const plan& plan_for(gemm_tag tag, int64_t m, int64_t n, int64_t k);
  void add_local_seconds(double seconds, int64_t products) override;

  runtime_accounts accounts() const;
  // Tests: the snapshots taken and the blocks copied into them.
  const snapshot_shelf& snapshots() const { return snapshots_; }

 private:
  // The GEMM's inputs. A block is copied into a snapshot, which no one
  // writes once a task refers to it, the first time it is sent with its
  // values: a task carries a window of the snapshot (a shared pointer, no
  // copy, between actors of this process; the block's values when
  // serialised for a remote device), so a late or speculative task stays
  // valid after the call returns. Snapshots are the step's, shared by the
  // products that read the same operand (snapshot_shelf.hpp). A block a
  // device already holds is only hashed: the live operand does not change
  // while the call runs.
  struct inputs {
    const_view<float> a, b;
    bool trans_a, trans_b;
    // The step's later products name its blocks (a forward product's X and
    // W, read by dW and dX): its snapshots are held until the step ends.
    // Those of the others go when the last task lets go of them.
    bool read_again = false;
    // By operand: A (which 0) or B (1).
    const_view<float> live(int which) const { return which == 0 ? a : b; }
    bool transposed(int which) const { return which == 0 ? trans_a : trans_b; }
  };

  struct block_ref {  // a block of A (which 0) or B (1) as stored, and its content key
    int which;
    int64_t r0, r1, c0, c1;
    uint64_t key;
  };

  struct pending_tile {
    assignment where;
    tile_key key;
    block_ref a, b;
    std::vector<int32_t> holders;  // devices working on it: the first, then copies
    std::vector<int32_t> given;    // every device it was ever sent to: any may answer first
    // Devices that must not take it again: they refused it, failed its
    // check, or gave the first of the two copies a replicated tile needs.
    std::vector<int32_t> excluded;
    int copies_wanted = 1;
    int32_t first_device = -1;  // a replicated tile's first verified copy and who sent it
    std::vector<float> first_copy;
    bool speculated = false;
    // Its result is in `result`, awaiting its check group's verdict; or,
    // when `in_c`, already in its block of C (copied there in the pass that
    // added it to the group's sums) and `result` is empty.
    bool arrived = false;
    bool in_c = false;
    int32_t answered_by = -1;
    size_t group = 0;  // its check group: the tiles sharing its block of A
    bool done = false;
    std::vector<float> result;
  };

  // Tiles sharing a block of A are checked together (freivalds.hpp) once
  // all of them arrived or were done otherwise; a refusal is narrowed to
  // its tile by checking them one by one, and from then on the group's
  // results are checked one by one as they come.
  struct check_group {
    std::vector<size_t> tiles;
    size_t open = 0;  // tiles neither arrived nor done
    bool judged = false;
    std::optional<row_sums> sums;
    // op(A)·Σ_t op(B_t)·r_t over all its tiles, computed while the engine
    // waits for results (prepare_check): the check's part that reads no
    // result, taken off the path from the group's last result to its verdict.
    std::optional<a_expectation> expected;
  };

  // Keys of the blocks this GEMM call has hashed (a block shared by a row or
  // column of tiles is hashed once) and the snapshot that holds it, once one does.
  struct block_state {
    uint64_t key = 0;
    std::shared_ptr<std::vector<float>> snapshot;
  };
  using block_states = std::map<std::tuple<int, int64_t, int64_t, int64_t, int64_t>, block_state>;

  // One GEMM's tiles in flight.
  struct gemm_call {
    uint32_t id = 0;  // gemm_id(seq): the key its tiles carry
    inputs in;
    block_states blocks;
    std::vector<pending_tile> tiles;
    size_t remaining = 0;
    double failed_at = -1;  // seconds (steady clock) of the first failure during this call
    mut_view<float> c;
    std::optional<fold_order> folds;
    double fold_seconds = 0;
    // The secret probes its results are checked with, over C's columns
    // (freivalds::window), and what the check keeps of each block of B (by
    // stored coordinates).
    std::vector<double> probes;
    std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, b_digest> b_digests;
    std::vector<check_group> groups;
  };

  // One batch's products in flight (gemm_batch; gemm is a batch of one). It
  // owns their calls, each with its pending tiles and check groups, and what
  // acts on tiles mid-batch (a fleet event, the schedule, a check that
  // strikes a device) takes it whole: a device's tiles may be in any call.
  struct inflight_batch {
    std::vector<gemm_call> calls;
    // The next group prepare_check looks at: calls[call].groups[group].
    size_t prepared_call = 0, prepared_group = 0;
    // Tiles of its calls not yet final.
    size_t remaining() const;
    // The call and tile a result or miss of `step` is about, if it is in flight.
    std::pair<gemm_call*, pending_tile*> find(uint64_t step, const tile_key& k);
    // A call's index: how the tile schedule names it.
    size_t index_of(const gemm_call& call) const { return static_cast<size_t>(&call - calls.data()); }
  };

  // The problem the planner sees for an m x n product with inner dimension k.
  gemm_problem problem_of(gemm_tag tag, int64_t m, int64_t n, int64_t k) const;
  // A fleet event mid-GEMM: a failed device's outstanding tiles move, as
  // the batch's tile schedule says.
  void on_event(const fleet_event& ev, inflight_batch& batch);
  void on_planner_lost(inflight_batch& batch);
  void wait_for(inflight_batch& batch, double predicted_seconds);
  // The schedule's actions on the batch's tiles.
  void apply(const std::vector<schedule_action>& actions, inflight_batch& batch);
  static batch_view policy_view(const inflight_batch& batch);
  void compute_unheld(gemm_call& call, inflight_batch& batch);
  tile_policy policy() const;
  static std::vector<policy_tile> policy_view(const gemm_call& call);
  uint32_t gemm_id(uint32_t seq) const { return seq * opts_.shards + opts_.shard; }
  void run_local(const_view<float> a, bool ta, const_view<float> b, bool tb, mut_view<float> c,
                 float beta);
  // Where a block is in memory and its shape (rows, cols, row stride).
  using block_place = std::tuple<const float*, int64_t, int64_t, int64_t>;
  // Keys of the blocks a batch has hashed, by place.
  using batch_keys = std::map<block_place, uint64_t>;
  // The block of op(A) (which 0) or op(B) (1) of the call at rows [r0, r1)
  // and columns [c0, c1), hashed the first time the batch needs it; and
  // copied into the snapshot in the same pass when `will_send`.
  block_ref locate(gemm_call& call, int which, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                   batch_keys& batch, bool will_send);
  // The operand a task carries for `ref`: its values (copied into the
  // snapshot if they are not there yet) or only its key.
  operand cut(gemm_call& call, const block_ref& ref, bool with_data);
  // Block [r0, r1) x [c0, c1) of operand `which` as stored, into the step's
  // snapshots (with bf16, rounded) unless one holds it: where it is, and its
  // key (hashed, as it is copied, unless given).
  block_state shelve(const gemm_call& call, int which, int64_t r0, int64_t r1, int64_t c0,
                     int64_t c1, std::optional<uint64_t> key);
  // Tile p to `dev`: now, or when the device has room for it (send_window).
  void send_task(gemm_call& call, pending_tile& p, int32_t dev, bool with_all_data);
  // Tile p to `dev` now, whatever it holds.
  void dispatch(gemm_call& call, pending_tile& p, int32_t dev, bool with_all_data);
  // An answer from `dev`: the tasks that waited for room at it go out.
  void send_waiting(int32_t dev);
  // A task goes to `dev` through its window: counted, with the most it held.
  void count_sent(int32_t dev);
  // Checks a result's form and takes it into its check group (or checks it
  // alone, or as one of a replicated tile's copies). False when refused.
  bool take(gemm_call& call, size_t i, tile_result& r, inflight_batch& batch);
  // A group whose tiles have all come: checked together, and narrowed to
  // the tiles at fault when the sum is refused.
  void judge(gemm_call& call, check_group& g, inflight_batch& batch);
  // One group's check prepared ahead of its results (check_group::expected),
  // while nothing else is waiting; false when every group is prepared.
  bool prepare_check(inflight_batch& batch);
  // Freivalds' test of `result` (row stride ld, 0: packed) as tile p of the call, alone.
  verdict check(gemm_call& call, const pending_tile& p, const float* result, int64_t ld = 0);
  const b_digest& b_digest_of(gemm_call& call, const pending_tile& p);
  // Two verified copies of a replicated tile: equal within rounding, or the
  // PS computes the tile and strikes the copy that differs from it.
  void settle_copies(gemm_call& call, pending_tile& p, int32_t second, std::vector<float> result,
                     inflight_batch& batch);
  // A result refused from `device`: counted, the tile moved, the device struck.
  void refuse(gemm_call& call, pending_tile& p, int32_t device, const std::string& why,
              bool strikes, inflight_batch& batch);
  // A refused result's device: its reputation drops; past the threshold it
  // is quarantined, the planner told and its tiles moved.
  void strike(int32_t device, const std::string& why, inflight_batch& batch);
  // The device gave its answer (or was refused) for p: it no longer holds it.
  void release(gemm_call& call, pending_tile& p, int32_t device);
  // Tile i's result is final: counted, folded into C, and its group judged
  // when it was the last the group waited for.
  void finish(gemm_call& call, size_t i, inflight_batch& batch);
  // Tile p computed here, on one thread like a device.
  std::vector<float> compute_here(const gemm_call& call, const pending_tile& p);
  stored_block block_of(const gemm_call& call, const block_ref& ref) const;
  // Tile i's result is in: folds it into C with the tiles it unblocks.
  static void fold_ready(gemm_call& call, size_t i);
  void reassign(gemm_call& call, pending_tile& p);
  // A batch's tiles through this engine's paced link (ps_link_seconds on
  // its fair share of the fleet).
  double paced_batch_seconds(const plan& batch) const;
  // The batch being waited for (wait_for), which fleet events reach.
  tile_schedule* schedule_ = nullptr;
  // The batch in flight (gemm_batch), whose tiles the send window names.
  inflight_batch* batch_ = nullptr;
  send_window window_;

  caf::scoped_actor self_;
  engine_options opts_;
  runtime_accounts acc_;
  fleet_client fleet_;
  plan_cache plans_;
  uint64_t step_ = 0;
  uint32_t gemm_seq_ = 0;
  // What each device, or its relay, holds as the PS can know it this step.
  // A block it has evicted is sent again instead of named and missed.
  sent_mirrors sent_;
  snapshot_shelf snapshots_;
  std::vector<float> rounded_;  // a bf16 block's values, to be hashed
  paced_link egress_, ingress_;
  step_predictor predictor_;
  freivalds checker_;
  std::mt19937_64 secret_;  // seeded from the OS: no device can predict the probes
  std::uniform_real_distribution<double> replica_draw_{0.0, 1.0};
  reputation trust_;
  bool in_step_ = false;
  clock_type::time_point step_began_;
  step_account at_step_begin_;
};

}  // namespace cleave
