#pragma once
// One supervisor per process: spawns the process's actors, monitors them, and
// restarts a child that fails (one-for-one) within its restart budget. Past
// the budget it escalates: it exits with the child's error, and the process
// exits with a message saying which child failed and why.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "actors/supervisor/restart_budget.hpp"

namespace cleave {

struct child_spec {
  std::string name;  // also the child's name in the actor registry (at most 10 characters)
  std::function<caf::actor(caf::local_actor*)> start;
  // false: a "temporary" child (OTP's term), left dead when it fails. The
  // in-process fleet's devices are: each emulates a remote device, whose
  // loss is churn for the runtime to absorb, not a fault to restart here.
  bool restart = true;
};

struct supervisor_options {
  int max_restarts = 3;
  double window_seconds = 10;
};

struct supervisor_state {
  supervisor_options opts;
  restart_budget budget{3, 10};
  struct child {
    child_spec spec;
    caf::actor handle;
  };
  std::map<caf::actor_addr, child> children;
  static inline const char* name = "cleave.supervisor";
};

// Starts `children` in order. Each (re)started child is put into the actor
// system's registry under its name, so peers in this process always find the
// live one: system.registry().get(caf::atom_from_string(name)).
caf::behavior supervisor_actor(caf::stateful_actor<supervisor_state>* self,
                               supervisor_options opts, std::vector<child_spec> children);

// The top of the tree: when the process's supervisor gives up (it exits
// with an error), the process exits with status 3 and one clear line,
// rather than leave callers waiting on actors that are gone.
void exit_process_when_it_fails(caf::actor_system& sys, const caf::actor& supervisor);

}  // namespace cleave
