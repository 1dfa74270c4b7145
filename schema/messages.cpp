#include "schema/messages.hpp"

#include <algorithm>

namespace cleave {

bool operand::window_valid() const {
  if (shared == nullptr || rows < 0 || cols < 0 || offset < 0 || ld < cols) return false;
  if (rows == 0 || cols == 0) return true;
  const auto size = static_cast<int64_t>(shared->size());
  return offset <= size - cols && (rows - 1) <= (size - offset - cols) / std::max<int64_t>(ld, 1);
}

void operand::copy_values(float* out) const {
  if (!data.empty()) {
    std::copy(data.begin(), data.end(), out);
    return;
  }
  const float* src = shared->data() + offset;
  for (int64_t r = 0; r < rows; ++r) std::copy(src + r * ld, src + r * ld + cols, out + r * cols);
}

const char* to_string(fleet_event_kind k) {
  switch (k) {
    case fleet_event_kind::join: return "join";
    case fleet_event_kind::suspect: return "suspect";
    case fleet_event_kind::dead: return "dead";
    case fleet_event_kind::rejoin: return "rejoin";
    case fleet_event_kind::quarantined: return "quarantined";
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
