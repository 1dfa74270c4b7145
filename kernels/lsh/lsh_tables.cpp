#include "kernels/lsh/lsh_tables.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/gemm.hpp"

namespace cleave {

const char* to_string(bucket_policy p) {
  return p == bucket_policy::fifo ? "fifo" : "reservoir";
}

lsh_tables::lsh_tables(int32_t tables, int32_t bucket_size, bucket_policy policy, uint64_t seed)
    : bucket_size_(bucket_size), policy_(policy) {
  if (tables <= 0 || bucket_size <= 0)
    throw std::invalid_argument("lsh: tables and bucket size must be positive, got "
                                + std::to_string(tables) + " and " + std::to_string(bucket_size));
  tables_.resize(static_cast<size_t>(tables));
  const uint64_t base = derive_seed(seed, 0xb0c);
  for (int32_t t = 0; t < tables; ++t) draws_.emplace_back(derive_seed(base, static_cast<uint64_t>(t)));
}

void lsh_tables::insert_into(size_t t, int32_t id, uint32_t code) {
  const auto cap = static_cast<size_t>(bucket_size_);
  auto& b = tables_[t][code];
  ++b.seen;
  if (b.ids.size() < cap) {
    b.ids.push_back(id);
  } else if (policy_ == bucket_policy::fifo) {
    b.ids[b.next] = id;
    b.next = static_cast<uint32_t>((b.next + 1) % cap);
  } else {
    const uint64_t slot = draws_[t].below(b.seen);
    if (slot < cap) b.ids[slot] = id;
  }
}

void lsh_tables::insert(int32_t id, const uint32_t* codes) {
  for (size_t t = 0; t < tables_.size(); ++t) insert_into(t, id, codes[t]);
}

void lsh_tables::insert_all(const uint32_t* codes, int32_t count) {
  const auto n = static_cast<int64_t>(tables_.size());
#pragma omp parallel for num_threads(compute_threads()) schedule(dynamic, 1)
  for (int64_t t = 0; t < n; ++t) {
    tables_[static_cast<size_t>(t)].reserve(static_cast<size_t>(count));
    for (int32_t id = 0; id < count; ++id)
      insert_into(static_cast<size_t>(t), id, codes[static_cast<int64_t>(id) * n + t]);
  }
}

void lsh_tables::clear() {
  for (auto& t : tables_) t.clear();
}

std::vector<int32_t> lsh_tables::bucket(int32_t t, uint32_t code) const {
  const auto& table = tables_.at(static_cast<size_t>(t));
  auto it = table.find(code);
  return it == table.end() ? std::vector<int32_t>{} : it->second.ids;
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
