#pragma once
// SLIDE's hash tables: L tables of fixed-size buckets holding neuron ids,
// and the active set of an input (the neurons its buckets hold). Pure.
//
// A table is built whole from every id's code (a rehash puts every neuron
// back at once), so it is flat: the ids grouped by code in one array, the
// group of a code found through an open-addressing slot array. A rehash of
// 663k neurons x 50 tables is then a few sorts of integers, not 33 M inserts
// into per-bucket vectors.

#include <cstdint>
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
  lsh_tables(int32_t tables, int32_t bucket_size, bucket_policy policy);

  // Replaces every table's contents: ids[i] offered, in the order i = 0 ..
  // count - 1, to its bucket codes[t * count + i] in table t (table-major).
  // The buckets come out as offering the ids one at a time gives: FIFO keeps
  // a full bucket's newest bucket_size ids, reservoir replays table t's
  // draws (a stream of `seed` per table) in offering order, so the tables
  // are a function of the codes and the seed. The tables build in parallel.
  void build(const int32_t* ids, const uint32_t* codes, int64_t count, uint64_t seed);

  // Calls f(id) for every id in the buckets `codes` names, a table at a
  // time; an id in several tables comes several times.
  template <class F>
  void for_each(const uint32_t* codes, F&& f) const {
    for (size_t t = 0; t < tables_.size(); ++t) {
      const table& tab = tables_[t];
      const int64_t g = tab.group_of(codes[t]);
      if (g < 0) continue;
      for (uint32_t i = tab.starts[static_cast<size_t>(g)]; i < tab.starts[static_cast<size_t>(g) + 1]; ++i)
        f(tab.ids[i]);
    }
  }

  int32_t tables() const { return static_cast<int32_t>(tables_.size()); }
  int32_t bucket_size() const { return bucket_size_; }
  // The ids held in table t's bucket `code`, in their slots' order (empty
  // when there is none).
  std::vector<int32_t> bucket(int32_t t, uint32_t code) const;

 private:
  struct table {
    std::vector<uint32_t> codes;   // one per bucket, ascending
    std::vector<uint32_t> starts;  // bucket b's ids are ids[starts[b], starts[b + 1])
    std::vector<int32_t> ids;
    std::vector<uint32_t> slots;   // open addressing: bucket + 1, 0 when free
    int32_t slot_bits = 0;

    // The bucket holding `code`, or -1.
    int64_t group_of(uint32_t code) const {
      if (codes.empty()) return -1;
      const uint64_t mask = (uint64_t{1} << slot_bits) - 1;
      for (uint64_t s = slot_of(code, slot_bits);; s = (s + 1) & mask) {
        const uint32_t v = slots[s];
        if (v == 0) return -1;
        if (codes[v - 1] == code) return static_cast<int64_t>(v) - 1;
      }
    }
    static uint64_t slot_of(uint32_t code, int32_t bits) {
      return (code * 0x9e3779b97f4a7c15ULL) >> (64 - bits);
    }
  };
  void build_table(size_t t, const int32_t* ids, const uint32_t* codes, int64_t count, uint64_t seed);

  std::vector<table> tables_;
  int32_t bucket_size_;
  bucket_policy policy_;
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
