#include "actors/device/lies.hpp"

#include <cmath>
#include <cstdlib>
#include <limits>

#include "schema/errors.hpp"

namespace cleave {

namespace {

constexpr const char* kind_names = "element, row, scale, stale, nan or shape";

// The move of one element: relative to the element, or to the tile's rms
// when the element is small, so a near-zero entry still moves visibly. An
// all-zero tile (dead activations) moves by `size` itself, or the lie would
// be no lie.
double amount(double c, double rms, double size) {
  const double base = std::max(std::abs(c), rms);
  return size * (base > 0 ? base : 1.0);
}

bool move_element(float& c, double rms, double size, bool negative) {
  const float before = c;
  const double delta = amount(c, rms, size);
  c = static_cast<float>(c + (negative ? -delta : delta));
  return c != before;
}

bool valid_tile(const std::vector<float>& data, int64_t rows, int64_t cols) {
  return rows > 0 && cols > 0 && static_cast<int64_t>(data.size()) == rows * cols;
}

// strtod over the whole of `text`, or nothing.
bool parse_number(std::string_view text, double& out) {
  if (text.empty() || text.size() > 64) return false;
  const std::string s{text};
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

}  // namespace

const char* to_string(lie_kind k) {
  switch (k) {
    case lie_kind::element: return "element";
    case lie_kind::row: return "row";
    case lie_kind::scale: return "scale";
    case lie_kind::stale: return "stale";
    case lie_kind::nan: return "nan";
    case lie_kind::shape: return "shape";
  }
  return "?";
}

caf::expected<lie_kind> parse_lie_kind(std::string_view name) {
  for (size_t i = 0; i < lie_kind_count; ++i) {
    const auto k = static_cast<lie_kind>(i);
    if (name == to_string(k)) return k;
  }
  return fail("unknown lie kind '" + std::string{name} + "' (expected " + kind_names + ")");
}

double default_lie_size(lie_kind k) { return k == lie_kind::scale ? 0.5 : 1.0; }

caf::error check_lie(const lie& l) {
  if (!(l.rate > 0 && l.rate <= 1)) return fail("rate must be in (0, 1]");
  if (!(std::isfinite(l.size) && l.size > 0)) return fail("size must be finite and > 0");
  return caf::none;
}

caf::expected<std::vector<lie>> parse_lies(std::string_view spec) {
  std::vector<lie> out;
  if (spec.empty()) return fail("no lies given (expected KIND:RATE[:SIZE],...)");
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string_view entry = spec.substr(start, comma - start);
    start = comma + 1;
    const std::string where = "lie '" + std::string{entry} + "': ";
    std::vector<std::string_view> parts;
    for (size_t p = 0; p <= entry.size();) {
      const size_t colon = std::min(entry.find(':', p), entry.size());
      parts.push_back(entry.substr(p, colon - p));
      p = colon + 1;
    }
    if (parts.size() < 2 || parts.size() > 3) return fail(where + "expected KIND:RATE[:SIZE]");
    auto kind = parse_lie_kind(parts[0]);
    if (!kind) return fail(where + describe(kind.error()));
    lie l{*kind};
    if (!parse_number(parts[1], l.rate)) return fail(where + "rate is not a number");
    if (parts.size() == 3 && !parse_number(parts[2], l.size)) return fail(where + "size is not a number");
    if (auto err = check_lie(l)) return fail(where + describe(err));
    for (const auto& other : out)
      if (other.kind == l.kind) return fail(where + "kind " + to_string(l.kind) + " given twice");
    out.push_back(l);
  }
  return out;
}

std::string to_string(const std::vector<lie>& lies) {
  std::string out;
  for (const auto& l : lies) {
    if (!out.empty()) out += ',';
    out += std::string{to_string(l.kind)} + ':' + std::to_string(l.rate) + ':' + std::to_string(l.size);
  }
  return out;
}

double tile_rms(const std::vector<float>& data) {
  if (data.empty()) return 0;
  double sum = 0;
  for (float v : data) sum += static_cast<double>(v) * v;
  return std::sqrt(sum / static_cast<double>(data.size()));
}

bool corrupt_element_at(std::vector<float>& data, int64_t rows, int64_t cols, int64_t index,
                        double size, bool negative) {
  if (!valid_tile(data, rows, cols) || index < 0 || index >= rows * cols) return false;
  return move_element(data[static_cast<size_t>(index)], tile_rms(data), size, negative);
}

bool corrupt_element(std::vector<float>& data, int64_t rows, int64_t cols, double size, rng& r) {
  if (!valid_tile(data, rows, cols)) return false;
  const auto index = static_cast<int64_t>(r.below(static_cast<uint64_t>(rows * cols)));
  const bool negative = (r.next() & 1) != 0;
  return corrupt_element_at(data, rows, cols, index, size, negative);
}

bool corrupt_row_at(std::vector<float>& data, int64_t rows, int64_t cols, int64_t row,
                    double size, bool negative) {
  if (!valid_tile(data, rows, cols) || row < 0 || row >= rows) return false;
  const double rms = tile_rms(data);  // of the honest tile, before any element moves
  bool changed = false;
  float* first = data.data() + row * cols;
  for (int64_t j = 0; j < cols; ++j) changed |= move_element(first[j], rms, size, negative);
  return changed;
}

bool corrupt_row(std::vector<float>& data, int64_t rows, int64_t cols, double size, rng& r) {
  if (!valid_tile(data, rows, cols)) return false;
  const auto row = static_cast<int64_t>(r.below(static_cast<uint64_t>(rows)));
  const bool negative = (r.next() & 1) != 0;
  return corrupt_row_at(data, rows, cols, row, size, negative);
}

bool corrupt_scale(std::vector<float>& data, int64_t rows, int64_t cols, double size) {
  if (!valid_tile(data, rows, cols)) return false;
  bool changed = false;
  for (float& v : data) {
    const float before = v;
    v = static_cast<float>(v * (1.0 + size));
    changed |= v != before;
  }
  return changed;
}

bool corrupt_nan_at(std::vector<float>& data, int64_t rows, int64_t cols, int64_t index) {
  if (!valid_tile(data, rows, cols) || index < 0 || index >= rows * cols) return false;
  data[static_cast<size_t>(index)] = std::numeric_limits<float>::quiet_NaN();
  return true;
}

bool corrupt_nan(std::vector<float>& data, int64_t rows, int64_t cols, rng& r) {
  if (!valid_tile(data, rows, cols)) return false;
  return corrupt_nan_at(data, rows, cols, static_cast<int64_t>(r.below(static_cast<uint64_t>(rows * cols))));
}

int64_t corrupt_shape(std::vector<float>& data, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0 || static_cast<int64_t>(data.size()) != rows * cols) return cols;
  const int64_t wide = cols + 1;
  data.resize(static_cast<size_t>(rows * wide), 0.0f);
  // From the last row back, so no row is overwritten before it has moved.
  for (int64_t i = rows - 1; i >= 0; --i) {
    for (int64_t j = cols - 1; j >= 0; --j) data[static_cast<size_t>(i * wide + j)] = data[static_cast<size_t>(i * cols + j)];
    data[static_cast<size_t>(i * wide + cols)] = 0.0f;
  }
  return wide;
}

