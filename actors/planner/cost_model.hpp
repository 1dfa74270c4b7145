#pragma once
// The planner's cost model: what a sub-GEMM tile costs a device, which
// devices the planner may use at all, what PS shards planning at once may
// count on, and what limits a split plan. Pure; grid_search.hpp and
// placement.hpp plan with it, and emulated devices pace themselves by it.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "actors/planner/plan.hpp"
#include "actors/planner/ps_tile_work.hpp"
#include "schema/fleet_relays.hpp"
#include "schema/profile.hpp"

namespace cleave {

struct device_view {
  int32_t id = 0;
  device_profile profile;
  double ready_at = 0;  // seconds from now until the device is idle
  // Observed chance that a tile sent to the device is lost (it dies, hangs
  // or is refused) and must be redone elsewhere; 0 is perfectly reliable.
  double failure_probability = 0;
  // The relay it talks through (planner_config::relays), -1: the PS itself.
  int32_t relay = -1;
};

struct tile_cost {
  double seconds = 0;
  uint64_t bytes_down = 0, bytes_up = 0;
};

struct planner_config {
  double ps_flops = 5e10;     // the PS's own GEMM rate
  // One PS link: bytes/s it can send (shared by all the devices it feeds)
  // and receive. There are ps_links such links: one per PS shard host. The
  // live runtime's shards are threads of one process, so they share its one
  // link (ps_links = 1 whatever --ps-shards says).
  double ps_egress = 1.25e9;
  double ps_ingress = 1.25e9;
  int32_t ps_links = 1;
  double ps_memory_bandwidth = 2e10;
  // The PS's own seconds per tile of a split plan, whatever the tile's size:
  // one thread issues each task and takes, checks and folds each result, and
  // what it spends on a tile is not spent on anything else. A plan of T tiles
  // is predicted T x ps_tile_seconds longer than its devices and links alone
  // would take, so a finer grid must save more than its extra tiles cost
  // (0: tiles are free).
  double ps_tile_seconds = 0;
  // The same work op by op (ps_tile_work.hpp), for predict_step: a split
  // product's keying, copying, checking and folding at the host's rates,
  // by its tiles' blocks (none: left to ps_tile_seconds). The simulator
  // charges the same on the PS's timeline (sim_config::ps_ops).
  ps_op_rates ps_ops = ps_op_rates::none();
  // Seconds from a device's failure to its tile being reassigned (the
  // failure detector's delay): what a lost tile costs on top of its time.
  double detection_seconds = 1.0;
  double min_split_flops = 2.0 * 128 * 128 * 128;  // smaller GEMMs stay on the PS
  int max_tiles_per_device = 4;
  int64_t tile_align = 16;  // tile edges are multiples of this where possible
  // Grid assignments simulated per plan (see make_plan); 0 simulates every
  // grid whose bound can win (exact, slow for big fleets: for checking).
  int search_budget = 256;
  // Device processes receive a tile's operands and send its result while
  // they compute other tiles (their edge link runs on CAF's I/O thread);
  // emulated devices pace each tile whole, one after another. Plans are
  // made for the latter; with this set, a split plan's predicted time in a
  // step prediction is pipelined_seconds instead.
  bool pipelined_devices = false;
  // Each PS shard holds its messages to its own link's rates
  // (--pace-ps-link, actors/ps/engine/paced_link.hpp): a plan's predicted
  // time is then at least ps_link_seconds.
  bool paced_ps_link = false;
  // The relay tier (schema/fleet_relays.hpp): a relay receives a block from
  // the PS once and serves it to each of its devices that needs it, so the
  // PS's egress counts a block once per relay; each relay's own link and
  // fan-out bound the plan too.
  std::vector<relay_profile> relays;
};

// Time a device needs for a tile: 2 x latency (one way each: task down,
// result up) + bytes in / downlink + 2 m n k / flops + bytes out / uplink,
// with element_bytes per operand element and result_element_bytes per
// result element on the wire (gemm_problem's); a cached operand costs no
// transfer. Emulated devices pace themselves by it.
// A device with a non-positive or non-finite rate takes forever.
tile_cost predict_tile(const tile& t, uint64_t element_bytes, uint64_t result_element_bytes,
                       const device_profile& p, bool a_cached, bool b_cached);

// Bytes a device must hold to compute the tile (A + B + C blocks).
uint64_t tile_working_set(const tile& t);

// How many tiles a device holds at once when it pipelines them (one
// arriving, one computing, one leaving, each stage one tile at a time): as
// many working sets as fit in its memory beside its block cache
// (cache_bytes), at least one, at most max_pipeline_depth (a fourth tile
// would only wait). Shared by the simulator's devices and the planner's
// pipelined tile model.
constexpr uint32_t max_pipeline_depth = 3;
uint32_t pipeline_depth(uint64_t memory_bytes, uint64_t cache_bytes, uint64_t working_set);
// The same for a device of `memory_bytes` shared by `shards` PS shards, each
// counting on its share and that share's default cache: the depth the
// simulator's devices run at and the live PS sends to (send_window.hpp).
uint32_t device_pipeline_depth(uint64_t memory_bytes, uint32_t shards, uint64_t working_set);

// Whether the planner can use a device at all (positive, finite rates).
bool usable(const device_profile& p);

// What one of `sharers` concurrent planners (PS shards) may count on: every
// device's FLOP/s, links and memory divided among them, and an even share of
// the PS's ps_links links (min(ps_links, sharers) / sharers of one link's
// egress and ingress: a shard with a host of its own keeps its whole link,
// shards that are threads of one process split it). The PS's FLOP/s is not divided (each
// shard has its own thread). make_plan, mirror_plan and replace_plan apply it
// for problem.sharers > 1.
struct fleet_share {
  std::vector<device_view> devices;
  planner_config cfg;
};
fleet_share fair_share(const std::vector<device_view>& devices, const planner_config& cfg,
                       int32_t sharers);

// The one formula for a tile's time, shared by predict_tile and the grid
// search's inner loop so that both give bit-identical numbers. Rates enter
// as reciprocals (seconds per byte, per FLOP); latency is one way, and a
// tile pays it twice: the task goes down, the result comes up.
inline double tile_seconds(double latency, double inv_downlink, double inv_flops, double inv_uplink,
                           uint64_t down, double flops, uint64_t up) {
  return 2 * latency + static_cast<double>(down) * inv_downlink + flops * inv_flops +
         static_cast<double>(up) * inv_uplink;
}

// When a device's stages are next free: its downlink (operands in), its
// compute and its uplink (the result out). A device that takes its tiles
// whole, one after another, has all three at its last tile's finish.
struct device_stages {
  double down = 0, comp = 0, up = 0;
};
struct tile_pass {
  double finish = 0;  // the result is back at the PS
  device_stages after;
};

// When a tile of `down` bytes in, `flops` and `up` bytes out, whose operands
// the PS finishes sending at `sent`, would be back at the PS, and the
// device's stages after it. A pipelined device (a device process, its PS
// sending in plan order) fetches the operands once its downlink is free (cut
// through: not before the PS sent them), computes once they arrived and its
// last tile is computed, and sends the result once that and its uplink are
// free, paying a latency each way. An emulated device takes the tile whole
// when its last one finished (tile_seconds), and the PS's link counts only
// in the plan's total. Rates as reciprocals; the grid search's inner loop
// and the attention planner share it.
inline tile_pass pass_tile(double latency, double inv_downlink, double inv_flops, double inv_uplink,
                           const device_stages& s, uint64_t down, double flops, uint64_t up,
                           double sent, bool pipelined) {
  tile_pass out{0, s};
  if (!pipelined) {
    out.finish = s.up + tile_seconds(latency, inv_downlink, inv_flops, inv_uplink, down, flops, up);
    out.after.down = out.after.comp = out.after.up = out.finish;
    return out;
  }
  out.after.down = std::max(s.down + static_cast<double>(down) * inv_downlink, sent);
  out.after.comp = std::max(out.after.down + latency, s.comp) + flops * inv_flops;
  out.after.up = std::max(out.after.comp, s.up) + static_cast<double>(up) * inv_uplink;
  out.finish = out.after.up + latency;
  return out;
}

// When the PS has sent each tile's operands, sending a split plan's tiles
// in plan order at ps_egress.
std::vector<double> plan_sent_at(const plan& p, const planner_config& cfg);

// When device `d` would return each of `tiles` (indices into p, ascending)
// run from its ready time as the grid search runs them (pass_tile, `sent`
// from plan_sent_at), appended to `each` when given; returns the last.
double device_finish(const plan& p, const std::vector<size_t>& tiles, const device_view& d,
                     const std::vector<double>& sent, bool pipelined,
                     std::vector<double>* each = nullptr);

// A split plan's predicted time: its last device's finish, or the PS's link
// when that takes longer (bytes_down / ps_egress + tail, bytes_up /
// ps_ingress), plus the PS's own work on its tiles (tiles x
// ps_tile_seconds). With pipelined_devices, `tail` is the least time from
// the PS's last byte out to the plan's end: the last tile sent still crosses
// its device (a latency down, its compute, its result up, a latency back;
// egress_tail), so a PS link that binds never ends the plan by itself.
double split_seconds(double max_finish, uint64_t bytes_down, uint64_t bytes_up, size_t tiles,
                     double tail, const planner_config& cfg);

// The least, over a split plan's tiles, of what a tile costs its device
// after its operands are out: 2 x latency + compute + result up (0 for a
// plan without device tiles).
double egress_tail(const plan& p, const std::vector<device_view>& devices);

// Where a split plan's time goes, on the devices it was planned for (one
// planner's view: after fair_share and expected_profile): the PS link's
// seconds for all the plan's bytes, and the parts of the tiles of the device
// that finishes last (the latest predicted_finish, ties to the later tile).
// All zero for a local plan.
struct plan_parts {
  double ps_egress = 0, ps_ingress = 0;  // bytes_down / ps_egress, bytes_up / ps_ingress
  double ps_tiles = 0;                   // tiles x ps_tile_seconds
  int32_t last_device = -1;
  double compute = 0, down = 0, up = 0, latency = 0;  // the last device's tiles
};
plan_parts parts_of(const plan& p, const std::vector<device_view>& devices,
                    const planner_config& cfg);

// A split plan's predicted time when every device pipelines its tiles, in
// plan order: the downlink carries one operand set after another, a tile
// computes once its operands arrived (one latency after they are sent) and
// the previous tile is computed, and the uplink sends one result after
// another, each arriving one latency later. Max of the last arrival and the
// PS link's times, as predicted_seconds. Never above predicted_seconds.
double pipelined_seconds(const plan& p, const std::vector<device_view>& devices,
                         const planner_config& cfg);

// A split plan's time through a paced PS link (--pace-ps-link,
// actors/ps/engine/paced_link.hpp): the tiles' operands cross the PS's
// egress one task after another in plan order while each device downloads
// them (cut through: its download ends at the later of the two links'
// ends), each device takes its tiles whole and in turn (predict_tile), and
// the results cross the PS's ingress one after another as the devices
// upload them. The grid search's max() of the link's and the devices'
// times assumes every transfer overlaps every other; with few tiles per
// product they cannot. Never below the PS link's times.
double ps_link_seconds(const plan& p, const std::vector<device_view>& devices,
                                 const planner_config& cfg);

// What limits a split plan's predicted time, on the devices it was planned
// for: the PS's egress or ingress when bytes_down / ps_egress or bytes_up /
// ps_ingress is its predicted time, the PS's work per tile when that is more
// than the rest; otherwise the largest part (compute,
// downlink, uplink or latency) of the tiles of the device that finishes last.
plan_bound split_bound(const plan& p, const std::vector<device_view>& devices,
                       const planner_config& cfg);

}  // namespace cleave
