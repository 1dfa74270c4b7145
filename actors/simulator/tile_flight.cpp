#include "actors/simulator/tile_flight.hpp"

#include <algorithm>
#include <optional>

namespace cleave {

tile_flight::tile_flight(schedule_options opts, double now, double predicted_seconds,
                         batch_view tiles, std::vector<policy_device> members, schedule_log* log)
    : view_(std::move(tiles)), members_(std::move(members)),
      schedule_(opts, now, predicted_seconds, view_, tile_policy(members_), log) {
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

schedule_log replay_schedule(const schedule_log& live, schedule_options opts) {
  schedule_log out;
  std::optional<tile_flight> flight;
  // The engine computes a tile no device holds before it reads another
  // message (compute_unheld): done before the next record.
  auto computed_here = [&](const std::vector<schedule_action>& actions) {
    for (const auto& a : actions)
      if (a.kind == schedule_action_kind::here || a.kind == schedule_action_kind::timed_out)
        flight->computed_here(a.call, a.tile);
  };
  for (const auto& rec : live) {
    switch (rec.input) {
      case schedule_input::batch: {
        batch_view view(rec.call);
        for (const auto& a : rec.actions) {
          auto& call = view[a.call];
          if (call.size() <= a.tile) call.resize(a.tile + 1);
          if (a.kind == schedule_action_kind::send) call[a.tile].holders.push_back(a.device);
        }
        flight.emplace(opts, 0.0, rec.predicted_seconds, std::move(view), rec.members, &out);
        computed_here(rec.actions);
        break;
      }
      case schedule_input::result:
        if (flight) flight->result(rec.at, rec.call, rec.tile, rec.device);
        break;
      case schedule_input::lost:
        if (flight) computed_here(flight->lost(rec.at, rec.device));
        break;
      case schedule_input::clock:
        if (flight) computed_here(flight->clock(rec.at));
        break;
    }
  }
  return out;
}

}  // namespace cleave
