#pragma once
// The admin console's state: the training loop's latest status, pushed to
// it, and, on each query, the live fleet asked of the planner and the
// detector (found anew each time: either may have been restarted), and a
// log of fleet events: the console subscribes to the planner's events, and
// again whenever the planner it finds is not the one it subscribed to.
//
// Messages:
//   (console_status_atom, std::string json)  the training loop's status
//   (event_atom, fleet_event)                 from the planner: logged
//   (caf::get_atom) -> std::string            the console document (console_view.hpp)

#include <chrono>
#include <functional>
#include <string>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/console/event_log.hpp"

namespace cleave {

using console_status_atom = caf::atom_constant<caf::atom("cstatus")>;

struct console_state {
  nlohmann::json training;  // null until the first status
  std::function<caf::actor()> planner;
  std::function<caf::actor()> detector;  // may return no actor: health is then left out
  event_log events{500};
  caf::actor subscribed_to;  // the planner whose events arrive here
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  static inline const char* name = "cleave.console";
};

caf::behavior console_actor(caf::stateful_actor<console_state>* self,
                            std::function<caf::actor()> planner,
                            std::function<caf::actor()> detector);

}  // namespace cleave
