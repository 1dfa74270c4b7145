#include "kernels/lsh/lsh_tables.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/gemm.hpp"

namespace cleave {

const char* to_string(bucket_policy p) {
  return p == bucket_policy::fifo ? "fifo" : "reservoir";
}

lsh_tables::lsh_tables(int32_t tables, int32_t bucket_size, bucket_policy policy)
    : bucket_size_(bucket_size), policy_(policy) {
  if (tables <= 0 || bucket_size <= 0)
    throw std::invalid_argument("lsh: tables and bucket size must be positive, got "
                                + std::to_string(tables) + " and " + std::to_string(bucket_size));
  tables_.resize(static_cast<size_t>(tables));
}

namespace {

// Sorts keys (code << 32 | offering position) by code, stably, so that a
// code's offerings stay in order: LSD radix over the code's 11-bit digits,
// only as many as the largest code has.
void sort_by_code(std::vector<uint64_t>& keys, std::vector<uint64_t>& scratch, uint32_t max_code) {
  constexpr int digit = 11;
  constexpr size_t radix = size_t{1} << digit;
  scratch.resize(keys.size());
  std::vector<uint32_t> counts(radix);
  for (int shift = 32; shift < 64 && (static_cast<uint64_t>(max_code) >> (shift - 32)) != 0; shift += digit) {
    std::fill(counts.begin(), counts.end(), 0);
    for (uint64_t k : keys) ++counts[(k >> shift) & (radix - 1)];
    uint32_t at = 0;
    for (auto& c : counts) at += std::exchange(c, at);
    for (uint64_t k : keys) scratch[counts[(k >> shift) & (radix - 1)]++] = k;
    keys.swap(scratch);
  }
}

}  // namespace

void lsh_tables::build_table(size_t t, const int32_t* ids, const uint32_t* codes, int64_t count,
                             uint64_t seed) {
  thread_local std::vector<uint64_t> keys, scratch;
  thread_local std::vector<uint32_t> late_seen, late_at;  // reservoir: an offering past a full bucket
  table& tab = tables_[t];
  const uint32_t* mine = codes + t * static_cast<size_t>(count);
  keys.resize(static_cast<size_t>(count));
  uint32_t max_code = 0;
  for (int64_t i = 0; i < count; ++i) {
    keys[static_cast<size_t>(i)] = static_cast<uint64_t>(mine[i]) << 32 | static_cast<uint64_t>(i);
    max_code = std::max(max_code, mine[i]);
  }
  sort_by_code(keys, scratch, max_code);

  const auto cap = static_cast<uint64_t>(bucket_size_);
  const bool reservoir = policy_ == bucket_policy::reservoir;
  if (reservoir) late_seen.assign(static_cast<size_t>(count), 0);
  if (reservoir) late_at.resize(static_cast<size_t>(count));
  tab.codes.clear();
  tab.starts.assign(1, 0);
  tab.ids.clear();
  for (size_t a = 0; a < keys.size();) {
    const auto code = static_cast<uint32_t>(keys[a] >> 32);
    size_t end = a;
    while (end < keys.size() && static_cast<uint32_t>(keys[end] >> 32) == code) ++end;
    const uint64_t offered = end - a, kept = std::min(offered, cap);
    auto position = [&](uint64_t k) { return static_cast<uint32_t>(keys[a + k]); };
    const auto first = static_cast<uint32_t>(tab.ids.size());
    for (uint64_t s = 0; s < kept; ++s) {
      // FIFO: slot s last took the newest offering k with k = s mod cap.
      const uint64_t k = reservoir || offered <= cap ? s : s + cap * ((offered - 1 - s) / cap);
      tab.ids.push_back(ids[position(k)]);
    }
    for (uint64_t k = cap; reservoir && k < offered; ++k) {
      late_seen[position(k)] = static_cast<uint32_t>(k + 1);
      late_at[position(k)] = first;
    }
    tab.codes.push_back(code);
    tab.starts.push_back(static_cast<uint32_t>(tab.ids.size()));
    a = end;
  }
  if (reservoir) {
    // Algorithm R over the offerings in order, as one id at a time draws.
    rng draw(derive_seed(derive_seed(seed, 0xb0c), t));
    for (int64_t i = 0; i < count; ++i) {
      const uint32_t seen = late_seen[static_cast<size_t>(i)];
      if (seen == 0) continue;
      const uint64_t slot = draw.below(seen);
      if (slot < cap) tab.ids[late_at[static_cast<size_t>(i)] + slot] = ids[i];
    }
  }

  // Slots at most two thirds full, so that a probe ends soon.
  int32_t bits = 1;
  while ((uint64_t{1} << bits) < tab.codes.size() + tab.codes.size() / 2 + 1) ++bits;
  tab.slot_bits = bits;
  tab.slots.assign(size_t{1} << bits, 0);
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  for (size_t g = 0; g < tab.codes.size(); ++g) {
    uint64_t s = table::slot_of(tab.codes[g], bits);
    while (tab.slots[s] != 0) s = (s + 1) & mask;
    tab.slots[s] = static_cast<uint32_t>(g + 1);
  }
}

void lsh_tables::build(const int32_t* ids, const uint32_t* codes, int64_t count, uint64_t seed) {
  if (count < 0 || count > INT32_MAX)
    throw std::invalid_argument("lsh: a table holds at most 2^31 - 1 ids, got " + std::to_string(count));
  const auto n = static_cast<int64_t>(tables_.size());
#pragma omp parallel for num_threads(compute_threads()) schedule(dynamic, 1)
  for (int64_t t = 0; t < n; ++t) build_table(static_cast<size_t>(t), ids, codes, count, seed);
}

std::vector<int32_t> lsh_tables::bucket(int32_t t, uint32_t code) const {
  const table& tab = tables_.at(static_cast<size_t>(t));
  const int64_t g = tab.group_of(code);
  if (g < 0) return {};
  return {tab.ids.begin() + tab.starts[static_cast<size_t>(g)],
          tab.ids.begin() + tab.starts[static_cast<size_t>(g) + 1]};
}

std::vector<int32_t> active_set(const lsh_tables& tables, const uint32_t* codes,
                                const std::vector<int32_t>& forced, int32_t neurons,
                                int32_t min_active, rng& draw, std::vector<uint8_t>& marks) {
  std::vector<int32_t> out;
  auto take = [&](int32_t id) {
    if (marks[static_cast<size_t>(id)]) return;
    marks[static_cast<size_t>(id)] = 1;
    out.push_back(id);
  };
  for (int32_t id : forced) {
    if (id < 0 || id >= neurons)
      throw std::out_of_range("lsh: label " + std::to_string(id) + " is outside the layer's "
                              + std::to_string(neurons) + " neurons");
  }
  for (int32_t id : forced) take(id);
  tables.for_each(codes, [&](int32_t id) {
    if (id >= 0 && id < neurons) take(id);
  });
  const auto want = static_cast<size_t>(std::min(min_active, neurons));
  // Random top-up: rejection while the set is sparse, then a cyclic scan
  // from a random start, so that it always ends.
  while (out.size() < want && out.size() * 2 < static_cast<size_t>(neurons))
    take(static_cast<int32_t>(draw.below(static_cast<uint64_t>(neurons))));
  const auto start = static_cast<int32_t>(draw.below(static_cast<uint64_t>(neurons)));
  for (int32_t i = 0; out.size() < want && i < neurons; ++i) take((start + i) % neurons);
  for (int32_t id : out) marks[static_cast<size_t>(id)] = 0;
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace cleave
