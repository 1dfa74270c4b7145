#pragma once
// A batch of GEMMs in flight as the simulator keeps it: each tile's holders
// and whether it is done, the devices the engine may use, and the runtime's
// tile_schedule deciding what moves. It keeps exactly the state
// distributed_gemm hands the schedule (policy_view), so the simulator and
// the live engine, told the same events, decide the same (a test replays
// the engine's schedule_log through this class).

#include <cstdint>
#include <vector>

#include "actors/ps/engine/tile_policy.hpp"
#include "actors/ps/engine/tile_schedule.hpp"

namespace cleave {

class tile_flight {
 public:
  // `tiles` as issued (holders: the plan's devices that are members), the
  // members' memory, and the batch's predicted time.
  tile_flight(schedule_options opts, double now, double predicted_seconds, batch_view tiles,
              std::vector<policy_device> members, schedule_log* log = nullptr);

  // A result for (call, tile) from `device`: false when the tile was done
  // already (a duplicate or a speculative copy that lost), which changes nothing.
  bool result(double now, size_t call, size_t tile, int32_t device);
  // `device` left the members (dead, suspected or quarantined).
  const std::vector<schedule_action>& lost(double now, int32_t device);
  // What the clock decides at `now`: nothing before deadline().
  const std::vector<schedule_action>& clock(double now);
  // A tile the PS computed (it had no holder): done.
  void computed_here(size_t call, size_t tile);

  double deadline() const { return schedule_.deadline(); }
  size_t remaining() const { return remaining_; }
  const batch_view& tiles() const { return view_; }

 private:
  tile_policy policy() const { return tile_policy(members_); }

  batch_view view_;
  std::vector<policy_device> members_;
  tile_schedule schedule_;
  size_t remaining_ = 0;
  std::vector<schedule_action> actions_;  // the last answer, reused
};

// The live engine's schedule_log replayed through tile_flight: each batch
// as the engine issued it to the members it had, then the same results,
// losses and clock readings at the same times. The answer is the
// simulator's own log, record for record; where it differs from `live`,
// the simulator would have decided otherwise.
schedule_log replay_schedule(const schedule_log& live, schedule_options opts);

}  // namespace cleave
