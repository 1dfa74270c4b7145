#include "actors/ps/modellet_transport.hpp"

#include <functional>

#include "schema/errors.hpp"
#include "schema/messages.hpp"

namespace cleave {

std::vector<caf::expected<ml_frame>> actor_modellet_transport::exchange(std::vector<ml_request> requests) {
  caf::scoped_actor self{sys_};
  std::vector<caf::expected<ml_frame>> out;
  std::vector<std::function<void()>> waits;
  out.reserve(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    auto& r = requests[i];
    out.emplace_back(fail("no answer"));
    if (r.device < 0 || static_cast<size_t>(r.device) >= devices_.size() || !devices_[static_cast<size_t>(r.device)]) {
      out.back() = fail("no device " + std::to_string(r.device));
      continue;
    }
    // Sent now; the answers are collected below, in any order of arrival.
    auto h = self->request(devices_[static_cast<size_t>(r.device)], timeout_, modellet_atom::value, r.slot,
                           r.kind, std::move(r.payload));
    waits.emplace_back([h, &out, i, this]() mutable {
      h.receive([&](uint16_t kind, std::vector<char>& payload) { out[i] = ml_frame{kind, std::move(payload)}; },
                [&](caf::error& err) { out[i] = fail(sys_.render(err)); });
    });
  }
  for (auto& w : waits) w();
  return out;
}

}  // namespace cleave
