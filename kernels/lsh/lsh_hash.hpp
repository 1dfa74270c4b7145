#pragma once
// The two LSH families of SLIDE, for sparse mode: a vector (an input's
// hidden activations, or a neuron's weights) maps to one code per table,
// each made of K hashes, and vectors that are alike share codes more often.
//
// SimHash (Charikar 2002): a hash is the sign of a random projection, here a
// sparse one whose entries are +1, -1 or 0 (Achlioptas 2003; SLIDE keeps
// one coordinate in three). Two vectors at angle theta agree on one hash
// with probability 1 - theta / pi (exactly for Gaussian projections, closely
// for these ones in high dimension).
//
// DWTA, densified winner-take-all (Chen & Shrivastava, UAI 2018): a hash is
// the position of the largest of `bin_size` coordinates chosen at random.
// The bins are cut from random permutations of the coordinates, so each bin
// is a uniform random subset. Two vectors agree on a hash exactly when the
// same coordinate wins in both; for dense vectors that has probability
//   sum over c of C(|B_c|, m - 1) / C(d, m),
// B_c = the coordinates below c in both vectors, m = bin_size, d = the
// dimension (see dwta_collision_probability). A bin whose coordinates are all
// zero (ReLU outputs are sparse; a zero is an absent coordinate and never
// wins) is empty and borrows the hash of the next
// non-empty bin along a fixed random probe sequence, so sparse vectors still
// get K L meaningful hashes.

#include <cstdint>
#include <vector>

namespace cleave {

enum class lsh_family : uint8_t { simhash, dwta };

const char* to_string(lsh_family f);

struct lsh_config {
  lsh_family family = lsh_family::dwta;
  int32_t hashes = 6;    // K: hashes per table, concatenated into its code
  int32_t tables = 50;   // L
  int32_t bin_size = 8;  // DWTA: coordinates per bin; a power of two in [2, 256]
  int32_t simhash_sparsity = 3;  // SimHash: one coordinate in this many is used (1: dense)
  uint64_t seed = 1;
};

// Throws std::invalid_argument with the reason when cfg cannot hash vectors
// of `dim` coordinates: K, L and the bin must be positive, a code must fit in
// 32 bits (K x log2(bin) for DWTA, K for SimHash), a bin cannot be larger
// than the dimension.
void check_lsh_config(const lsh_config& cfg, int64_t dim);

class lsh_hash {
 public:
  lsh_hash(const lsh_config& cfg, int64_t dim);  // check_lsh_config first

  // out[t] for t in [0, tables): x's code in table t. x has dim() floats.
  void codes(const float* x, uint32_t* out) const;

  int32_t tables() const { return cfg_.tables; }
  int64_t dim() const { return dim_; }
  const lsh_config& config() const { return cfg_; }

 private:
  void simhash_codes(const float* x, uint32_t* out) const;
  void dwta_codes(const float* x, uint32_t* out) const;

  lsh_config cfg_;
  int64_t dim_;
  int32_t bin_bits_ = 0;
  // SimHash: hash h's projection is the coordinates coords_[offsets_[h],
  // offsets_[h+1]) with signs negative_[...]. DWTA: hash h's bin is
  // coords_[h * bin_size, (h + 1) * bin_size).
  std::vector<int32_t> coords_;
  // DWTA: the same bins eight at a time, position-major, so that eight bins
  // advance together (one vector each step): bin 8 g + j's coordinate at
  // position p is lanes_[(g * bin_size + p) * 8 + j] (0 past the last bin).
  std::vector<int32_t> lanes_;
  std::vector<uint8_t> negative_;
  std::vector<uint32_t> offsets_;
  // DWTA densification: where an empty bin h looks on attempt a is
  // probes_[h * max_probes + a].
  std::vector<uint32_t> probes_;
  int32_t max_probes_ = 0;
};

// The exact probability that one DWTA hash (bins of `bin_size`) agrees on
// dense vectors x and y of `dim` coordinates (see the header comment).
// Ties count as distinct values in coordinate order, as the hash breaks them.
double dwta_collision_probability(const float* x, const float* y, int64_t dim, int32_t bin_size);

// 1 - angle(x, y) / pi: SimHash's probability for one hash.
double simhash_collision_probability(const float* x, const float* y, int64_t dim);

}  // namespace cleave
