#include "actors/ps/engine/snapshot_shelf.hpp"

namespace cleave {

namespace {

bool overlaps(const std::map<snapshot_shelf::rect, uint64_t>& blocks, const snapshot_shelf::rect& r) {
  const auto [r0, r1, c0, c1] = r;
  for (const auto& [o, key] : blocks) {
    const auto [o0, o1, p0, p1] = o;
    if (r0 < o1 && o0 < r1 && c0 < p1 && p0 < c1) return true;
  }
  return false;
}

}  // namespace

snapshot_shelf::spot snapshot_shelf::put(const place& p, const rect& r, std::optional<uint64_t> key,
                                         const copier& copy, bool for_the_step) {
  const auto [data, rows, cols, ld] = p;
  const auto [r0, r1, c0, c1] = r;
  auto at = [&, cols = cols, r0 = r0, c0 = c0](const std::shared_ptr<std::vector<float>>& s) {
    return s->data() + r0 * cols + c0;
  };
  auto into = [&](shelved& s, const std::shared_ptr<std::vector<float>>& snap) {
    const uint64_t k = copy(at(snap));
    ++copies_;
    s.blocks.emplace(r, key.value_or(k));
    return spot{snap, key.value_or(k)};
  };
  auto& s = shelves_[p];
  if (auto snap = s.snapshot.lock()) {
    if (auto b = s.blocks.find(r); b != s.blocks.end()) {
      const uint64_t k = key ? *key : copy(nullptr);
      if (k == b->second) return {snap, k};
      key = k;  // other values than the copy's: a snapshot of their own
    } else if (!overlaps(s.blocks, r)) {
      return into(s, snap);
    }
  }
  auto snap = pool_.acquire(static_cast<size_t>(rows * cols), for_the_step);
  ++taken_;
  s = shelved{snap, {}};
  return into(s, snap);
}

void snapshot_shelf::begin_step() {
  shelves_.clear();
  pool_.begin_step();
}

void snapshot_shelf::release() {
  shelves_.clear();
  pool_.release();
}

}  // namespace cleave
