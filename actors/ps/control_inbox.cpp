#include "actors/ps/control_inbox.hpp"

#include <chrono>

#include <spdlog/spdlog.h>

#include "actors/ps/ps_protocol.hpp"

namespace cleave {

control_inbox::control_inbox(caf::actor_system& sys, console_handle console, bool has_checkpoint_dir)
    : self_(sys), console_(std::move(console)) {
  if (!console_) return;
  self_->monitor(console_);
  self_->send(console_, control_atom::value, caf::actor_cast<caf::actor>(self_), has_checkpoint_dir);
}

bool control_inbox::take(caf::timespan wait) {
  bool took = true;
  self_->receive(
    [&](pause_atom) { controls_.pause(); },
    [&](resume_atom) { controls_.resume(); },
    [&](checkpoint_atom) { controls_.request_checkpoint(); },
    [&](const caf::down_msg& down) {
      if (down.source != console_.address()) return;
      console_gone_ = true;
      controls_.resume();
    },
    caf::after(wait) >> [&] { took = false; });
  return took;
}

bool control_inbox::between_steps(int64_t step) {
  if (!console_) return false;
  // Everything already queued, without waiting.
  while (take(caf::timespan{0})) {
  }
  if (controls_.paused()) {
    spdlog::info("training paused before step {}", step + 1);
    self_->send(console_, loop_event_atom::value, std::string("paused"), step);
    while (controls_.paused() && !console_gone_) take(std::chrono::seconds(1));
    spdlog::info("training resumed");
    if (!console_gone_) self_->send(console_, loop_event_atom::value, std::string("resumed"), step);
  }
  return controls_.take_checkpoint();
}

void control_inbox::checkpoint_written(int64_t step) {
  if (console_ && !console_gone_)
    self_->send(console_, loop_event_atom::value, std::string("checkpoint"), step);
}

}  // namespace cleave
