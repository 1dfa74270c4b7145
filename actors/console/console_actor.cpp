#include "actors/console/console_actor.hpp"

#include <chrono>

#include <spdlog/spdlog.h>

#include "actors/console/console_view.hpp"

namespace cleave {

namespace {

constexpr auto ask_timeout = std::chrono::seconds(2);

using console_ptr = caf::stateful_actor<console_state>*;

planner_view unanswered(std::string why) {
  planner_view out;
  out.error = std::move(why);
  return out;
}

void answer(console_ptr self, caf::typed_response_promise<std::string> rp, const planner_view& pv) {
  auto detector = self->state.detector ? self->state.detector() : caf::actor{};
  if (!detector) {
    rp.deliver(render_console(self->state.training, pv, {}).dump(2));
    return;
  }
  self->request(detector, ask_timeout, caf::get_atom::value)
    .then(
      [=](std::vector<device_health>& health) mutable {
        rp.deliver(render_console(self->state.training, pv, health).dump(2));
      },
      [=](caf::error&) mutable { rp.deliver(render_console(self->state.training, pv, {}).dump(2)); });
}

}  // namespace

caf::behavior console_actor(console_ptr self, std::function<caf::actor()> planner,
                            std::function<caf::actor()> detector) {
  self->state.planner = std::move(planner);
  self->state.detector = std::move(detector);
  return {
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
