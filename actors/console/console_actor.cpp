#include "actors/console/console_actor.hpp"

#include <chrono>

#include <spdlog/spdlog.h>

#include "actors/console/console_view.hpp"

namespace cleave {

namespace {

constexpr auto ask_timeout = std::chrono::seconds(2);
// How often the console looks for a restarted planner even when nobody
// asks: events between a restart and the next query would be lost otherwise.
constexpr auto resubscribe_every = std::chrono::seconds(1);

using resubscribe_atom = caf::atom_constant<caf::atom("cresub")>;

using console_ptr = caf::stateful_actor<console_state>*;

planner_view unanswered(std::string why) {
  planner_view out;
  out.error = std::move(why);
  return out;
}

void log_event(console_ptr self, std::string kind, int32_t device, double phi) {
  auto& st = self->state;
  const std::chrono::duration<double> since = std::chrono::steady_clock::now() - st.started;
  st.events.push({since.count(), std::move(kind), device, phi});
}

// Subscribes to `planner` unless it is the one already subscribed to. The
// old one, if alive, keeps sending: its events are still the fleet's.
void subscribe(console_ptr self, const caf::actor& planner) {
  if (!planner || planner == self->state.subscribed_to) return;
  self->state.subscribed_to = planner;
  self->send(planner, subscribe_atom::value, caf::actor{self});
}

void answer(console_ptr self, caf::typed_response_promise<std::string> rp, const planner_view& pv) {
  auto detector = self->state.detector ? self->state.detector() : caf::actor{};
  if (!detector) {
    rp.deliver(render_console(self->state.training, pv, {}, self->state.events).dump(2));
    return;
  }
  self->request(detector, ask_timeout, caf::get_atom::value)
    .then(
      [=](std::vector<device_health>& health) mutable {
        rp.deliver(render_console(self->state.training, pv, health, self->state.events).dump(2));
      },
      [=](caf::error&) mutable {
        rp.deliver(render_console(self->state.training, pv, {}, self->state.events).dump(2));
      });
}

}  // namespace

caf::behavior console_actor(console_ptr self, std::function<caf::actor()> planner,
                            std::function<caf::actor()> detector) {
  self->state.planner = std::move(planner);
  self->state.detector = std::move(detector);
  subscribe(self, self->state.planner());
  self->delayed_send(self, resubscribe_every, resubscribe_atom::value);
  return {
    [=](resubscribe_atom) {
      subscribe(self, self->state.planner());
      self->delayed_send(self, resubscribe_every, resubscribe_atom::value);
    },
    [=](event_atom, const fleet_event& ev) {
      log_event(self, to_string(ev.kind), ev.device, ev.phi);
    },
    [=](console_status_atom, const std::string& json) {
      auto doc = nlohmann::json::parse(json, nullptr, false);
      if (doc.is_discarded()) {
        spdlog::warn("console: ignoring a status that is not JSON");
        return;
      }
      self->state.training = std::move(doc);
    },
    [=](caf::get_atom) {
      auto rp = self->make_response_promise<std::string>();
      auto planner = self->state.planner();
      subscribe(self, planner);
      if (!planner) {
        answer(self, rp, unanswered("no planner"));
        return rp;
      }
      self->request(planner, ask_timeout, caf::get_atom::value)
        .then(
          [=](uint64_t version, bool quorum, std::vector<fleet_member>& members,
              std::vector<int32_t>& suspected) {
            planner_view pv;
            pv.version = version;
            pv.quorum = quorum;
            pv.members = std::move(members);
            pv.suspected = std::move(suspected);
            answer(self, rp, pv);
          },
          [=](caf::error& err) { answer(self, rp, unanswered(self->system().render(err))); });
      return rp;
    },
  };
}

}  // namespace cleave
