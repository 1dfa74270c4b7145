#include "actors/simulator/sim_fleet.hpp"

#include <cmath>

#include <spdlog/spdlog.h>

namespace cleave {

sim_fleet::sim_fleet(const std::vector<device_profile>& devices, const std::vector<int32_t>& relay_of) {
  devices_.reserve(devices.size());
  for (size_t i = 0; i < devices.size(); ++i) {
    sim_device d;
    d.profile = devices[i];
    if (i < relay_of.size()) d.relay = relay_of[i];
    devices_.push_back(d);
  }
}

void sim_fleet::admit_joined() {
  if (joined_.empty()) return;
  for (const auto& p : joined_) {
    sim_device d;
    d.profile = p;
    devices_.push_back(d);
  }
  joined_.clear();
  ++epoch_;
}

bool sim_fleet::apply(const timed_churn& ev, double detection_seconds,
                      std::priority_queue<timed_churn, std::vector<timed_churn>, std::greater<>>& feed) {
  if (ev.action == churn_action::join) {
    joined_.push_back(ev.profile);
    return false;
  }
  if (ev.device < 0 || static_cast<size_t>(ev.device) >= devices_.size()) return false;
  auto& d = devices_[static_cast<size_t>(ev.device)];
  if (ev.seen) {
    if (!d.member) return false;
    d.member = false;
    ++failures_detected;
    ++epoch_;
    spdlog::debug("simulate: device {} declared failed at {:.3f} s", ev.device, ev.at);
    return true;
  }
  switch (ev.action) {
    case churn_action::slow: d.slowdown *= ev.factor; return false;
    case churn_action::die:
    case churn_action::hang:
    case churn_action::crash: {
      if (!d.alive) return false;
      d.alive = false;
      // Heartbeats stop with it: the detector reports it after the
      // detection time (detection.hpp).
      timed_churn seen = ev;
      seen.seen = true;
      seen.at = ev.at + detection_seconds;
      seen.order = next_order_++;
      feed.push(seen);
      return false;
    }
    case churn_action::join: break;
  }
  return false;
}

churn_feed::churn_feed(churn_schedule file) : file_(std::move(file)), from_file_(true) {}

churn_feed::churn_feed(double per_device_hour, uint64_t seed)
    : rate_(per_device_hour), random_(seed) {}

void churn_feed::begin_step(int64_t step, double now, const sim_fleet& fleet) {
  if (from_file_) {
    for (auto& ev : file_.due(step)) {
      timed_churn t;
      t.at = now + ev.after_seconds;
      t.action = ev.action;
      t.device = ev.device;
      t.factor = ev.factor;
      t.profile = ev.profile;
      t.order = order_++;
      queue_.push(t);
    }
    return;
  }
  if (rate_ > 0 && !drawn_) draw_next(now, fleet);
}

void churn_feed::draw_next(double now, const sim_fleet& fleet) {
  size_t live = 0;
  for (const auto& d : fleet.devices()) live += d.alive ? 1 : 0;
  const double per_second = rate_ * static_cast<double>(std::max<size_t>(live, 1)) / 3600.0;
  timed_churn t;
  t.at = now - std::log(1.0 - random_.uniform()) / per_second;
  t.action = churn_action::join;  // aimed when it happens (pop)
  t.device = -2;                  // marks the feed's own random event
  t.order = order_++;
  queue_.push(t);
  drawn_ = true;
}

timed_churn churn_feed::pop(const sim_fleet& fleet) {
  timed_churn ev = queue_.top();
  queue_.pop();
  if (ev.device != -2) return ev;
  // A random event: die, hang or join with equal odds, at a live device;
  // the last live device is never taken.
  std::vector<int32_t> live;
  for (size_t i = 0; i < fleet.size(); ++i)
    if (fleet.devices()[i].alive) live.push_back(static_cast<int32_t>(i));
  const uint64_t kind = random_.below(3);
  if (kind == 2 || live.size() <= 1) {
    ev.action = churn_action::join;
    ev.profile = fleet.devices()[random_.below(fleet.size())].profile;
    ev.device = -1;
  } else {
    ev.action = kind == 0 ? churn_action::die : churn_action::hang;
    ev.device = live[random_.below(live.size())];
  }
  draw_next(ev.at, fleet);
  return ev;
}

}  // namespace cleave
