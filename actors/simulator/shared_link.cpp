#include "actors/simulator/shared_link.hpp"

#include <algorithm>
#include <cmath>

namespace cleave {

namespace {

constexpr double infinity = std::numeric_limits<double>::infinity();

// A flow within this many bytes of its end has finished: the rounding of
// the served_ sums, never a real remainder.
double tolerance(double bytes) { return 1e-9 * bytes + 1e-6; }

}  // namespace

shared_link::shared_link(double capacity, size_t max_flows)
    : capacity_(capacity), cap_(max_flows, 0.0), size_(max_flows, 0.0),
      shared_finish_(max_flows), shared_cap_(max_flows), own_finish_(max_flows),
      own_cap_(max_flows) {}

double shared_link::level() const {
  if (shared_finish_.empty()) return infinity;
  return std::max(0.0, capacity_ - own_sum_) / static_cast<double>(shared_finish_.size());
}

void shared_link::advance(double now) {
  if (now <= at_) return;
  if (!shared_finish_.empty()) served_ += level() * (now - at_);
  at_ = now;
}

void shared_link::to_own(double now, uint32_t flow) {
  const double left = std::max(0.0, shared_finish_.key(flow) - served_);
  shared_finish_.remove(flow);
  shared_cap_.remove(flow);
  own_finish_.set(flow, now + left / cap_[flow]);
  own_cap_.set(flow, -cap_[flow]);
  own_sum_ += cap_[flow];
}

void shared_link::to_shared(double now, uint32_t flow) {
  const double left = std::max(0.0, (own_finish_.key(flow) - now) * cap_[flow]);
  own_finish_.remove(flow);
  own_cap_.remove(flow);
  own_sum_ -= cap_[flow];
  shared_finish_.set(flow, served_ + left);
  shared_cap_.set(flow, cap_[flow]);
}

void shared_link::rebalance(double now) {
  if (own_finish_.empty()) own_sum_ = 0;  // no drift from adding and taking caps
  while (true) {
    const double lvl = level();
    if (!shared_cap_.empty() && shared_cap_.top_key() < lvl) {
      to_own(now, shared_cap_.top());
      continue;
    }
    if (!own_cap_.empty()) {
      const double largest = -own_cap_.top_key();
      if (shared_finish_.empty() ? own_sum_ > capacity_ : largest > lvl) {
        to_shared(now, own_cap_.top());
        continue;
      }
    }
    break;
  }
}

void shared_link::start(double now, uint32_t flow, double bytes, double cap) {
  advance(now);
  cap_[flow] = cap;
  size_[flow] = bytes;
  shared_finish_.set(flow, served_ + bytes);
  shared_cap_.set(flow, cap);
  rebalance(now);
}

void shared_link::cancel(double now, uint32_t flow) {
  advance(now);
  if (own_finish_.contains(flow)) {
    own_finish_.remove(flow);
    own_cap_.remove(flow);
    own_sum_ -= cap_[flow];
  } else {
    shared_finish_.remove(flow);
    shared_cap_.remove(flow);
  }
  rebalance(now);
}

double shared_link::next_finish() const {
  double next = own_finish_.empty() ? infinity : own_finish_.top_key();
  if (!shared_finish_.empty()) {
    const double lvl = level();
    if (lvl > 0) next = std::min(next, at_ + std::max(0.0, shared_finish_.top_key() - served_) / lvl);
  }
  return next;
}

void shared_link::finish_due(double now, std::vector<uint32_t>& done) {
  advance(now);
  bool changed = false;
  while (!own_finish_.empty()
         && own_finish_.top_key() - now <= tolerance(size_[own_finish_.top()]) / cap_[own_finish_.top()]) {
    const uint32_t f = own_finish_.pop();
    own_cap_.remove(f);
    own_sum_ -= cap_[f];
    done.push_back(f);
    changed = true;
  }
  while (!shared_finish_.empty()
         && shared_finish_.top_key() - served_ <= tolerance(size_[shared_finish_.top()])) {
    const uint32_t f = shared_finish_.pop();
    shared_cap_.remove(f);
    done.push_back(f);
    changed = true;
  }
  if (changed) rebalance(now);
}

double shared_link::rate(uint32_t flow) const {
  if (own_finish_.contains(flow)) return cap_[flow];
  if (shared_finish_.contains(flow)) return level();
  return 0;
}

}  // namespace cleave
