#pragma once
// One direction of a PS shard's link in virtual time, under either model
// (--ps-link-model): `fair`, max-min fair sharing among the transfers in
// flight (shared_link.hpp: TCP flows through one bottleneck), or
// `scheduled`, the PS serving its sends in order (scheduled_link.hpp). A
// shard's ingress is always fair: devices send their results when they
// have them.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>
#include <vector>

#include <caf/expected.hpp>

#include "actors/simulator/scheduled_link.hpp"
#include "actors/simulator/shared_link.hpp"

namespace cleave {

enum class ps_link_model : uint8_t { fair, scheduled };

const char* to_string(ps_link_model m);
caf::expected<ps_link_model> parse_ps_link_model(std::string_view text);

class ps_link {
 public:
  ps_link(ps_link_model model, double capacity, size_t max_flows);

  // `priority`: the scheduled model serves smaller first; fair sharing has none.
  void start(double now, uint32_t flow, double bytes, double cap, uint64_t priority = 0) {
    if (auto* s = std::get_if<scheduled_link>(&link_)) s->start(now, flow, bytes, cap, priority);
    else std::get<shared_link>(link_).start(now, flow, bytes, cap);
  }
  void cancel(double now, uint32_t flow) {
    std::visit([&](auto& l) { l.cancel(now, flow); }, link_);
  }
  bool running(uint32_t flow) const {
    return std::visit([&](const auto& l) { return l.running(flow); }, link_);
  }
  double next_finish() const {
    return std::visit([](const auto& l) { return l.next_finish(); }, link_);
  }
  void finish_due(double now, std::vector<uint32_t>& done) {
    std::visit([&](auto& l) { l.finish_due(now, done); }, link_);
  }

 private:
  std::variant<shared_link, scheduled_link> link_;
};

}  // namespace cleave
