#include "schema/pacing.hpp"

#include <algorithm>
#include <chrono>

namespace cleave {

paced_span pace(caf::timestamp arrived, caf::timestamp busy_until, caf::timestamp now, double seconds) {
  const auto begin = std::max(arrived, busy_until);
  const auto length = std::chrono::duration_cast<caf::timespan>(std::chrono::duration<double>(seconds));
  return {begin, std::max(now, begin + length)};
}

double modellet_link_seconds(const device_profile& p, uint64_t request_payload_bytes,
                             uint64_t answer_payload_bytes) {
  const auto header = static_cast<double>(paced_frame_header_bytes);
  return (static_cast<double>(request_payload_bytes) + header) / p.downlink
         + (static_cast<double>(answer_payload_bytes) + header) / p.uplink + 2 * p.latency;
}

}  // namespace cleave
