#include "actors/churn/churn_actor.hpp"

#include <chrono>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "schema/messages.hpp"

namespace cleave {

namespace {

using churn_ptr = caf::stateful_actor<churn_state>*;
using apply_atom = caf::atom_constant<caf::atom("apply")>;

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
    .count();
}

caf::actor device_at(churn_ptr self, int32_t index) {
  return caf::actor_cast<caf::actor>(
    self->system().registry().get(caf::atom_from_string(device_name(index))));
}

void apply(churn_ptr self, const churn_event& ev) {
  auto& st = self->state;
  ++st.applied[to_string(ev.action)];
  spdlog::info("churn: step {}: device {} {}", ev.step, ev.device, to_string(ev.action));
  if (ev.action == churn_action::join) {
    auto opts = st.device_template;
    opts.profile = ev.profile;
    opts.fleet_index = ev.device;
    // Linked: the joined devices end with the churn actor, which traps
    // their exits (a joined device may itself be killed later).
    auto dev = self->spawn<caf::linked>(device_actor, opts, st.planner);
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
    self->send(dev, slow_atom::value, ev.factor);
    return;
  }
  if (ev.action == churn_action::crash) {  // its moment is its next tile: not timed here
    self->send(dev, crash_atom::value);
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
          self->send(dev, hang_atom::value);
      },
      [=](caf::error& err) {
        spdlog::warn("churn: device did not answer ({}); {} anyway",
                     self->system().render(err), die ? "killing it" : "hanging it");
        if (die)
          self->send_exit(dev, caf::exit_reason::kill);
        else
          self->send(dev, hang_atom::value);
      });
}

}  // namespace

std::string device_name(int32_t index) { return "device" + std::to_string(index); }

caf::behavior churn_actor(churn_ptr self, churn_schedule schedule, device_options device_template,
                          caf::actor planner) {
  auto& st = self->state;
  st.schedule = std::move(schedule);
  st.device_template = std::move(device_template);
  st.planner = planner;
  self->send(planner, subscribe_atom::value, caf::actor{self});
  self->set_exit_handler([=](caf::exit_msg& msg) {
    if (self->state.joined.erase(msg.source) > 0) return;  // a joined device ended
    self->quit(msg.reason);
  });
  return {
    [=](churn_atom, int64_t step) {
      for (auto& ev : self->state.schedule.due(step)) {
        if (ev.after_seconds <= 0) {
          apply(self, ev);
          continue;
        }
        const uint64_t seq = self->state.next_seq++;
        self->state.pending.emplace(seq, ev);
        self->delayed_send(self,
                           std::chrono::duration_cast<caf::timespan>(
                             std::chrono::duration<double>(ev.after_seconds)),
                           apply_atom::value, seq);
      }
    },
    [=](apply_atom, uint64_t seq) {
      auto it = self->state.pending.find(seq);
      if (it == self->state.pending.end()) return;
      apply(self, it->second);
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
      j["applied"] = s.applied;
      j["detection_seconds_suspect"] = s.to_suspect;
      j["detection_seconds_dead"] = s.to_dead;
      return j.dump();
    },
  };
}

}  // namespace cleave