liar::liar(std::vector<lie> lies, uint64_t seed, int64_t device_index)
  : lies_(std::move(lies)),
    // A stream of its own ("lies"), so lying draws nothing from the streams
    // the same --seed drives elsewhere (initialisation, data, churn).
    rng_(derive_seed(seed ^ 0x6c696573ULL, static_cast<uint64_t>(device_index))) {
  for (const auto& l : lies_) keeps_past_ |= l.kind == lie_kind::stale;
}

uint64_t liar::told() const {
  uint64_t n = 0;
  for (auto c : told_) n += c;
  return n;
}

std::string liar::summary() const {
  std::string out;
  for (size_t i = 0; i < lie_kind_count; ++i) {
    if (told_[i] == 0) continue;
    if (!out.empty()) out += ", ";
    out += std::string{to_string(static_cast<lie_kind>(i))} + ' ' + std::to_string(told_[i]);
  }
  return out.empty() ? "none" : out;
}

bool liar::tell(const lie& l, tile_result& r) {
  switch (l.kind) {
    case lie_kind::element: return corrupt_element(r.data, r.rows, r.cols, l.size, rng_);
    case lie_kind::row: return corrupt_row(r.data, r.rows, r.cols, l.size, rng_);
    case lie_kind::scale: return corrupt_scale(r.data, r.rows, r.cols, l.size);
    case lie_kind::nan: return corrupt_nan(r.data, r.rows, r.cols, rng_);
    case lie_kind::shape: {
      const int64_t cols = corrupt_shape(r.data, r.rows, r.cols);
      const bool changed = cols != r.cols;
      r.cols = cols;
      return changed;
    }
    case lie_kind::stale: {
      auto it = past_.find({r.key.gemm, r.key.tile, r.rows, r.cols});
      if (it == past_.end() || it->second.step >= r.key.step) return false;
      r.data = it->second.data;  // the copy stays: the same stale answer may be told again
      return true;
    }
  }
  return false;
}

void liar::remember(const tile_key& key, int64_t rows, int64_t cols, std::vector<float> data) {
  past_[{key.gemm, key.tile, rows, cols}] = past{key.step, std::move(data), ++seq_};
  if (past_.size() <= stale_capacity) return;
  auto oldest = past_.begin();
  for (auto it = past_.begin(); it != past_.end(); ++it)
    if (it->second.seq < oldest->second.seq) oldest = it;
  past_.erase(oldest);
}

bool liar::apply(tile_result& r) {
  const lie* chosen = nullptr;
  for (const auto& l : lies_)
    if (rng_.uniform() < l.rate) {
      chosen = &l;
      break;
    }
  if (chosen == nullptr) {
    if (keeps_past_) remember(r.key, r.rows, r.cols, r.data);
    return false;
  }
  // Only a stale liar pays for a copy of the honest tile.
  std::vector<float> honest;
  if (keeps_past_) honest = r.data;
  const tile_key key = r.key;
  const int64_t rows = r.rows, cols = r.cols;
  const bool lied = tell(*chosen, r);
  if (lied) ++told_[static_cast<size_t>(chosen->kind)];
  if (keeps_past_) remember(key, rows, cols, std::move(honest));
  return lied;
}

}  // namespace cleave
