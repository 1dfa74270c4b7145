#pragma once
// One member of the fleet as the planner lists it: its id, the actor that
// computes its tiles (a device, or a remote device's proxy) and its declared
// profile. The planner's fleet answers carry it to the PS engines, the
// console and the training loop, so it lives below all of them.

#include <cstdint>

#include <caf/actor.hpp>
#include <caf/meta/type_name.hpp>

#include "schema/profile.hpp"

namespace cleave {

struct fleet_member {
  int32_t id = -1;
  caf::actor handle;
  device_profile profile;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, fleet_member& x) {
  return f(caf::meta::type_name("fleet_member"), x.id, x.handle, x.profile);
}

}  // namespace cleave
