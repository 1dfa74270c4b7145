#include "kernels/lsh/lsh_hash.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/random.hpp"

namespace cleave {

namespace {

int32_t log2_exact(int32_t v) {
  int32_t bits = 0;
  while ((1 << bits) < v) ++bits;
  return (1 << bits) == v ? bits : -1;
}

[[noreturn]] void refuse(const std::string& why) {
  throw std::invalid_argument("lsh: " + why);
}

// log C(n, k) for the collision formula's ratios.
double log_choose(int64_t n, int64_t k) {
  return std::lgamma(static_cast<double>(n) + 1) - std::lgamma(static_cast<double>(k) + 1)
         - std::lgamma(static_cast<double>(n - k) + 1);
}

// A later coordinate beats an equal earlier one: the rule dwta_codes and
// the collision formula share.
bool beats(float v, int64_t i, float best, int64_t best_i) {
  return v > best || (v == best && i > best_i);
}

}  // namespace

const char* to_string(lsh_family f) {
  return f == lsh_family::simhash ? "simhash" : "dwta";
}

void check_lsh_config(const lsh_config& cfg, int64_t dim) {
  if (dim <= 0) refuse("the hashed vectors need at least one coordinate");
  if (cfg.hashes <= 0 || cfg.tables <= 0)
    refuse("K (hashes per table) and L (tables) must be positive, got K=" + std::to_string(cfg.hashes)
           + " L=" + std::to_string(cfg.tables));
  if (cfg.tables > 4096) refuse("at most 4096 tables, got " + std::to_string(cfg.tables));
  if (cfg.family == lsh_family::simhash) {
    if (cfg.hashes > 32) refuse("a SimHash code holds at most 32 hashes, got K=" + std::to_string(cfg.hashes));
    if (cfg.simhash_sparsity <= 0) refuse("the SimHash sparsity must be positive");
    return;
  }
  const int32_t bits = log2_exact(cfg.bin_size);
  if (bits < 1 || bits > 8)
    refuse("the DWTA bin size must be a power of two in [2, 256], got " + std::to_string(cfg.bin_size));
  if (cfg.hashes * bits > 32)
    refuse("a DWTA code of K=" + std::to_string(cfg.hashes) + " hashes of bins of "
           + std::to_string(cfg.bin_size) + " needs " + std::to_string(cfg.hashes * bits)
           + " bits, more than 32");
  if (dim > (int64_t{1} << 24))  // a coordinate and a bin position share the low 32 bits of a key
    refuse("DWTA hashes vectors of at most 2^24 coordinates, got " + std::to_string(dim));
  if (cfg.bin_size > dim)
    refuse("a DWTA bin of " + std::to_string(cfg.bin_size) + " is larger than the dimension "
           + std::to_string(dim));
}

lsh_hash::lsh_hash(const lsh_config& cfg, int64_t dim) : cfg_(cfg), dim_(dim) {
  check_lsh_config(cfg, dim);
  rng r(derive_seed(cfg.seed, 0x15a));
  const auto hashes = static_cast<int64_t>(cfg.hashes) * cfg.tables;
  if (cfg.family == lsh_family::simhash) {
    offsets_.push_back(0);
    for (int64_t h = 0; h < hashes; ++h) {
      for (int64_t i = 0; i < dim; ++i) {
        if (cfg.simhash_sparsity > 1 && r.below(static_cast<uint64_t>(cfg.simhash_sparsity)) != 0)
          continue;
        coords_.push_back(static_cast<int32_t>(i));
        negative_.push_back(static_cast<uint8_t>(r.next() & 1));
      }
      offsets_.push_back(static_cast<uint32_t>(coords_.size()));
    }
    return;
  }
  bin_bits_ = log2_exact(cfg.bin_size);
  const auto need = static_cast<size_t>(hashes * cfg.bin_size);
  coords_.reserve(need);
  while (coords_.size() < need) {
    auto perm = permutation(dim, r.next());
    // Whole bins only: a bin never straddles two permutations, so its
    // coordinates are distinct.
    const int64_t usable = dim - dim % cfg.bin_size;
    for (int64_t i = 0; i < usable && coords_.size() < need; ++i)
      coords_.push_back(static_cast<int32_t>(perm[static_cast<size_t>(i)]));
  }
  const int64_t groups = (hashes + 7) / 8;
  lanes_.assign(static_cast<size_t>(groups * cfg.bin_size * 8), 0);
  for (int64_t h = 0; h < hashes; ++h)
    for (int64_t p = 0; p < cfg.bin_size; ++p)
      lanes_[static_cast<size_t>(((h / 8) * cfg.bin_size + p) * 8 + h % 8)] =
        coords_[static_cast<size_t>(h * cfg.bin_size + p)];
  max_probes_ = 64;
  probes_.resize(static_cast<size_t>(hashes * max_probes_));
  for (auto& p : probes_) p = static_cast<uint32_t>(r.below(static_cast<uint64_t>(hashes)));
}

void lsh_hash::codes(const float* x, uint32_t* out) const {
  if (cfg_.family == lsh_family::simhash)
    simhash_codes(x, out);
  else
    dwta_codes(x, out);
}

void lsh_hash::simhash_codes(const float* x, uint32_t* out) const {
  for (int32_t t = 0; t < cfg_.tables; ++t) {
    uint32_t code = 0;
    for (int32_t j = 0; j < cfg_.hashes; ++j) {
      const size_t h = static_cast<size_t>(t) * static_cast<size_t>(cfg_.hashes) + static_cast<size_t>(j);
      double sum = 0;
      for (uint32_t e = offsets_[h]; e < offsets_[h + 1]; ++e) {
        const double v = x[coords_[e]];
        sum += negative_[e] ? -v : v;
      }
      code = (code << 1) | (sum >= 0 ? 1u : 0u);
    }
    out[t] = code;
  }
}

void lsh_hash::dwta_codes(const float* x, uint32_t* out) const {
  const int64_t hashes = static_cast<int64_t>(cfg_.hashes) * cfg_.tables;
  const auto bin = static_cast<size_t>(cfg_.bin_size);
  constexpr uint32_t empty = UINT32_MAX;
  thread_local std::vector<uint32_t> winners;
  winners.assign(static_cast<size_t>(hashes), empty);
  // A bin's winner is the largest key: the value (its float bits mapped to
  // an unsigned in the same order) above the coordinate, so that a tie goes
  // to the later coordinate as in `beats`, above the position in the bin; a
  // zero keys 0 and never wins. Eight bins at a time, without branches (the
  // winner among random coordinates is unpredictable): the compiler
  // vectorises the lanes.
  thread_local std::vector<uint32_t> bits;  // x's floats as their bits
  bits.resize(static_cast<size_t>(dim_));
  std::memcpy(bits.data(), x, sizeof(float) * static_cast<size_t>(dim_));
  for (int64_t g = 0; g * 8 < hashes; ++g) {
    const int32_t* c = lanes_.data() + static_cast<size_t>(g) * bin * 8;
    uint64_t best[8] = {};
    for (size_t p = 0; p < bin; ++p)
      for (size_t j = 0; j < 8; ++j) {
        const int32_t coord = c[p * 8 + j];
        const uint32_t b = bits[static_cast<size_t>(coord)];
        // Negative: all bits flipped; positive: the sign bit set.
        const uint32_t ordered = b ^ (static_cast<uint32_t>(static_cast<int32_t>(b) >> 31) | 0x80000000u);
        const uint64_t key = (b & 0x7fffffffu) == 0
                               ? 0
                               : static_cast<uint64_t>(ordered) << 32
                                   | static_cast<uint64_t>(static_cast<uint32_t>(coord)) << 8 | p;
        best[j] = std::max(best[j], key);
      }
    for (int64_t j = 0; j < 8 && g * 8 + j < hashes; ++j)
      winners[static_cast<size_t>(g * 8 + j)] =
        best[j] == 0 ? empty : static_cast<uint32_t>(best[j] & 0xff);
  }
  for (int32_t t = 0; t < cfg_.tables; ++t) {
    uint32_t code = 0;
    for (int32_t j = 0; j < cfg_.hashes; ++j) {
      const size_t h = static_cast<size_t>(t) * static_cast<size_t>(cfg_.hashes) + static_cast<size_t>(j);
      uint32_t w = winners[h];
      // Densification: an empty bin takes the winner of the first non-empty
      // bin on its probe sequence, salted by the attempt so that two empty
      // bins borrowing from one bin do not always agree.
      for (int32_t a = 0; w == empty && a < max_probes_; ++a) {
        const uint32_t from = winners[probes_[h * static_cast<size_t>(max_probes_) + static_cast<size_t>(a)]];
        if (from != empty) w = (from + static_cast<uint32_t>(a) + 1) & ((1u << bin_bits_) - 1);
      }
      if (w == empty) w = 0;  // every probed bin empty: x is (almost) all zeros
      code = (code << bin_bits_) | w;
    }
    out[t] = code;
  }
}

double dwta_collision_probability(const float* x, const float* y, int64_t dim, int32_t bin_size) {
  const double total = log_choose(dim, bin_size);
  double p = 0;
  for (int64_t c = 0; c < dim; ++c) {
    int64_t below = 0;
    for (int64_t j = 0; j < dim; ++j)
      if (j != c && beats(x[c], c, x[j], j) && beats(y[c], c, y[j], j)) ++below;
    if (below >= bin_size - 1) p += std::exp(log_choose(below, bin_size - 1) - total);
  }
  return p;
}

double simhash_collision_probability(const float* x, const float* y, int64_t dim) {
  double xy = 0, xx = 0, yy = 0;
  for (int64_t i = 0; i < dim; ++i) {
    xy += static_cast<double>(x[i]) * y[i];
    xx += static_cast<double>(x[i]) * x[i];
    yy += static_cast<double>(y[i]) * y[i];
  }
  const double cosine = std::max(-1.0, std::min(1.0, xy / std::sqrt(xx * yy)));
  return 1 - std::acos(cosine) / 3.141592653589793;
}

}  // namespace cleave
