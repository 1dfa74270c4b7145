#include "actors/detector/detector_protocol.hpp"

namespace cleave {

void add_detector_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<device_health>("cleave::device_health");
  cfg.add_message_type<delay_histogram>("cleave::delay_histogram");
  cfg.add_message_type<std::vector<device_health>>("std::vector<cleave::device_health>");
}

}  // namespace cleave
