#pragma once
// The churn actor's interface, as a typed actor: the training loop holds a
// churn_handle, so the compiler checks that it only says "a step begins" and
// asks for the summary, and what the summary's type is.

#include <cstdint>
#include <string>

#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "schema/messages.hpp"

namespace cleave {

// A delayed churn event is due (churn_state::pending).
using churn_apply_atom = caf::atom_constant<caf::atom("apply")>;

using churn_handle = caf::typed_actor<
  // From the training loop: step `step` begins; the events due then are applied.
  caf::reacts_to<churn_atom, int64_t>,
  // A JSON summary: counts of what it did and the detector's latencies.
  caf::replies_to<caf::get_atom>::with<std::string>,
  // From the planner it subscribes to: times the detection of its failures.
  caf::reacts_to<event_atom, fleet_event>,
  // Its own timer: the delayed event with this sequence number.
  caf::reacts_to<churn_apply_atom, uint64_t>>;

}  // namespace cleave
