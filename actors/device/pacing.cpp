#include "actors/device/pacing.hpp"

#include <algorithm>
#include <chrono>

#include "actors/transport/frame.hpp"

namespace cleave {

paced_span pace(caf::timestamp arrived, caf::timestamp busy_until, caf::timestamp now, double seconds) {
  const auto begin = std::max(arrived, busy_until);
  const auto length = std::chrono::duration_cast<caf::timespan>(std::chrono::duration<double>(seconds));
  return {begin, std::max(now, begin + length)};
}

double modellet_link_seconds(const device_profile& p, uint64_t request_payload_bytes,
                             uint64_t answer_payload_bytes) {
  const auto header = static_cast<double>(transport::frame_header_size);
  return (static_cast<double>(request_payload_bytes) + header) / p.downlink
         + (static_cast<double>(answer_payload_bytes) + header) / p.uplink + 2 * p.latency;
}

}  // namespace cleave
