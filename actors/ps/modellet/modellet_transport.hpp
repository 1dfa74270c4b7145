#pragma once
// Model-let frames to in-process devices (device_actor's modellet handler),
// every request in flight at once: the actor side of modellet_ps.

#include <vector>

#include <caf/all.hpp>

#include "actors/ps/modellet/modellet_ps.hpp"
#include "schema/profile.hpp"

namespace cleave {

// What the exchanges cost in time, for the report.
struct modellet_exchange_time {
  double wall_seconds = 0;  // waited on devices' answers, every exchange
  // Emulated (paced) devices only: the frames' time on the devices' links
  // (modellet_link_seconds), the slowest device of each exchange, summed.
  double link_seconds = 0;
};

class actor_modellet_transport final : public modellet_transport {
 public:
  // devices[i] is the transport's device i; a device that does not answer
  // within `timeout` counts as lost. paced_profiles: the devices' profiles
  // when they are emulated and pace their frames (empty otherwise), to
  // account the link time the pacing holds.
  actor_modellet_transport(caf::actor_system& sys, std::vector<caf::actor> devices, caf::timespan timeout,
                           std::vector<device_profile> paced_profiles = {})
      : sys_(sys), devices_(std::move(devices)), timeout_(timeout), paced_(std::move(paced_profiles)) {}

  std::vector<caf::expected<ml_frame>> exchange(std::vector<ml_request> requests) override;

  const modellet_exchange_time& time() const { return time_; }

 private:
  caf::actor_system& sys_;
  std::vector<caf::actor> devices_;
  caf::timespan timeout_;
  std::vector<device_profile> paced_;
  modellet_exchange_time time_;
};

}  // namespace cleave
