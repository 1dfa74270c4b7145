#include "actors/gateway/edge_gateway_protocol.hpp"

namespace cleave {

void add_gateway_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<edge_counters>("cleave::edge_counters");
}

}  // namespace cleave
