#pragma once
// One batch of a step's GEMMs in virtual time, on every PS shard at once:
// the products the engine issues before it waits (one, or a layer's dX and
// dW: gemm_batch), their tiles as their plans place them, one product's
// after the other's in each device's queue and on the PS's link. Each
// device pipelines its tiles in that order (its downlink fetching the next
// tile's operands while it computes one and its uplink returns the one
// before: three stages, each one tile at a time, each stage's start one
// latency after the stage before it ended on the other side of the link),
// as many tiles in hand as its memory holds beside its block cache
// (pipeline_depth). Emulated devices (planner_config::pipelined_devices
// off) take one tile at a time, whole, as they pace themselves. Each
// shard's egress either shared fairly among the transfers or served in the
// order the PS sends (ps_link.hpp), its ingress shared fairly; the PS computing the tiles
// no device holds, and churn applied as virtual time reaches it. What moves
// when a device fails, a tile times out or the GEMM runs late is the
// runtime's own tile_schedule's decision (tile_flight.hpp).
//
// Devices take part in every shard's GEMMs at once; each shard sees its fair
// share of a device (fair_share: FLOP/s and links divided by the shards),
// as the planner assumes. A device's copies still running when the GEMM
// completes are dropped: the next GEMM starts on an idle fleet.
//
// Which operand blocks each tile is sent is operand_cache's decision, made
// where the engine makes it: for the plan's tiles when the GEMM is issued
// (issue), for a moved or copied tile when it moves.
//
// The PS's own work on the tiles (ps_tile_work.hpp), on each shard's one
// thread as the engine does it: keying and copying a tile's blocks before
// its task goes out (tiles leave one after another as the PS gets them
// ready), the check's part over the operands in the time nothing arrives,
// and checking and folding each result as it comes, after whatever the
// thread was doing. What the operand part has not done when the last result
// is in still delays the GEMM's end (the group's verdict needs it).
//
// A device behind a relay (sim_device::relay) takes its tiles' blocks from
// the relay (relay_tier.hpp): the relay fetches what it lacks through the
// PS's egress, as one more flow capped at its share of its own link, and
// the device downloads from the relay over the relay's fan-out link, shared
// fairly by the relay's devices; results go up the same two hops. The
// latencies add up on the way (PS to relay, relay to device).

#include <cstdint>
#include <vector>

#include <caf/expected.hpp>

#include "actors/planner/plan.hpp"
#include "actors/planner/ps_tile_work.hpp"
#include "actors/ps/engine/tile_schedule.hpp"
#include "actors/simulator/operand_cache.hpp"
#include "actors/simulator/ps_link.hpp"
#include "actors/simulator/relay_tier.hpp"
#include "actors/simulator/sim_fleet.hpp"
#include "actors/simulator/tile_flight.hpp"

namespace cleave {

struct shard_links {
  double egress = 1.25e9;   // bytes/s to the fleet
  double ingress = 1.25e9;  // bytes/s from the fleet
};

// What the GEMMs cost beyond their time, summed over the run.
struct batch_totals {
  uint64_t tiles = 0;             // tiles issued
  uint64_t tiles_reassigned = 0;  // moved off a failed device (or to the PS)
  uint64_t speculative_tiles = 0;
  uint64_t tiles_timed_out = 0;
  uint64_t tiles_at_ps = 0;
  double recovery_seconds = 0;  // from a GEMM's first failure until it completed
  double ps_tile_seconds = 0;   // the PS computing tiles no device held
  double ps_op_seconds = 0;     // the PS's own work on tiles (ps_tile_work.hpp)
  std::vector<uint64_t> shard_bytes_down, shard_bytes_up;
};

// By shard and tile of the batch (its products' tiles one product after
// the other): what the PS sends the tile's device when it issues the batch
// (nothing for a tile no member holds: the PS computes it).
struct issued_tile {
  uint64_t bytes = 0;
  uint8_t blocks = 0;  // bit 0: the A block goes with it, bit 1: the B block
  bool operator==(const issued_tile& o) const { return bytes == o.bytes && blocks == o.blocks; }
  bool operator!=(const issued_tile& o) const { return !(*this == o); }
};
using issued_bytes = std::vector<std::vector<issued_tile>>;

// One product of a batch: each shard's plan (a local plan: nothing for that
// shard) and the operands it reads there.
struct batch_product {
  std::vector<const plan*> shard_plans;
  std::vector<product_operands> ops;
};
using gemm_batch_sim = std::vector<batch_product>;

class batch_sim {
 public:
  batch_sim(std::vector<shard_links> shards, schedule_options schedule, double ps_flops,
            double detection_seconds, ps_link_model egress_model = ps_link_model::fair,
            bool pipelined = false, std::vector<relay_profile> relays = {},
            ps_op_rates ps_ops = ps_op_rates::none(), bool rounded = false);

