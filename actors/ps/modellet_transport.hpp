#pragma once
// Model-let frames to in-process devices (device_actor's modellet handler),
// every request in flight at once: the actor side of modellet_ps.

#include <vector>

#include <caf/all.hpp>

#include "actors/ps/modellet_ps.hpp"

namespace cleave {

class actor_modellet_transport final : public modellet_transport {
 public:
  // devices[i] is the transport's device i; a device that does not answer
  // within `timeout` counts as lost.
  actor_modellet_transport(caf::actor_system& sys, std::vector<caf::actor> devices, caf::timespan timeout)
      : sys_(sys), devices_(std::move(devices)), timeout_(timeout) {}

  std::vector<caf::expected<ml_frame>> exchange(std::vector<ml_request> requests) override;

 private:
  caf::actor_system& sys_;
  std::vector<caf::actor> devices_;
  caf::timespan timeout_;
};

}  // namespace cleave
