#pragma once
// The training loop's inbox for an operator's controls: a blocking actor in
// the loop's thread that the console sends pause, resume and checkpoint to.
// The loop looks at it between steps only, so a step is never cut in two.

#include <cstdint>

#include <caf/all.hpp>

#include "actors/console/console_protocol.hpp"
#include "actors/ps/step_controls.hpp"

namespace cleave {

class control_inbox {
 public:
  // Makes itself known to `console`; without one, no control ever arrives.
  control_inbox(caf::actor_system& sys, console_handle console, bool has_checkpoint_dir);

  // Takes what arrived; while paused, waits for resume (or for the console
  // to go: nobody is left to resume it). True: a checkpoint is asked for.
  // Tells the console when the loop paused and resumed, at which step.
  bool between_steps(int64_t step);

  // Tells the console a checkpoint was written at `step`.
  void checkpoint_written(int64_t step);

 private:
  // One message, waiting at most `wait`; false when none came.
  bool take(caf::timespan wait);

  caf::scoped_actor self_;
  console_handle console_;
  step_controls controls_;
  bool console_gone_ = false;
};

}  // namespace cleave
