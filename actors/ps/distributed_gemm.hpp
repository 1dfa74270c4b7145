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

#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <caf/all.hpp>

#include "actors/planner/planner_actor.hpp"
#include "training/elapsed.hpp"
#include "actors/ps/snapshot_pool.hpp"
#include "actors/ps/step_predictor.hpp"
#include "kernels/gemm.hpp"
#include "schema/messages.hpp"

namespace cleave {

struct device_account {
  std::string profile;
  uint64_t tiles = 0;
  uint64_t bytes_down = 0;
  uint64_t bytes_up = 0;
  uint64_t cache_hits = 0;
  uint64_t operands = 0;  // operands needed (hits + sent)
  uint64_t refused = 0;   // results refused as malformed
  double flops = 0;       // of the tiles it completed
  double busy_seconds = 0;
};

struct step_account {
  double ps_compute_seconds = 0;  // GEMMs the planner kept local
  double issue_seconds = 0;       // issuing tiles: planning, snapshots, hashing, sending
  double wait_seconds = 0;        // waiting on device tiles
  double allgather_seconds = 0;   // assembling results (no sharding: copies only)
  double predicted_wait_seconds = 0;  // what the cost model predicted for the distributed GEMMs
                                      // (issue and wait, from the first tile sent)
};

// What churn cost: failures seen and the work they moved.
struct churn_account {
  uint64_t failures_detected = 0;   // devices declared dead or suspected
  uint64_t tiles_reassigned = 0;    // outstanding tiles moved off a failed device
  uint64_t speculative_tiles = 0;   // copies of a straggler's tiles
  uint64_t tiles_timed_out = 0;     // given up on after --tile-timeout
  uint64_t tiles_at_ps = 0;         // tiles of split GEMMs the PS computed (no device could)
  double recovery_seconds = 0;      // from a failure until its batch of GEMMs completed, summed
};

// Everything the engine counted, as of one moment.
struct runtime_accounts {
  std::map<int32_t, device_account> devices;
  step_account totals;
  uint64_t tiles = 0;
  uint64_t local_gemms = 0;
  uint64_t refused = 0;
  churn_account churn;
  step_predictor::totals prediction;  // whole steps against the prediction
  double ps_profile_seconds = 0;      // the PS's own work per step, as last profiled
};

// One account for the run from the shards' engines: counts add up; the
// shards wait at the same time, so time totals are the slowest shard's, and
// a failure every shard saw is one failure.
runtime_accounts combine_shards(const std::vector<runtime_accounts>& shards);

struct engine_options {
  double tile_timeout_seconds = 30;  // no progress this long: the PS computes what is left
  // A GEMM running past speculate_factor x its predicted time (and at least
  // speculate_min_seconds) gives copies of its unfinished tiles to idle
  // devices; the first result wins. 0 disables speculation.
  double speculate_factor = 3;
  double speculate_min_seconds = 0.05;
  // The baselines' way, for comparison: a device declared dead stops the run
  // at the next step (to be resumed from the last checkpoint).
  bool stop_on_failure = false;
  // In-process: finds the planner's successor after the supervisor restarted
  // it (the registry's "planner"). Without it a lost planner ends the run.
  std::function<caf::actor()> find_planner;
  // This engine is shard `shard` of `shards` (--ps-shards): its GEMM ids are
  // seq * shards + shard, so results find their shard through the bulk
  // gateway. Shards multiply at the same time, so a GEMM the planner keeps
  // local runs on one thread instead of widening Eigen's process-wide pool.
  uint32_t shard = 0;
  uint32_t shards = 1;
};

class distributed_gemm final : public gemm_engine<float> {
 public:
  // gateway: the PS's bulk gateway (actors/ps/bulk_gateway.hpp), or null when
  // no device takes tiles over the bulk channel.
  distributed_gemm(caf::actor_system& sys, caf::actor planner, engine_options opts,
                   caf::actor gateway = {});

  // Refreshes the fleet from the planner and starts a new idempotency epoch.
  // Fleet events (a device dead, suspected, joined) are acted on as they
  // arrive: a failed device's outstanding tiles move to others at once.
  caf::error begin_step(uint64_t step);
  // Ends the step begun last (begin_step does this too): its wall time is
  // compared with its prediction and profiles the PS's own work.
  void finish_step();

  void gemm(gemm_tag tag, const_view<float> a, bool trans_a, const_view<float> b, bool trans_b,
            mut_view<float> c, float beta) override;
  // The products' tiles are all in flight before the engine waits.
  void gemm_batch(const std::vector<gemm_job<float>>& jobs) override;
  // A product its plan keeps on the PS (planned here on first sight).
  bool computes_here(gemm_tag tag, int64_t m, int64_t n, int64_t k) override;
  void add_local_seconds(double seconds, int64_t products) override;

