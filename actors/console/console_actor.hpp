#pragma once
// The admin console's state: the training loop's latest status, pushed to
// it, and, on each query, the live fleet and current plans asked of the
// planner and the detector (found anew each time: either may have been
// restarted), and a log of fleet events: the console subscribes to the
// planner's events, and again whenever the planner it finds is not the one
// it subscribed to. It carries out an operator's controls (controls.hpp),
// which its endpoint has already authorised: drains go to the planner,
// pause, resume and checkpoint to the training loop's inbox.
//
// Messages: console_protocol.hpp.

#include <chrono>
#include <functional>
#include <string>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/console/console_protocol.hpp"
#include "actors/console/controls.hpp"
#include "actors/console/event_log.hpp"

namespace cleave {

struct console_state {
  nlohmann::json training;  // null until the first status
  std::function<caf::actor()> planner;
  std::function<caf::actor()> detector;  // may return no actor: health is then left out
  event_log events{500};
  caf::actor subscribed_to;  // the planner whose events arrive here
  bool controls_enabled = false;  // the endpoint has an admin token
  caf::actor loop;                // the training loop's control inbox, once it is known
  loop_state loop_view;
  bool checkpoint_pending = false;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  static inline const char* name = "cleave.console";
};

console_handle::behavior_type console_actor(console_handle::stateful_pointer<console_state> self,
                            std::function<caf::actor()> planner,
                            std::function<caf::actor()> detector, bool controls_enabled);

}  // namespace cleave
