#include "actors/ps/modellet/modellet_transport.hpp"

#include <algorithm>
#include <chrono>
#include <functional>

#include "schema/errors.hpp"
#include "schema/messages.hpp"
#include "schema/pacing.hpp"

namespace cleave {

std::vector<caf::expected<ml_frame>> actor_modellet_transport::exchange(std::vector<ml_request> requests) {
  caf::scoped_actor self{sys_};
  const auto started = std::chrono::steady_clock::now();
  std::vector<caf::expected<ml_frame>> out;
  std::vector<std::function<void()>> waits;
  std::vector<uint64_t> request_bytes;
  out.reserve(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    auto& r = requests[i];
    out.emplace_back(fail("no answer"));
    request_bytes.push_back(r.payload.size());
    if (r.device < 0 || static_cast<size_t>(r.device) >= devices_.size() || !devices_[static_cast<size_t>(r.device)]) {
      out.back() = fail("no device " + std::to_string(r.device));
      continue;
    }
    // Sent now; the answers are collected below, in any order of arrival.
    const int64_t sent_at_ns = caf::make_timestamp().time_since_epoch().count();
    auto h = self->request(devices_[static_cast<size_t>(r.device)], timeout_, modellet_atom::value, r.slot,
                           r.kind, std::move(r.payload), sent_at_ns);
    waits.emplace_back([h, &out, i, this]() mutable {
      h.receive([&](uint16_t kind, std::vector<char>& payload) { out[i] = ml_frame{kind, std::move(payload)}; },
                [&](caf::error& err) { out[i] = fail(sys_.render(err)); });
    });
  }
  for (auto& w : waits) w();
  time_.wall_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!paced_.empty()) {
    // A device's frames of one exchange follow one another; devices run side by side.
    std::vector<double> per_device(paced_.size(), 0);
    for (size_t i = 0; i < requests.size(); ++i) {
      const auto d = static_cast<size_t>(requests[i].device);
      if (!out[i] || d >= paced_.size()) continue;
      per_device[d] += modellet_link_seconds(paced_[d], request_bytes[i], out[i]->payload.size());
    }
    time_.link_seconds += *std::max_element(per_device.begin(), per_device.end());
  }
  return out;
}

}  // namespace cleave
