#include "actors/ps/engine/send_window.hpp"

#include <algorithm>

namespace cleave {

bool send_window::has_room(int32_t device, uint32_t depth) {
  auto& l = lanes_[device];
  l.depth = std::max<uint32_t>(depth, 1);
  return l.queue.empty() && l.in_flight < l.depth;
}

void send_window::sent(int32_t device) {
  auto& l = lanes_[device];
  l.most = std::max(l.most, ++l.in_flight);
}

void send_window::enqueue(int32_t device, uint32_t depth, queued_task t) {
  auto& l = lanes_[device];
  l.depth = std::max<uint32_t>(depth, 1);
  l.queue.push_back(t);
}

void send_window::answered(int32_t device) {
  auto it = lanes_.find(device);
  if (it != lanes_.end() && it->second.in_flight > 0) --it->second.in_flight;
}

std::optional<queued_task> send_window::next(int32_t device) {
  auto it = lanes_.find(device);
  if (it == lanes_.end()) return std::nullopt;
  auto& l = it->second;
  if (l.queue.empty() || l.in_flight >= l.depth) return std::nullopt;
  const queued_task t = l.queue.front();
  l.queue.pop_front();
  return t;
}

void send_window::forget(int32_t device) {
  auto it = lanes_.find(device);
  if (it == lanes_.end()) return;
  it->second.queue.clear();
  it->second.in_flight = 0;
}

uint32_t send_window::most_in_flight(int32_t device) const {
  auto it = lanes_.find(device);
  return it == lanes_.end() ? 0 : it->second.most;
}

size_t send_window::waiting(int32_t device) const {
  auto it = lanes_.find(device);
  return it == lanes_.end() ? 0 : it->second.queue.size();
}

}  // namespace cleave