  // The PS issues the batch's products in order, on shard s each one's
  // shard_plans[s] reading its ops[s], to the fleet's members: what each
  // tile is sent, as the caches now stand (and what they hold after).
  issued_bytes issue(const gemm_batch_sim& batch, const sim_fleet& fleet);
  // Runs the issued batch from `now`; returns when every shard's tiles of
  // every product are done.
  caf::expected<double> run(double now, const gemm_batch_sim& batch, const issued_bytes& issued,
                            sim_fleet& fleet, churn_feed& feed, batch_totals& totals);
  // The last run sent a tile beyond its issue (moved to a device or copied).
  bool resent() const { return resent_; }
  operand_cache& caches() { return caches_; }
  const operand_cache& caches() const { return caches_; }
  relay_tier& relays() { return relays_; }
  const relay_tier& relays() const { return relays_; }
  // An identical instance skipped (cleave_sim): its blocks enter the relays'
  // stores as its fetches would have put them, in plan order.
  void replay_relays(const gemm_batch_sim& batch, const issued_bytes& issued, const sim_fleet& fleet);

 private:
  enum class ev_kind : uint8_t { arrived, computed, result, link, clock, ps_done, stored, sent, taken };
  struct event {
    double at;
    uint64_t seq;
    ev_kind kind;
    uint32_t slot;   // shard * devices + device, the link, the shard (clock, ps_done, sent) or relay * shards + shard (stored)
    uint32_t arg;    // entry, tile (ps_done, sent) or version (link, clock)
    uint32_t epoch;  // the slot's epoch when scheduled: stale after a death
    bool operator>(const event& o) const { return at > o.at || (at == o.at && seq > o.seq); }
  };
  struct entry {  // a tile given to a device
    uint32_t tile;     // of its shard's batch (shard_calls)
    uint32_t next;     // the next entry in the same stage's queue
    issued_tile sent;  // what the PS sends with it
    uint32_t slot;
    uint32_t epoch;    // the slot's when enqueued: stale after a death
  };
  static constexpr uint32_t none = ~uint32_t{0};
  // A FIFO of entries threaded through entry::next.
  struct queue {
    uint32_t head = none, tail = none;
    bool empty() const { return head == none; }
  };
  // A device's pipeline on one shard: tiles not yet fetched, then the three
  // stages, each holding at most one tile, with the tiles that wait for a
  // stage in its queue.
  struct pipeline {
    queue pending, to_compute, to_upload;
    uint32_t downloading = none, computing = none, uploading = none;
    uint32_t in_hand = 0;  // fetched and not yet delivered
  };

