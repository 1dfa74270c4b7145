#pragma once
// What the admin console is told: the training loop's status and what it did,
// the planner's fleet events, and the operator's controls its HTTP endpoint
// has authorised.
//
// A typed actor: the training loop, its control inbox and the HTTP endpoint
// hold a console_handle, so the compiler checks what each of them says and
// what it gets back. The planner, which holds its subscribers as one list of
// caf::actor, is the one peer that reaches it untyped (its events).

#include <cstdint>
#include <string>

#include <caf/actor.hpp>
#include <caf/atom.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/console/controls.hpp"
#include "schema/messages.hpp"

namespace cleave {

using console_status_atom = caf::atom_constant<caf::atom("cstatus")>;
// Its own timer: look for a restarted planner even when nobody asks.
using console_resubscribe_atom = caf::atom_constant<caf::atom("cresub")>;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, control_request& x) {
  return f(caf::meta::type_name("control_request"), x.kind, x.device);
}

using console_handle = caf::typed_actor<
  // From the training loop: its status, as JSON.
  caf::reacts_to<console_status_atom, std::string>,
  // From the training loop's control inbox: the inbox, and whether the loop
  // has a checkpoint directory; then what the loop did ("paused",
  // "resumed", "checkpoint") at which step. Both are logged.
  caf::reacts_to<control_atom, caf::actor, bool>,
  caf::reacts_to<loop_event_atom, std::string, int64_t>,
  // From the HTTP endpoint: an authorised control -> (HTTP status, text).
  caf::replies_to<control_atom, control_request>::with<int32_t, std::string>,
  // From the HTTP endpoint: the console document (console_view.hpp).
  caf::replies_to<caf::get_atom>::with<std::string>,
  // From the planner it subscribes to: logged.
  caf::reacts_to<event_atom, fleet_event>,
  caf::reacts_to<console_resubscribe_atom>>;

}  // namespace cleave
