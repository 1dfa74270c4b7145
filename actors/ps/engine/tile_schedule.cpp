#include "actors/ps/engine/tile_schedule.hpp"

#include <algorithm>
#include <limits>

namespace cleave {

const char* to_string(schedule_action_kind k) {
  switch (k) {
    case schedule_action_kind::drop: return "drop";
    case schedule_action_kind::send: return "send";
    case schedule_action_kind::here: return "here";
    case schedule_action_kind::timed_out: return "timed_out";
    case schedule_action_kind::copy: return "copy";
  }
  return "?";
}

tile_schedule::tile_schedule(schedule_options opts, double now, double predicted_seconds,
                             const batch_view& issued, const tile_policy& policy,
                             schedule_log* log)
    : opts_(opts), start_(now),
      speculate_at_(opts.speculate_factor > 0
                      ? now + std::max(opts.speculate_factor * predicted_seconds,
                                       opts.speculate_min_seconds)
                      : std::numeric_limits<double>::infinity()),
      late_after_(now + std::max(0.0, opts.timeout_factor * predicted_seconds)),
      last_progress_(now), log_(log) {
  if (log_ == nullptr) return;
  std::vector<schedule_action> sent;
  for (size_t c = 0; c < issued.size(); ++c)
    for (size_t t = 0; t < issued[c].size(); ++t) {
      for (int32_t d : issued[c][t].holders) sent.push_back({schedule_action_kind::send, c, t, d});
      if (issued[c][t].holders.empty()) sent.push_back({schedule_action_kind::here, c, t, -1});
    }
  record(schedule_input::batch, now, issued.size(), 0, -1, sent);
  log_->back().predicted_seconds = predicted_seconds;
  log_->back().members = policy.devices();
}

double tile_schedule::deadline() const {
  return std::min(std::max(late_after_, last_progress_) + opts_.tile_timeout_seconds,
                  speculated_ ? std::numeric_limits<double>::infinity() : speculate_at_);
}

void tile_schedule::result(double now, size_t call, size_t tile, int32_t device) {
  last_progress_ = now;
  record(schedule_input::result, now, call, tile, device, {});
}

std::vector<schedule_action> tile_schedule::on_clock(double now, batch_view& view,
                                                     const tile_policy& policy) {
  std::vector<schedule_action> out;
  if (now >= std::max(late_after_, last_progress_) + opts_.tile_timeout_seconds) {
    for (size_t c = 0; c < view.size(); ++c)
      for (size_t t = 0; t < view[c].size(); ++t) {
        auto& pt = view[c][t];
        if (pt.done || pt.holders.empty()) continue;
        out.push_back({schedule_action_kind::timed_out, c, t, pt.holders.front()});
        pt.holders.clear();
      }
    last_progress_ = now;
  } else if (!speculated_ && now >= speculate_at_) {
    speculated_ = true;
    for (size_t c = 0; c < view.size(); ++c)
      for (const auto& [t, dev] : policy.speculate(view[c])) {
        view[c][t].speculated = true;
        view[c][t].holders.push_back(dev);
        out.push_back({schedule_action_kind::copy, c, t, dev});
      }
  }
  if (!out.empty()) record(schedule_input::clock, now, 0, 0, -1, out);
  return out;
}

std::vector<schedule_action> tile_schedule::on_device_lost(double now, int32_t device,
                                                           batch_view& view,
                                                           const tile_policy& policy) {
  std::vector<schedule_action> out;
  for (size_t c = 0; c < view.size(); ++c)
    for (size_t t = 0; t < view[c].size(); ++t) {
      auto& pt = view[c][t];
      if (pt.done) continue;
      auto h = std::find(pt.holders.begin(), pt.holders.end(), device);
      if (h == pt.holders.end()) continue;
      pt.holders.erase(h);
      out.push_back({schedule_action_kind::drop, c, t, device});
      if (pt.holders.empty()) out.push_back(reassign(view[c], c, t, policy));
    }
  record(schedule_input::lost, now, 0, 0, device, out);
  return out;
}

schedule_action tile_schedule::reassign(std::vector<policy_tile>& tiles, size_t call, size_t t,
                                        const tile_policy& policy) {
  const int32_t next = policy.take_over(tiles, t);
  if (next < 0) return {schedule_action_kind::here, call, t, -1};
  tiles[t].holders.push_back(next);
  return {schedule_action_kind::send, call, t, next};
}

void tile_schedule::record(schedule_input in, double now, size_t call, size_t tile, int32_t device,
                           const std::vector<schedule_action>& actions) {
  if (log_ != nullptr) log_->push_back({in, now - start_, call, tile, device, actions});
}

}  // namespace cleave
