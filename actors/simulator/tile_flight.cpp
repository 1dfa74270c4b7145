#include "actors/simulator/tile_flight.hpp"

#include <algorithm>

namespace cleave {

tile_flight::tile_flight(schedule_options opts, double now, double predicted_seconds,
                         batch_view tiles, std::vector<policy_device> members, schedule_log* log)
    : view_(std::move(tiles)), members_(std::move(members)),
      schedule_(opts, now, predicted_seconds, view_, log) {
  for (const auto& call : view_)
    for (const auto& t : call) remaining_ += t.done ? 0 : 1;
}

bool tile_flight::result(double now, size_t call, size_t tile, int32_t device) {
  auto& t = view_[call][tile];
  if (t.done) return false;
  // As distributed_gemm::take and finish: the tile is done, a copy still
  // running elsewhere is no longer needed.
  t.done = true;
  t.holders.clear();
  --remaining_;
  schedule_.result(now, call, tile, device);
  return true;
}

const std::vector<schedule_action>& tile_flight::lost(double now, int32_t device) {
  members_.erase(std::remove_if(members_.begin(), members_.end(),
                                [&](const policy_device& d) { return d.id == device; }),
                 members_.end());
  actions_ = schedule_.on_device_lost(now, device, view_, policy());
  return actions_;
}

const std::vector<schedule_action>& tile_flight::clock(double now) {
  actions_.clear();
  if (remaining_ > 0 && now >= schedule_.deadline())
    actions_ = schedule_.on_clock(now, view_, policy());
  return actions_;
}

void tile_flight::computed_here(size_t call, size_t tile) {
  auto& t = view_[call][tile];
  if (t.done) return;
  t.done = true;
  t.holders.clear();
  --remaining_;
}

}  // namespace cleave
