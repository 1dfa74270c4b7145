#include "schema/messages.hpp"

namespace cleave {

const char* to_string(fleet_event_kind k) {
  switch (k) {
    case fleet_event_kind::join: return "join";
    case fleet_event_kind::suspect: return "suspect";
    case fleet_event_kind::dead: return "dead";
    case fleet_event_kind::rejoin: return "rejoin";
  }
  return "unknown";
}

void add_cleave_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<device_profile>("cleave::device_profile");
  cfg.add_message_type<tile_key>("cleave::tile_key");
  cfg.add_message_type<operand>("cleave::operand");
  cfg.add_message_type<tile_task>("cleave::tile_task");
  cfg.add_message_type<tile_result>("cleave::tile_result");
  cfg.add_message_type<tile_miss>("cleave::tile_miss");
  cfg.add_message_type<join_request>("cleave::join_request");
  cfg.add_message_type<fleet_event>("cleave::fleet_event");
  cfg.add_message_type<std::vector<uint8_t>>("std::vector<uint8_t>");
}

}  // namespace cleave
