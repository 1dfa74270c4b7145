#include "actors/churn/churn_actor.hpp"

#include <chrono>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "actors/device/device_protocol.hpp"

namespace cleave {

namespace {

using churn_ptr = churn_handle::stateful_pointer<churn_state>;

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
    .count();
}

caf::actor device_at(churn_ptr self, int32_t index) {
  return caf::actor_cast<caf::actor>(
    self->system().registry().get(caf::atom_from_string(device_name(index))));
}

void apply_event(churn_ptr self, const churn_event& ev) {
  auto& st = self->state;
  ++st.applied[to_string(ev.action)];
  spdlog::info("churn: step {}: device {} {}", ev.step, ev.device, to_string(ev.action));
  if (ev.action == churn_action::join) {
    // Linked: the joined devices end with the churn actor, which traps
    // their exits (a joined device may itself be killed later).
    auto dev = st.spawn_device(self, ev.profile, ev.device);
    st.joined.insert(dev.address());
    self->system().registry().put(caf::atom_from_string(device_name(ev.device)), dev);
    return;
  }
  auto dev = device_at(self, ev.device);
  if (!dev) {
    spdlog::warn("churn: device {} is not running; event skipped", ev.device);
    return;
  }
  if (ev.action == churn_action::slow) {
    caf::unsafe_send_as(self, dev, slow_atom::value, ev.factor);
    return;
  }
  if (ev.action == churn_action::crash) {  // its moment is its next tile: not timed here
    caf::unsafe_send_as(self, dev, crash_atom::value);
    return;
  }
  // Ask the device its fleet id first, so the detector's events about it
  // can be timed from the moment it fails.
  const bool die = ev.action == churn_action::die;
  self->request(dev, std::chrono::seconds(5), caf::get_atom::value)
    .then(
      [=](int32_t id) {
        self->state.failed_at[id] = seconds_now();
        if (die)
          self->send_exit(dev, caf::exit_reason::kill);
        else
          caf::unsafe_send_as(self, dev, hang_atom::value);
      },
      [=](caf::error& err) {
        spdlog::warn("churn: device did not answer ({}); {} anyway",
                     self->system().render(err), die ? "killing it" : "hanging it");
        if (die)
          self->send_exit(dev, caf::exit_reason::kill);
        else
          caf::unsafe_send_as(self, dev, hang_atom::value);
      });
}

}  // namespace

std::string device_name(int32_t index) { return "device" + std::to_string(index); }

churn_handle::behavior_type churn_actor(churn_ptr self, churn_schedule schedule,
                                       device_spawner spawn_device, caf::actor planner) {
  auto& st = self->state;
  st.schedule = std::move(schedule);
  st.spawn_device = std::move(spawn_device);
  st.planner = planner;
  // Sent unchecked, as itself, here and to the devices: a typed actor's
  // send() reaches only typed actors, and the planner and the devices are
  // not (their protocol headers say why).
  caf::unsafe_send_as(self, planner, subscribe_atom::value, caf::actor_cast<caf::actor>(self));
  self->set_exit_handler([=](caf::exit_msg& msg) {
    if (self->state.joined.erase(msg.source) > 0) return;  // a joined device ended
    self->quit(msg.reason);
  });
  return {
    [=](churn_atom, int64_t step) {
      for (auto& ev : self->state.schedule.due(step)) {
        ++self->state.scheduled[to_string(ev.action)];
        if (ev.after_seconds <= 0) {
          apply_event(self, ev);
          continue;
        }
        const uint64_t seq = self->state.next_seq++;
        self->state.pending.emplace(seq, ev);
        self->delayed_send(self,
                           std::chrono::duration_cast<caf::timespan>(
                             std::chrono::duration<double>(ev.after_seconds)),
                           churn_apply_atom::value, seq);
      }
    },
    [=](churn_apply_atom, uint64_t seq) {
      auto it = self->state.pending.find(seq);
      if (it == self->state.pending.end()) return;
      apply_event(self, it->second);
      self->state.pending.erase(it);
    },
    [=](event_atom, const fleet_event& ev) {
      auto& s = self->state;
      auto it = s.failed_at.find(ev.device);
      if (it == s.failed_at.end()) return;
      const double latency = seconds_now() - it->second;
      if (ev.kind == fleet_event_kind::suspect && s.suspect_seen.insert(ev.device).second)
        s.to_suspect.push_back(latency);
      if (ev.kind == fleet_event_kind::dead) {
        s.to_dead.push_back(latency);
        s.failed_at.erase(it);
      }
    },
    [=](caf::get_atom) {
      const auto& s = self->state;
      nlohmann::json j;
      j["scheduled"] = s.scheduled;
      j["applied"] = s.applied;
      j["detection_seconds_suspect"] = s.to_suspect;
      j["detection_seconds_dead"] = s.to_dead;
      return j.dump();
    },
  };
}

}  // namespace cleave
