#include "actors/planner/relay_ledger.hpp"

#include <algorithm>

namespace cleave {

void relay_ledger::begin(size_t relays, size_t a_blocks, size_t b_blocks) {
  a_blocks_ = a_blocks;
  b_blocks_ = b_blocks;
  traffic_.assign(relays, traffic{});
  if (relays == 0) return;
  if (++stamp_ == 0) {  // wrapped: old marks could read as new
    std::fill(has_a_.begin(), has_a_.end(), 0);
    std::fill(has_b_.begin(), has_b_.end(), 0);
    stamp_ = 1;
  }
  if (has_a_.size() < relays * a_blocks) has_a_.resize(relays * a_blocks, 0);
  if (has_b_.size() < relays * b_blocks) has_b_.resize(relays * b_blocks, 0);
}

uint64_t relay_ledger::send(int32_t relay, bool need_a, bool need_b, size_t a, size_t b, uint64_t ab,
                            uint64_t bb, uint64_t cb) {
  const uint64_t bytes = ps_bytes(relay, need_a, need_b, a, b, ab, bb);
  if (relay < 0) return bytes;
  const auto r = static_cast<size_t>(relay);
  if (need_a) has_a_[r * a_blocks_ + a] = stamp_;
  if (need_b) has_b_[r * b_blocks_ + b] = stamp_;
  traffic& t = traffic_[r];
  t.in += bytes;
  t.out += (need_a ? ab : 0) + (need_b ? bb : 0);
  t.up += cb;
  return bytes;
}

double relay_ledger::link_seconds(const std::vector<relay_profile>& relays) const {
  double worst = 0;
  for (size_t r = 0; r < traffic_.size() && r < relays.size(); ++r) {
    const traffic& t = traffic_[r];
    worst = std::max({worst, static_cast<double>(t.in) / relays[r].downlink,
                      static_cast<double>(t.up) / std::min(relays[r].uplink, relays[r].fanout),
                      static_cast<double>(t.out) / relays[r].fanout});
  }
  return worst;
}

}  // namespace cleave
