#include "actors/ps/engine/fold_order.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>
#include <utility>

#include "kernels/row_parts.hpp"

namespace cleave {

namespace {

bool disjoint(const std::vector<c_block>& blocks, bool rows) {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (const auto& b : blocks) ranges.emplace_back(rows ? b.m0 : b.n0, rows ? b.m1 : b.n1);
  std::sort(ranges.begin(), ranges.end());
  ranges.erase(std::unique(ranges.begin(), ranges.end()), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second) return false;
  return true;
}

}  // namespace

fold_order::fold_order(const std::vector<c_block>& blocks, int64_t c_rows, int64_t c_cols, float beta)
    : links_(blocks.size()), beta_(beta) {
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, int32_t> last;
  int64_t covered = 0;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const c_block& b = blocks[i];
    auto [it, first] = last.try_emplace({b.m0, b.m1, b.n0, b.n1}, static_cast<int32_t>(i));
    if (first) {
      covered += (b.m1 - b.m0) * (b.n1 - b.n0);
    } else {
      links_[i].after = it->second;
      links_[static_cast<size_t>(it->second)].then = static_cast<int32_t>(i);
      it->second = static_cast<int32_t>(i);
    }
    links_[i].copies = first && beta == 0.0f;
  }
  grid_ = disjoint(blocks, true) && disjoint(blocks, false) && covered == c_rows * c_cols;
  if (!grid_)
    for (size_t i = 0; i < links_.size(); ++i) {
      links_[i].after = static_cast<int32_t>(i) - 1;
      links_[i].then = i + 1 < links_.size() ? static_cast<int32_t>(i + 1) : -1;
      links_[i].copies = false;
    }
}

void fold_order::prepare(mut_view<float> c) const {
  auto cm = c.map();
  if (beta_ == 0.0f && !grid_)
    cm.setZero();
  else if (beta_ != 0.0f && beta_ != 1.0f)
    cm *= beta_;
}

std::vector<size_t> fold_order::ready(size_t i) {
  links_[i].in = true;
  std::vector<size_t> now;
  for (auto j = static_cast<int32_t>(i); j >= 0; j = links_[static_cast<size_t>(j)].then) {
    auto& l = links_[static_cast<size_t>(j)];
    if (!l.in || l.folded || (l.after >= 0 && !links_[static_cast<size_t>(l.after)].folded)) break;
    l.folded = true;
    now.push_back(static_cast<size_t>(j));
  }
  return now;
}

void fold_tile(mut_view<float> c, const c_block& block, const float* result, bool copies) {
  const int64_t rows = block.m1 - block.m0;
  const int64_t cols = block.n1 - block.n0;
  const int parts = row_parts(rows, static_cast<double>(rows) * static_cast<double>(cols) * sizeof(float));
  for_each_part(parts, rows, 1, [&](int, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* dst = c.data + (block.m0 + r) * c.ld + block.n0;
      const float* src = result + r * cols;
      if (copies)
        std::memcpy(dst, src, static_cast<size_t>(cols) * sizeof(float));
      else
        for (int64_t x = 0; x < cols; ++x) dst[x] += src[x];
    }
  });
}

}  // namespace cleave
