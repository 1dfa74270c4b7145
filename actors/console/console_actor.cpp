#include "actors/console/console_actor.hpp"

#include <chrono>

#include <spdlog/spdlog.h>

#include "actors/console/console_view.hpp"
#include "schema/errors.hpp"

namespace cleave {

namespace {

constexpr auto ask_timeout = std::chrono::seconds(2);
// How often the console looks for a restarted planner even when nobody
// asks: events between a restart and the next query would be lost otherwise.
constexpr auto resubscribe_every = std::chrono::seconds(1);

using console_ptr = console_handle::stateful_pointer<console_state>;
using control_reply = caf::result<int32_t, std::string>;

planner_view unanswered(std::string why) {
  planner_view out;
  out.error = std::move(why);
  return out;
}

void log_event(console_ptr self, std::string kind, int32_t device, double phi,
               std::string detail = {}) {
  auto& st = self->state;
  const std::chrono::duration<double> since = std::chrono::steady_clock::now() - st.started;
  st.events.push({since.count(), std::move(kind), device, phi, std::move(detail)});
}

// Subscribes to `planner` unless it is the one already subscribed to. The
// old one, if alive, keeps sending: its events are still the fleet's.
void subscribe(console_ptr self, const caf::actor& planner) {
  if (!planner || planner == self->state.subscribed_to) return;
  self->state.subscribed_to = planner;
  // Sent unchecked, as itself: a typed actor's send() reaches only typed
  // actors, and the planner is not (planner_protocol.hpp says why).
  caf::unsafe_send_as(self, planner, subscribe_atom::value, caf::actor_cast<caf::actor>(self));
}

std::string render(console_ptr self, const planner_view& pv, const std::vector<device_health>& health,
                   const delay_histogram* heartbeat_delay = nullptr) {
  const auto& st = self->state;
  const control_view controls{st.controls_enabled, st.loop_view, st.checkpoint_pending};
  auto doc = render_console(st.training, pv, health, st.events, controls);
  if (heartbeat_delay && heartbeat_delay->total > 0) doc["heartbeat_delay"] = render_heartbeat_delay(*heartbeat_delay);
  return doc.dump(2);
}

void answer(console_ptr self, caf::typed_response_promise<std::string> rp, const planner_view& pv) {
  // Found in the registry or named by a remote planner, so untyped until here;
  // from here on the compiler checks the question and its answer.
  auto detector = caf::actor_cast<detector_handle>(self->state.detector ? self->state.detector()
                                                                       : caf::actor{});
  if (!detector) {
    rp.deliver(render(self, pv, {}));
    return;
  }
  self->request(detector, ask_timeout, caf::get_atom::value)
    .then(
      [=](std::vector<device_health>& health) mutable {
        self->request(detector, ask_timeout, caf::get_atom::value, heartbeat_atom::value)
          .then([=](const delay_histogram& d) mutable { rp.deliver(render(self, pv, health, &d)); },
                [=](caf::error&) mutable { rp.deliver(render(self, pv, health)); });
      },
      [=](caf::error&) mutable { rp.deliver(render(self, pv, {})); });
}

// The plans come with the registry; a planner that answers the one and not
// the other is shown without plans.
void ask_plans(console_ptr self, caf::typed_response_promise<std::string> rp, planner_view pv,
               const caf::actor& planner) {
  self->request(planner, ask_timeout, plans_atom::value)
    .then(
      [=](std::vector<plan>& plans) mutable {
        pv.plans = std::move(plans);
        answer(self, rp, pv);
      },
      [=](caf::error&) mutable { answer(self, rp, pv); });
}

// An accepted control: logged, and in the event log.
void accepted(console_ptr self, const control_request& req) {
  spdlog::info("console: control {}{} accepted", to_string(req.kind),
               req.kind == control_kind::drain ? " of device " + std::to_string(req.device) : "");
  log_event(self, to_string(req.kind), req.kind == control_kind::drain ? req.device : -1, 0,
            "by the operator");
}

control_reply drain(console_ptr self, const control_request& req) {
  auto planner = self->state.planner();
  if (!planner) return {int32_t{503}, std::string("no planner to drain the device from\n")};
  auto rp = self->make_response_promise<int32_t, std::string>();
  self->request(planner, ask_timeout, drain_atom::value, req.device)
    .then(
      [=](uint64_t) mutable {
        accepted(self, req);
        rp.deliver(int32_t{200}, "device " + std::to_string(req.device) +
                                   " is draining: it gets no new work\n");
      },
      [=](caf::error& err) mutable {
        const auto why = describe(err);
        spdlog::info("console: control drain of device {} refused: {}", req.device, why);
        const bool unknown = why.find("not in the fleet") != std::string::npos;
        rp.deliver(int32_t{unknown ? 404 : 503}, "drain refused: " + why + "\n");
      });
  return rp;
}

control_reply control(console_ptr self, const control_request& req) {
  auto& st = self->state;
  if (auto no = refuse_for_loop(req, st.loop_view)) {
    spdlog::info("console: control {} refused: {}", to_string(req.kind),
                 no->text.substr(0, no->text.size() - 1));
    return {int32_t{no->status}, std::move(no->text)};
  }
  switch (req.kind) {
    case control_kind::drain:
      return drain(self, req);
    case control_kind::pause:
      caf::unsafe_send_as(self, st.loop, pause_atom::value);
      st.loop_view.paused = true;
      break;
    case control_kind::resume:
      caf::unsafe_send_as(self, st.loop, resume_atom::value);
      st.loop_view.paused = false;
      break;
    case control_kind::checkpoint:
      caf::unsafe_send_as(self, st.loop, checkpoint_atom::value);
      st.checkpoint_pending = true;
      break;
  }
  accepted(self, req);
  return {int32_t{200}, std::string(to_string(req.kind)) + ": the training loop takes it between steps\n"};
}

}  // namespace

console_handle::behavior_type console_actor(console_ptr self, std::function<caf::actor()> planner,
                            std::function<caf::actor()> detector, bool controls_enabled) {
  self->state.planner = std::move(planner);
  self->state.detector = std::move(detector);
  self->state.controls_enabled = controls_enabled;
  subscribe(self, self->state.planner());
  self->delayed_send(self, resubscribe_every, console_resubscribe_atom::value);
  self->set_down_handler([=](const caf::down_msg& down) {
    auto& st = self->state;
    if (down.source != st.loop.address()) return;
    st.loop = nullptr;
    st.loop_view = loop_state{};
    st.checkpoint_pending = false;
  });
  return {
    [=](console_resubscribe_atom) {
      subscribe(self, self->state.planner());
      self->delayed_send(self, resubscribe_every, console_resubscribe_atom::value);
    },
    [=](event_atom, const fleet_event& ev) {
      log_event(self, to_string(ev.kind), ev.device, ev.phi);
    },
    [=](control_atom, caf::actor inbox, bool has_checkpoint_dir) {
      auto& st = self->state;
      st.loop = std::move(inbox);
      st.loop_view = loop_state{true, has_checkpoint_dir, false};
      self->monitor(st.loop);
    },
    [=](loop_event_atom, const std::string& kind, int64_t step) {
      if (kind == "checkpoint") self->state.checkpoint_pending = false;
      log_event(self, kind, -1, 0, "step " + std::to_string(step));
    },
    [=](control_atom, const control_request& req) { return control(self, req); },
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
              std::vector<int32_t>& suspected, std::vector<int32_t>& draining) {
            planner_view pv;
            pv.version = version;
            pv.quorum = quorum;
            pv.members = std::move(members);
            pv.suspected = std::move(suspected);
            pv.draining = std::move(draining);
            ask_plans(self, rp, std::move(pv), planner);
          },
          [=](caf::error& err) { answer(self, rp, unanswered(self->system().render(err))); });
      return rp;
    },
  };
}

}  // namespace cleave
