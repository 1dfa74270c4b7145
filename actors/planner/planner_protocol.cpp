#include "actors/planner/planner_protocol.hpp"

namespace cleave {

void add_planner_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<fleet_member>("cleave::fleet_member");
  cfg.add_message_type<std::vector<fleet_member>>("std::vector<cleave::fleet_member>");
  cfg.add_message_type<gemm_problem>("cleave::gemm_problem");
  cfg.add_message_type<gemm_role>("cleave::gemm_role");
  cfg.add_message_type<tile>("cleave::tile");
  cfg.add_message_type<assignment>("cleave::assignment");
  cfg.add_message_type<plan>("cleave::plan");
  cfg.add_message_type<std::vector<plan>>("std::vector<cleave::plan>");
  cfg.add_message_type<std::vector<int32_t>>("std::vector<int32_t>");
}

}  // namespace cleave
