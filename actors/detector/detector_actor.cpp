#include "actors/detector/detector_actor.hpp"

#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>

#include "actors/detector/silence_verdict.hpp"

namespace cleave {

namespace {

double now_seconds(caf::local_actor* self) {
  return std::chrono::duration<double>(self->clock().now().time_since_epoch()).count();
}

void publish(detector_handle::stateful_pointer<detector_state> self, fleet_event ev) {
  spdlog::debug("detector: device {} {}", ev.device, to_string(ev.kind));
  // A typed actor's send() reaches only typed actors, and the subscribers
  // (planners, consoles, engines) are not: sent unchecked, as itself.
  for (auto& sub : self->state.subscribers) caf::unsafe_send_as(self, sub, event_atom::value, ev);
}

// A heartbeat from device `id`, which arrived at `at` (seconds, the actor
// clock's).
void on_heartbeat(detector_handle::stateful_pointer<detector_state> self, int32_t id, double at) {
  auto& st = self->state;
  auto it = st.devices.find(id);
  if (it == st.devices.end()) {
    spdlog::warn("detector: heartbeat from unknown device {} ignored", id);
    return;
  }
  auto& dev = it->second;
  if (dev.quarantined) return;
  if (dev.dead) {
    // Declared dead on silence alone, yet alive (a stall longer than
    // the thresholds allow): it must join again, as a new member.
    if (!dev.told_to_rejoin) {
      dev.told_to_rejoin = true;
      spdlog::info("detector: device {} was declared dead but heartbeats; asking it to join again", id);
      caf::unsafe_send_as(self, dev.handle, join_atom::value);
    }
    return;
  }
  dev.level.heartbeat(at);
  if (dev.suspected) {
    dev.suspected = false;
    publish(self, {fleet_event_kind::rejoin, id, 0});
  }
}

}  // namespace

detector_handle::behavior_type detector_actor(detector_handle::stateful_pointer<detector_state> self,
                                             detector_options opts) {
  self->state.opts = opts;
  self->set_down_handler([=](const caf::down_msg& msg) {
    auto& subs = self->state.subscribers;
    subs.erase(std::remove_if(subs.begin(), subs.end(),
                              [&](const caf::actor& s) { return s.address() == msg.source; }),
               subs.end());
    // A device whose actor is gone has nothing left to be judged on or
    // asked: it is published dead (if it was not yet) and forgotten but for
    // its verdict, so a fleet whose members come and go for days holds
    // only those present and the latest departed.
    auto& st = self->state;
    for (auto it = st.devices.begin(); it != st.devices.end();) {
      auto& [id, dev] = *it;
      if (dev.handle.address() != msg.source) {
        ++it;
        continue;
      }
      if (!dev.dead && !dev.quarantined) publish(self, {fleet_event_kind::dead, id, 0});
      st.departed.push_back({id, 0.0, false, !dev.quarantined, dev.quarantined, dev.peak_rss_bytes});
      if (st.departed.size() > st.opts.departed_kept) st.departed.pop_front();
      it = st.devices.erase(it);
    }
  });
  self->send(self, tick_atom::value);
  return {
    [=](subscribe_atom, caf::actor sub) {
      self->monitor(sub);
      self->state.subscribers.push_back(std::move(sub));
    },
    [=](watch_atom, int32_t id, caf::actor device) {
      auto& st = self->state;
      watched_device dev{device, phi_accrual{st.opts.heartbeat_seconds, st.opts.min_stddev}};
      dev.level.heartbeat(now_seconds(self));
      self->monitor(device);
      st.devices.insert_or_assign(id, std::move(dev));
      publish(self, {fleet_event_kind::join, id, 0});
    },
    [=](quarantine_atom, int32_t id) {
      auto it = self->state.devices.find(id);
      if (it == self->state.devices.end()) return;
      it->second.quarantined = true;
      it->second.suspected = false;
    },
    [=](caf::get_atom) {
      const double now = now_seconds(self);
      const auto& st = self->state;
      std::vector<device_health> out(st.departed.begin(), st.departed.end());
      for (const auto& [id, dev] : st.devices)
        out.push_back({id, dev.dead || dev.quarantined ? 0.0 : dev.level.phi(now), dev.suspected,
                       dev.dead, dev.quarantined, dev.peak_rss_bytes});
      return out;
    },
    [=](heartbeat_atom, int32_t id) { on_heartbeat(self, id, now_seconds(self)); },
    [=](heartbeat_atom, int32_t id, int64_t received_ns, uint64_t peak_rss_bytes) {
      if (auto it = self->state.devices.find(id); it != self->state.devices.end())
        it->second.peak_rss_bytes = std::max(it->second.peak_rss_bytes, peak_rss_bytes);
      const double now = now_seconds(self);
      const auto& sender = self->current_sender();
      if (!sender || sender->node() != self->node()) return on_heartbeat(self, id, now);
      // The edge's stamp is the steady clock's, as the actor clock is here.
      const double waited = std::max(0.0, now - static_cast<double>(received_ns) * 1e-9);
      self->state.heartbeat_delay.record(waited);
      on_heartbeat(self, id, now - waited);
    },
    [=](caf::get_atom, heartbeat_atom) { return self->state.heartbeat_delay; },
    [=](tick_atom) {
      auto& st = self->state;
      const double now = now_seconds(self);
      const double gap = st.last_tick < 0 ? 0 : now - st.last_tick;
      st.last_tick = now;
      if (gap > st.opts.check_seconds + st.opts.local_pause_seconds) {
        st.judge_from = now + st.opts.heartbeat_seconds;
        if (++st.pauses == 1 || st.pauses % 100 == 0)
          spdlog::info("detector: this process was paused for {:.0f} ms ({} time(s) so far); no verdicts "
                       "for one heartbeat interval", (gap - st.opts.check_seconds) * 1e3, st.pauses);
      }
      for (auto& [id, dev] : st.devices) {
        if (now < st.judge_from) break;
        if (dev.dead || dev.quarantined) continue;
        const auto verdict = judge_silence(dev.level, now, st.opts);
        if (verdict == silence_verdict::dead) {
          dev.dead = true;
          publish(self, {fleet_event_kind::dead, id, dev.level.phi(now)});
        } else if (verdict == silence_verdict::suspect && !dev.suspected) {
          dev.suspected = true;
          publish(self, {fleet_event_kind::suspect, id, dev.level.phi(now)});
        }
      }
      self->delayed_send(self,
                         std::chrono::duration_cast<caf::timespan>(
                           std::chrono::duration<double>{st.opts.check_seconds}),
                         tick_atom::value);
    },
  };
}

}  // namespace cleave
