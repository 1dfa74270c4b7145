#include "actors/simulator/scheduled_link.hpp"

#include <algorithm>
#include <limits>
#include <tuple>

namespace cleave {

namespace {

constexpr double infinity = std::numeric_limits<double>::infinity();

// A flow within this many bytes of its end has finished: the rounding of
// the rate x time products, never a real remainder.
double tolerance(double bytes) { return 1e-9 * bytes + 1e-6; }

}  // namespace

scheduled_link::scheduled_link(double capacity, size_t max_flows)
    : capacity_(capacity), flows_(max_flows) {}

void scheduled_link::advance(double now) {
  if (now <= at_) return;
  const double dt = now - at_;
  for (uint32_t f : served_) flows_[f].left = std::max(0.0, flows_[f].left - flows_[f].rate * dt);
  at_ = now;
}

void scheduled_link::allocate() {
  for (uint32_t f : served_) flows_[f].rate = 0;
  served_.clear();
  double left = capacity_;
  for (auto it = order_.begin(); it != order_.end() && left > 0; ++it) {
    auto& f = flows_[std::get<2>(*it)];
    f.rate = std::min(f.cap, left);
    left -= f.rate;
    served_.push_back(std::get<2>(*it));
  }
}

void scheduled_link::start(double now, uint32_t flow, double bytes, double cap, uint64_t priority) {
  advance(now);
  auto& f = flows_[flow];
  f = flow_state{bytes, bytes, cap, 0, true, {priority, arrivals_++}};
  order_.emplace(f.key.first, f.key.second, flow);
  allocate();
}

void scheduled_link::remove(uint32_t flow) {
  auto& f = flows_[flow];
  order_.erase({f.key.first, f.key.second, flow});
  f.queued = false;
  f.rate = 0;
}

void scheduled_link::cancel(double now, uint32_t flow) {
  if (!flows_[flow].queued) return;
  advance(now);
  remove(flow);
  allocate();
}

double scheduled_link::next_finish() const {
  double best = infinity;
  for (uint32_t i : served_) {
    const auto& f = flows_[i];
    if (f.rate > 0) best = std::min(best, at_ + f.left / f.rate);
  }
  return best;
}

void scheduled_link::finish_due(double now, std::vector<uint32_t>& done) {
  advance(now);
  const size_t before = done.size();
  for (uint32_t i : served_)
    if (flows_[i].left <= tolerance(flows_[i].size)) done.push_back(i);
  if (done.size() == before) return;
  for (size_t i = before; i < done.size(); ++i) remove(done[i]);
  allocate();
}

}  // namespace cleave