  runtime_accounts accounts() const;

 private:
  // The GEMM's inputs. A block is copied into a snapshot, which no one
  // writes once a task refers to it, the first time it is sent with its
  // values: a task carries a window of the snapshot (a shared pointer, no
  // copy, between actors of this process; the block's values when
  // serialised for a remote device), so a late or speculative task stays
  // valid after the call returns. A block a device already holds is only
  // hashed: the live operand does not change while the call runs.
  struct inputs {
    const_view<float> a, b;
    bool trans_a, trans_b;
    std::shared_ptr<std::vector<float>> a_snapshot, b_snapshot;  // filled block by block
    // By operand: A (which 0) or B (1).
    const_view<float> live(int which) const { return which == 0 ? a : b; }
    bool transposed(int which) const { return which == 0 ? trans_a : trans_b; }
    std::vector<float>& snapshot(int which) const { return which == 0 ? *a_snapshot : *b_snapshot; }
    const std::shared_ptr<std::vector<float>>& shared(int which) const {
      return which == 0 ? a_snapshot : b_snapshot;
    }
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
    bool speculated = false;
    bool done = false;
    std::vector<float> result;
    // Folding into C: a tile is added after `after` (the tile before it on
    // the same block of C, or -1) and before `then` (the next one, or -1);
    // the first on its block is copied instead when beta is 0.
    int32_t after = -1;
    int32_t then = -1;
    bool copies = false;
    bool folded = false;
  };

  // Keys of the blocks this GEMM call has hashed (a block shared by a row or
  // column of tiles is hashed once) and whether the snapshot holds it yet.
  struct block_state {
    uint64_t key = 0;
    bool copied = false;
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
    double fold_seconds = 0;
  };

  caf::error refresh_fleet();
  caf::error ask_fleet();
  const plan& plan_for(gemm_tag tag, const gemm_problem& g);
  // The problem the planner sees for an m x n product with inner dimension k.
  gemm_problem problem_of(gemm_tag tag, int64_t m, int64_t n, int64_t k) const;
  plan replaced(const plan& p);
  void on_event(const fleet_event& ev, std::vector<gemm_call>& calls);
  void on_planner_lost(std::vector<gemm_call>& calls);
  void wait_for(std::vector<gemm_call>& calls, double predicted_seconds);
  void speculate(gemm_call& call);
  void compute_unheld(gemm_call& call);
  int32_t least_loaded(const gemm_call& call, const pending_tile& p) const;
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
  static operand cut(gemm_call& call, const block_ref& ref, bool with_data);
  void send_task(gemm_call& call, pending_tile& p, int32_t dev, bool with_all_data);
  bool accept(pending_tile& p, tile_result& r);
  static void order_folds(gemm_call& call, float beta);
  void fold_ready(gemm_call& call, size_t i);
  void reassign(gemm_call& call, pending_tile& p);

  caf::scoped_actor self_;
  caf::actor planner_;
  caf::actor gateway_;
  engine_options opts_;
  bool fleet_stale_ = false;
  bool planner_lost_ = false;  // its down message came: ask its successor
  std::string stopped_by_;  // stop_on_failure: the failure that ends the run
  std::set<int32_t> failed_;  // dead or suspected, and not back: counted once each  // a device joined or came back: refresh before the next GEMM
  uint64_t step_ = 0;
  uint32_t gemm_seq_ = 0;
  uint64_t fleet_version_ = ~uint64_t{0};
  std::unordered_map<int32_t, fleet_member> fleet_;
  // Plans are kept for the whole run: when the fleet changes, a plan's
  // tiles are re-placed on the devices left (replace_atom), never re-cut,
  // so churn does not change the numbers. `epoch` says for which fleet.
  struct cached_plan {
    plan p;
    uint64_t epoch = 0;
  };
  std::map<std::tuple<int64_t, int64_t, int64_t, int, uint32_t>, cached_plan> plans_;
  uint64_t fleet_epoch_ = 0;  // bumped whenever fleet_ changes
  plan unplanned_;  // the local plan of a GEMM the planner did not answer for
  std::map<uint32_t, plan> forward_plans_;  // this step's, by layer tag, for mirroring
  std::unordered_map<int32_t, std::set<uint64_t>> sent_;  // operand keys each device got this step
  runtime_accounts acc_;
  snapshot_pool snapshots_;
  step_predictor predictor_;
  bool in_step_ = false;
  clock_type::time_point step_began_;
  step_account at_step_begin_;
};

}  // namespace cleave
