#include "actors/supervisor/supervisor.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <spdlog/spdlog.h>

namespace cleave {

namespace {

void start_child(caf::stateful_actor<supervisor_state>* self, child_spec spec) {
  auto child = spec.start(self);
  self->monitor(child);
  // CAF's put keeps an existing entry: a restarted child must replace it.
  const auto name = caf::atom_from_string(spec.name);
  self->system().registry().erase(name);
  self->system().registry().put(name, child);
  self->state.children.emplace(child.address(), supervisor_state::child{std::move(spec), child});
}

// A supervisor takes its children with it, whatever the reason it stops.
void stop_with_children(caf::stateful_actor<supervisor_state>* self, const caf::error& reason) {
  for (auto& [addr, c] : self->state.children) self->send_exit(c.handle, reason);
  self->state.children.clear();
  self->quit(reason);
}

}  // namespace

void exit_process_when_it_fails(caf::actor_system& sys, const caf::actor& supervisor) {
  sys.spawn([supervisor](caf::event_based_actor* self) {
    self->monitor(supervisor);
    self->set_down_handler([=](const caf::down_msg& msg) {
      if (msg.reason && msg.reason != caf::exit_reason::user_shutdown) {
        spdlog::critical("the supervisor gave up ({}); exiting", self->system().render(msg.reason));
        spdlog::default_logger()->flush();
        std::fflush(nullptr);
        std::_Exit(3);
      }
      self->quit();
    });
  });
}

caf::behavior supervisor_actor(caf::stateful_actor<supervisor_state>* self,
                               supervisor_options opts, std::vector<child_spec> children) {
  self->state.opts = opts;
  self->state.budget = restart_budget{opts.max_restarts, opts.window_seconds};
  self->set_down_handler([=](const caf::down_msg& msg) {
    auto& st = self->state;
    auto it = st.children.find(msg.source);
    if (it == st.children.end()) return;
    child_spec spec = std::move(it->second.spec);
    st.children.erase(it);
    if (!msg.reason || msg.reason == caf::exit_reason::user_shutdown) return;  // a clean stop
    if (!spec.restart) {
      spdlog::debug("supervisor: {} ended ({}); not restarted", spec.name,
                    self->system().render(msg.reason));
      return;
    }
    const double now = std::chrono::duration<double>(
                         std::chrono::steady_clock::now().time_since_epoch()).count();
    if (!st.budget.try_restart(now)) {
      spdlog::error("supervisor: {} failed ({}) more than {} times in {} s; giving up", spec.name,
                    self->system().render(msg.reason), st.opts.max_restarts,
                    st.opts.window_seconds);
      stop_with_children(self, msg.reason);
      return;
    }
    spdlog::warn("supervisor: restarting {} after {}", spec.name, self->system().render(msg.reason));
    start_child(self, std::move(spec));
  });
  // A supervisor takes its children with it, whatever the reason it stops.
  self->set_exit_handler([=](caf::exit_msg& msg) { stop_with_children(self, msg.reason); });
  for (auto& spec : children) start_child(self, std::move(spec));
  // Children that end for good leave the supervisor idle but alive: the
  // process decides when to stop.
  return {
    [=](caf::get_atom) { return static_cast<uint64_t>(self->state.children.size()); },
  };
}

}  // namespace cleave
