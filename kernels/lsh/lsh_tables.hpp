#pragma once
// SLIDE's hash tables: L tables of fixed-size buckets holding neuron ids,
// and the active set of an input (the neurons its buckets hold). Pure.

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "kernels/random.hpp"

namespace cleave {

// What a full bucket does with a new id: FIFO drops its oldest; reservoir
// keeps each id seen with equal probability (Vitter's algorithm R).
enum class bucket_policy : uint8_t { fifo, reservoir };

const char* to_string(bucket_policy p);

class lsh_tables {
 public:
  // bucket_size > 0 and tables > 0 (std::invalid_argument otherwise).
  lsh_tables(int32_t tables, int32_t bucket_size, bucket_policy policy, uint64_t seed);

  // Puts `id` into its bucket in every table: codes[t] for table t.
  void insert(int32_t id, const uint32_t* codes);
  // Inserts ids 0 .. count - 1 in order, id j's codes at codes + j * tables():
  // the tables in parallel, each exactly as insert() one id at a time fills it.
  void insert_all(const uint32_t* codes, int32_t count);
  // Empties every bucket (the start of a rehash).
  void clear();

  // Calls f(id) for every id in the buckets `codes` names, a table at a
  // time; an id in several tables comes several times.
  template <class F>
  void for_each(const uint32_t* codes, F&& f) const {
    for (size_t t = 0; t < tables_.size(); ++t) {
      auto it = tables_[t].find(codes[t]);
      if (it == tables_[t].end()) continue;
      for (int32_t id : it->second.ids) f(id);
    }
  }

  int32_t tables() const { return static_cast<int32_t>(tables_.size()); }
  int32_t bucket_size() const { return bucket_size_; }
  // The ids held in table t's bucket `code` (empty when there is none).
  std::vector<int32_t> bucket(int32_t t, uint32_t code) const;

 private:
  struct bucket_state {
    std::vector<int32_t> ids;
    uint64_t seen = 0;  // ids ever offered to it (reservoir)
    uint32_t next = 0;  // the slot FIFO replaces next
  };
  void insert_into(size_t t, int32_t id, uint32_t code);

  std::vector<std::unordered_map<uint32_t, bucket_state>> tables_;
  int32_t bucket_size_;
  bucket_policy policy_;
  std::vector<rng> draws_;  // one per table, so that tables fill independently
};

// The neurons (of `neurons`) an input works with: every id in its buckets,
// the `forced` ids (its true labels, in training), and random ids until
// there are at least `min_active` (capped at `neurons`). Ascending, no
// repeats. `marks` is scratch of `neurons` bytes, all zero on entry and on
// return; ids outside [0, neurons) in `forced` throw std::out_of_range.
std::vector<int32_t> active_set(const lsh_tables& tables, const uint32_t* codes,
                                const std::vector<int32_t>& forced, int32_t neurons,
                                int32_t min_active, rng& draw, std::vector<uint8_t>& marks);

}  // namespace cleave