  void size_for(size_t devices);
  void push(double at, ev_kind kind, uint32_t slot, uint32_t arg);
  void append(queue& q, uint32_t e);
  uint32_t take(queue& q);
  void enqueue(double now, uint32_t shard, int32_t device, uint32_t tile, issued_tile sent);
  issued_tile resend(uint32_t shard, int32_t device, uint32_t tile);
  // The relay side: the blocks entry e takes from its relay; whether they
  // are all there (then its download starts); the relay's next fetch and
  // upload; a fetched block reaching the relay.
  size_t relay_blocks(uint32_t e, relay_block out[2]);
  void from_relay(double now, uint32_t e);
  void kick_fetch(double now, uint32_t relay, uint32_t shard);
  void kick_upload(double now, uint32_t relay, uint32_t shard);
  void on_stored(double now, uint32_t lane);
  int32_t relay_of(uint32_t dev) const { return fleet_->devices()[dev].relay; }
  uint32_t relay_link(uint32_t relay, bool up) const { return 2 * shards_ + 2 * relay + (up ? 1 : 0); }
  // Start each stage of the slot's pipeline that is free and has work.
  void fetch(double now, uint32_t slot);
  void compute(double now, uint32_t slot);
  void upload(double now, uint32_t slot);
  void hold(double now, uint32_t dev, int64_t bytes);
  // The device no longer holds tile entry e: its memory is free for the next.
  void release(double now, uint32_t slot, uint32_t e);
  void wake_link(uint32_t link);
  void on_link(double now, uint32_t link);
  void apply(double now, uint32_t shard, const std::vector<schedule_action>& actions);
  void compute_here(double now, uint32_t shard, uint32_t tile);
  void on_result(double now, uint32_t slot, uint32_t e);
  // The PS has checked and folded entry e's result.
  void on_taken(double now, uint32_t slot, uint32_t e);
  // The PS's issue of tile `tile` is done: its task leaves.
  void on_sent(double now, uint32_t shard, uint32_t tile);
  // When the shard's thread can start work that comes at `now`; the idle
  // time before it goes to the check's operand part.
  double ps_begin(uint32_t shard, double now);
  void on_churn(double now, const timed_churn& ev);
  void push_clock(uint32_t shard);
  double rate(int32_t device, double declared) const;
  uint32_t shard_of(uint32_t slot) const { return slot / static_cast<uint32_t>(devices_); }
  uint32_t device_of(uint32_t slot) const { return slot % static_cast<uint32_t>(devices_); }
  // A shard's part of the batch: each product's plan and operands there,
  // and where each product's tiles start in the shard's numbering.
  struct shard_calls {
    std::vector<const plan*> plans;
    std::vector<const product_operands*> ops;
    std::vector<uint32_t> first;  // by product, and the shard's tile count last
  };
  static shard_calls calls_of(const gemm_batch_sim& batch, size_t shard);
  struct tile_at {
    uint32_t call, index;  // the product in the batch and the tile in its plan
  };
  tile_at locate(uint32_t shard, uint32_t tile) const;
  const plan& plan_of(uint32_t shard, uint32_t tile) const { return *calls_[shard].plans[locate(shard, tile).call]; }
  const assignment& placed(uint32_t shard, uint32_t tile) const {
    const tile_at at = locate(shard, tile);
    return calls_[shard].plans[at.call]->tiles[at.index];
  }
  const tile& tile_of(uint32_t slot, uint32_t e) const { return placed(shard_of(slot), entries_[e].tile).t; }
  const plan& plan_of_entry(uint32_t slot, uint32_t e) const { return plan_of(shard_of(slot), entries_[e].tile); }

  std::vector<shard_links> links_cfg_;
  relay_tier relays_;
  uint64_t runs_ = 0;  // names attention tiles' private blocks
  schedule_options schedule_;
  double ps_flops_;
  double detection_seconds_;
  ps_link_model egress_model_;
  bool pipelined_;  // devices pipeline their tiles; else each takes one whole at a time
  uint32_t shards_;
  size_t devices_ = 0;  // slots per shard

  // One run's state (reused: nothing is allocated per event).
  std::vector<event> events_;  // a binary heap (std::push_heap), cleared between runs
  uint64_t seq_ = 0;
  // Shard s: 2s egress, 2s+1 ingress (flows: devices, then relays); then
  // relay r's fan-out: 2 shards + 2r down, + 1 up (flows: slots).
  std::vector<ps_link> links_;
  std::vector<uint32_t> link_flows_;  // by link
  std::vector<uint32_t> link_version_;
  std::vector<uint32_t> clock_version_;     // by shard
  std::vector<double> ps_free_at_;          // by shard: the PS computes one tile at a time
  ps_op_rates ps_ops_;
  bool rounded_;                            // every block rounded into a snapshot (bf16)
  std::vector<plan_ps_work> work_;          // by shard: this run's plans' PS work, by batch tile
  std::vector<double> prepare_left_;        // by shard: of work_'s prepare
  const issued_bytes* issued_ = nullptr;
  std::vector<entry> entries_;
  std::vector<pipeline> pipes_;             // by slot
  std::vector<uint32_t> epoch_;             // by slot
  std::vector<uint64_t> held_bytes_;        // by device: working sets of tiles in hand
  std::vector<double> busy_since_;          // by device: when it last went from idle to busy
  std::vector<uint32_t> finished_, ready_;
  std::vector<shard_calls> calls_;  // by shard
  std::vector<tile_flight> flights_;
  std::vector<double> failed_at_;  // by shard: first failure in this GEMM
  // By shard and tile: queued for the PS. The engine computes such tiles
  // before it reads another message, so a device's late result never wins.
  std::vector<std::vector<bool>> at_ps_;
  operand_cache caches_;
  bool resent_ = false;
  sim_fleet* fleet_ = nullptr;
  batch_totals* totals_ = nullptr;
  churn_feed* feed_ = nullptr;
};

}  // namespace cleave
