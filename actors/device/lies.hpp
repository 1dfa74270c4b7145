#pragma once
// Fault injection: devices that lie about their results, so the PS's
// verification of returned tiles has something to catch. Never on by
// default: an emulated device lies only when --byzantine=FILE names it, a
// device process only with --lie=SPEC. Plain code, no actors; the
// corruptions are free functions so a benchmark can apply them too.
//
// Kinds (size = relative magnitude, default in brackets):
//   element  one random element moves by size * max(|c|, rms(tile))   [1]
//   row      every element of one random row moves the same way         [1]
//   scale    the whole tile times (1 + size)                            [0.5]
//   stale    the tile this device computed for the same (gemm, tile) and
//            shape at an earlier step; honest when it has none
//   nan      one random element becomes a quiet NaN
//   shape    the tile gets one extra column (zeros)

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <caf/expected.hpp>

#include "kernels/random.hpp"
#include "schema/messages.hpp"

namespace cleave {

enum class lie_kind { element, row, scale, stale, nan, shape };

constexpr size_t lie_kind_count = 6;

const char* to_string(lie_kind k);
// "element", "row", ...; an error lists the known names.
caf::expected<lie_kind> parse_lie_kind(std::string_view name);
double default_lie_size(lie_kind k);

struct lie {
  lie_kind kind = lie_kind::element;
  double rate = 1;  // in (0, 1]: the chance a result is corrupted this way
  double size = 1;  // > 0: relative magnitude (element, row, scale)

  lie() = default;
  explicit lie(lie_kind k, double r = 1) : kind(k), rate(r), size(default_lie_size(k)) {}
  lie(lie_kind k, double r, double s) : kind(k), rate(r), size(s) {}
  bool operator==(const lie& o) const { return kind == o.kind && rate == o.rate && size == o.size; }
};

// rate in (0, 1], size finite and > 0; the error says which.
caf::error check_lie(const lie& l);

// "KIND:RATE[:SIZE],KIND:RATE[:SIZE],...", e.g. "element:0.5,stale:1". Each
// kind at most once. Errors name the bad entry.
caf::expected<std::vector<lie>> parse_lies(std::string_view spec);

// "element:0.5:1,stale:1:1": the canonical form, for logs.
std::string to_string(const std::vector<lie>& lies);

// The corruptions of a row-major rows x cols tile. Each returns whether the
// tile changed (an empty tile, or a move lost to rounding, is still honest).
// The _at forms take the position and sign, for benchmarks and tests.
bool corrupt_element_at(std::vector<float>& data, int64_t rows, int64_t cols, int64_t index,
                        double size, bool negative);
bool corrupt_element(std::vector<float>& data, int64_t rows, int64_t cols, double size, rng& r);
bool corrupt_row_at(std::vector<float>& data, int64_t rows, int64_t cols, int64_t row,
                    double size, bool negative);
bool corrupt_row(std::vector<float>& data, int64_t rows, int64_t cols, double size, rng& r);
bool corrupt_scale(std::vector<float>& data, int64_t rows, int64_t cols, double size);
bool corrupt_nan_at(std::vector<float>& data, int64_t rows, int64_t cols, int64_t index);
bool corrupt_nan(std::vector<float>& data, int64_t rows, int64_t cols, rng& r);
// Returns the new column count (cols + 1); data holds rows * (cols + 1).
int64_t corrupt_shape(std::vector<float>& data, int64_t rows, int64_t cols);

// sqrt(mean(c^2)) over the tile, 0 when empty.
double tile_rms(const std::vector<float>& data);

// One device's lies. Deterministic: the same lies, seed and device index
// give the same corruptions for the same sequence of results.
class liar {
 public:
  // Remembers past results (for stale) at this many (gemm, tile, shape) places.
  static constexpr size_t stale_capacity = 256;

  liar(std::vector<lie> lies, uint64_t seed, int64_t device_index);

  // Draws once per lie, in order; the first that fires corrupts `r`.
  // Returns whether `r` now lies.
  bool apply(tile_result& r);

  const std::vector<lie>& lies() const { return lies_; }
  uint64_t told(lie_kind k) const { return told_[static_cast<size_t>(k)]; }
  uint64_t told() const;
  // "element 3, stale 1" (kinds never told left out), for logs.
  std::string summary() const;

 private:
  struct past {
    uint64_t step = 0;
    std::vector<float> data;
    uint64_t seq = 0;  // insertion order, to evict the oldest
  };
  // (gemm, tile, rows, cols): a tile's place in the step, and its shape, so
  // a replan that reshapes a tile does not forget the other shape's answer.
  using position = std::tuple<uint32_t, uint32_t, int64_t, int64_t>;

  bool tell(const lie& l, tile_result& r);
  void remember(const tile_key& key, int64_t rows, int64_t cols, std::vector<float> data);

  std::vector<lie> lies_;
  rng rng_;
  bool keeps_past_ = false;  // a stale lie is configured
  std::map<position, past> past_;
  uint64_t seq_ = 0;
  std::array<uint64_t, lie_kind_count> told_{};
};

}  // namespace cleave
