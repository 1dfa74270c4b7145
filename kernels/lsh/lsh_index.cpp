#include "kernels/lsh/lsh_index.hpp"

#include <algorithm>

#include <stdexcept>
#include <string>

#include "kernels/gemm.hpp"

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

namespace {

// Calls f(at) for each rebuild step up to `step`, in order.
template <class F>
void for_each_rebuild(const lsh_schedule& s, int64_t step, F&& f) {
  if (s.rebuild_every <= 0) return;
  double period = static_cast<double>(s.rebuild_every), at = period;
  while (static_cast<int64_t>(at) <= step) {
    f(static_cast<int64_t>(at));
    period *= s.rebuild_growth;
    at += period;
  }
}

}  // namespace

int64_t last_refresh(const lsh_schedule& s, int64_t step) {
  refresh_due(s, 1);  // the schedule's own checks
  int64_t last = s.rehash_every > 0 ? step - step % s.rehash_every : 0;
  for_each_rebuild(s, step, [&](int64_t at) { last = std::max(last, at); });
  return std::max<int64_t>(last, 0);
}

int64_t rebuilds_by(const lsh_schedule& s, int64_t step) {
  refresh_due(s, 1);
  int64_t n = 0;
  for_each_rebuild(s, step, [&](int64_t) { ++n; });
  return n;
}

lsh_index::lsh_index(const lsh_config& hash, int64_t dim, int32_t neurons, int32_t bucket_size,
                     bucket_policy policy)
    : config_(hash),
      dim_(dim),
      neurons_(neurons),
      bucket_size_(bucket_size),
      policy_(policy),
      hash_(std::make_unique<lsh_hash>(hash, dim)),
      tables_(hash.tables, bucket_size, policy) {
  if (neurons <= 0)
    throw std::invalid_argument("lsh: a layer needs at least one neuron, got " + std::to_string(neurons));
}

void lsh_index::rehash(const float* weights, int64_t ld) {
  // Every neuron's codes first (the neurons in parallel), table-major so
  // that each table's build reads its codes in one run, then the tables.
  const int64_t l = tables_.tables(), n = neurons_;
  std::vector<uint32_t> codes(static_cast<size_t>(n * l));
  std::vector<int32_t> ids(static_cast<size_t>(n));
#pragma omp parallel num_threads(compute_threads())
  {
    std::vector<uint32_t> mine(static_cast<size_t>(l));
#pragma omp for schedule(static)
    for (int64_t j = 0; j < n; ++j) {
      hash_->codes(weights + j * ld, mine.data());
      for (int64_t t = 0; t < l; ++t) codes[static_cast<size_t>(t * n + j)] = mine[static_cast<size_t>(t)];
      ids[static_cast<size_t>(j)] = static_cast<int32_t>(j);
    }
  }
  tables_.build(ids.data(), codes.data(), n, hash_->config().seed);
}

void lsh_index::use_generation(uint64_t g) {
  generation_ = g;
  lsh_config next = config_;
  if (g > 0) next.seed = derive_seed(config_.seed, g);
  hash_ = std::make_unique<lsh_hash>(next, dim_);
}

void lsh_index::rebuild(const float* weights, int64_t ld) {
  use_generation(generation_ + 1);
  rehash(weights, ld);
}

void lsh_index::resume_at(const lsh_schedule& schedule, int64_t step, const float* weights,
                          int64_t ld) {
  use_generation(static_cast<uint64_t>(rebuilds_by(schedule, step)));
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
