#include "kernels/lsh/lsh_index.hpp"

#include <stdexcept>
#include <string>

namespace cleave {

lsh_refresh refresh_due(const lsh_schedule& s, int64_t step) {
  if (s.rehash_every < 0 || s.rebuild_every < 0)
    throw std::invalid_argument("lsh: refresh periods cannot be negative");
  if (!(s.rebuild_growth >= 1))
    throw std::invalid_argument("lsh: the rebuild growth must be at least 1, got "
                                + std::to_string(s.rebuild_growth));
  if (step <= 0) return lsh_refresh::none;
  if (s.rebuild_every > 0) {
    if (s.rebuild_growth == 1) {
      if (step % s.rebuild_every == 0) return lsh_refresh::rebuild;
    } else {
      // The rebuild steps grow geometrically apart: a few dozen at most
      // before they pass any step a run reaches.
      double period = static_cast<double>(s.rebuild_every), at = period;
      while (at < static_cast<double>(step)) {
        period *= s.rebuild_growth;
        at += period;
      }
      if (static_cast<int64_t>(at) == step) return lsh_refresh::rebuild;
    }
  }
  if (s.rehash_every > 0 && step % s.rehash_every == 0) return lsh_refresh::rehash;
  return lsh_refresh::none;
}

lsh_index::lsh_index(const lsh_config& hash, int64_t dim, int32_t neurons, int32_t bucket_size,
                     bucket_policy policy)
    : config_(hash),
      dim_(dim),
      neurons_(neurons),
      hash_(std::make_unique<lsh_hash>(hash, dim)),
      tables_(hash.tables, bucket_size, policy, hash.seed) {
  if (neurons <= 0)
    throw std::invalid_argument("lsh: a layer needs at least one neuron, got " + std::to_string(neurons));
}

void lsh_index::rehash(const float* weights, int64_t ld) {
  tables_.clear();
  std::vector<uint32_t> codes(static_cast<size_t>(tables_.tables()));
  for (int32_t j = 0; j < neurons_; ++j) {
    hash_->codes(weights + static_cast<int64_t>(j) * ld, codes.data());
    tables_.insert(j, codes.data());
  }
}

void lsh_index::rebuild(const float* weights, int64_t ld) {
  ++generation_;
  lsh_config next = config_;
  next.seed = derive_seed(config_.seed, generation_);
  hash_ = std::make_unique<lsh_hash>(next, dim_);
  rehash(weights, ld);
}

lsh_refresh lsh_index::refresh(const lsh_schedule& schedule, int64_t step, const float* weights,
                               int64_t ld) {
  const lsh_refresh due = refresh_due(schedule, step);
  if (due == lsh_refresh::rebuild) rebuild(weights, ld);
  if (due == lsh_refresh::rehash) rehash(weights, ld);
  return due;
}

std::vector<int32_t> lsh_index::active(const float* x, const std::vector<int32_t>& forced,
                                       int32_t min_active, rng& draw,
                                       std::vector<uint8_t>& marks) const {
  thread_local std::vector<uint32_t> codes;
  codes.resize(static_cast<size_t>(tables_.tables()));
  hash_->codes(x, codes.data());
  return active_set(tables_, codes.data(), forced, neurons_, min_active, draw, marks);
}

}  // namespace cleave
