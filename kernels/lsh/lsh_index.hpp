#pragma once
// A wide layer's LSH index (SLIDE): its neurons' weight vectors hashed into
// tables, refreshed on a schedule as the weights move. Pure.

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/lsh/lsh_hash.hpp"
#include "kernels/lsh/lsh_tables.hpp"

namespace cleave {

// When the tables are refreshed. A rehash re-inserts every neuron's current
// weights under the same hash functions; a rebuild draws new functions and
// then rehashes. Rebuilds fall at steps R, R + R g, R + R g + R g^2, ...
// (R = rebuild_every, g = rebuild_growth >= 1: SLIDE's decaying rate, as the
// weights settle); rehashes every rehash_every steps. 0 turns either off.
struct lsh_schedule {
  int64_t rehash_every = 50;
  int64_t rebuild_every = 500;
  double rebuild_growth = 1.0;
};

enum class lsh_refresh : uint8_t { none, rehash, rebuild };

// What is due after training step `step` (1-based); a rebuild wins over a
// rehash at the same step. Throws std::invalid_argument for negative periods
// or a growth below 1.
lsh_refresh refresh_due(const lsh_schedule& s, int64_t step);

// The last step at or before `step` at which a refresh fell (0: none yet),
// and the rebuilds up to and including `step`: the hash generation then.
int64_t last_refresh(const lsh_schedule& s, int64_t step);
int64_t rebuilds_by(const lsh_schedule& s, int64_t step);

class lsh_index {
 public:
  // neurons > 0; dim is the length of a neuron's weight vector.
  lsh_index(const lsh_config& hash, int64_t dim, int32_t neurons, int32_t bucket_size,
            bucket_policy policy);

  // Hashes neuron j's weights, weights + j * ld (dim floats), for every j.
  void rehash(const float* weights, int64_t ld);
  // New hash functions (the next generation of the configured seed), then rehash.
  void rebuild(const float* weights, int64_t ld);
  // Applies refresh_due(schedule, step); returns what it did.
  lsh_refresh refresh(const lsh_schedule& schedule, int64_t step, const float* weights, int64_t ld);
  // The index refresh() leaves at a refresh step `step` whose weights these
  // are: that step's generation of hash functions over them. A rehash
  // restarts the buckets' random draws from the generation's seed, so the
  // tables depend only on the weights and the generation, and a run resumed
  // from a checkpoint taken at a refresh step rebuilds them exactly.
  void resume_at(const lsh_schedule& schedule, int64_t step, const float* weights, int64_t ld);

  // x's codes, one per table (x has dim floats).
  void codes(const float* x, uint32_t* out) const { hash_->codes(x, out); }
  // x's active set (see active_set); `marks` is scratch of neurons() bytes.
  std::vector<int32_t> active(const float* x, const std::vector<int32_t>& forced, int32_t min_active,
                              rng& draw, std::vector<uint8_t>& marks) const;

  int32_t neurons() const { return neurons_; }
  int32_t tables() const { return tables_.tables(); }
  uint64_t generation() const { return generation_; }

 private:
  // The hash functions of generation g (0: the configured seed).
  void use_generation(uint64_t g);

  lsh_config config_;
  int64_t dim_;
  int32_t neurons_;
  int32_t bucket_size_;
  bucket_policy policy_;
  uint64_t generation_ = 0;
  std::unique_ptr<lsh_hash> hash_;
  lsh_tables tables_;
};

}  // namespace cleave
