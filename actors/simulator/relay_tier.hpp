#pragma once
// The relays' side of a simulated GEMM (schema/fleet_relays.hpp): what each
// relay holds, fetches and forwards; the links and the clock stay in
// batch_sim.
//
// A device behind a relay downloads a tile's operand blocks from the relay
// once all of them are there. A block the relay lacks is fetched from the PS
// on the first demand for it, in the order demanded (one fetch at a time
// per relay and PS shard, each at the relay's whole share of its link), and
// every later demand waits for that fetch instead of starting another. A
// fetched block enters the relay's store (its memory, least recently used
// out). Results are forwarded to the PS in the order they reach the relay,
// one at a time per shard. A relay folds nothing: K-split partials go up
// one by one, as from a device.

#include <cstdint>
#include <deque>
#include <list>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "schema/fleet_relays.hpp"

namespace cleave {

struct relay_block {
  uint64_t key = 0;
  uint64_t bytes = 0;
};

// A relay's operand store: blocks by key, least recently used out.
class relay_store {
 public:
  explicit relay_store(uint64_t capacity) : capacity_(capacity) {}
  bool touch(uint64_t key);  // true if held (now the most recent)
  void put(const relay_block& b);
  void clear();
  uint64_t bytes() const { return bytes_; }

 private:
  uint64_t capacity_, bytes_ = 0;
  std::list<relay_block> lru_;  // front: most recent
  std::unordered_map<uint64_t, std::list<relay_block>::iterator> index_;
};

// Summed over a run, per relay.
struct relay_counts {
  uint64_t bytes_in = 0;      // from the PS (fetches)
  uint64_t unique_bytes = 0;  // of those, blocks the relay had not fetched before in the step
  uint64_t bytes_out = 0;     // to its devices (operands)
  uint64_t results = 0;       // bytes forwarded to the PS
};

class relay_tier {
 public:
  relay_tier(std::vector<relay_profile> relays, uint32_t shards);

  size_t size() const { return relays_.size(); }
  const relay_profile& profile(uint32_t r) const { return relays_[r]; }
  const std::vector<relay_counts>& counts() const { return counts_; }
  std::vector<relay_counts>& counts() { return counts_; }

  // Blocks of a step are never used again (weights and activations change):
  // stores start each step empty.
  void begin_step();

  // Entry `entry` (of shard `shard`) will download `blocks` from relay r.
  // Returns how many are not there yet; each of those is fetched once (queued
  // unless already queued or on its way) and the entry waits for it.
  uint32_t need(uint32_t r, uint32_t shard, uint32_t entry, const relay_block* blocks, size_t n,
                uint64_t priority);
  // The entry's download from the relay: `bytes` go out to its device.
  void served(uint32_t r, uint64_t bytes) { counts_[r].bytes_out += bytes; }
  // The fetch (r, shard) starts next, if one is queued and none runs.
  bool next_fetch(uint32_t r, uint32_t shard, relay_block& out, uint64_t& priority);
  // The running fetch (r, shard) left the PS's link: the next may start.
  void fetched(uint32_t r, uint32_t shard);
  // The oldest fetched block of (r, shard) reached the relay: stored, and the
  // entries it was the last missing block of are appended to `ready` (their
  // other blocks may have been evicted meanwhile: ask need() again).
  void landed(uint32_t r, uint32_t shard, std::vector<uint32_t>& ready);
  // A skipped identical instance's blocks, stored as its fetches would have.
  void store(uint32_t r, const relay_block& b);

  // Results a device sent its relay, forwarded to shard `shard` in order.
  struct result { uint32_t slot, entry; uint64_t bytes; };
  void arrived(uint32_t r, uint32_t shard, const result& res) { lanes_[r * shards_ + shard].up.push_back(res); }
  bool next_upload(uint32_t r, uint32_t shard, result& out);
  // The running upload (r, shard) reached the PS.
  result uploaded(uint32_t r, uint32_t shard);

  // A run is over: queues and waits are dropped (the stores stay).
  void end_run();

 private:
  struct pending {
    std::vector<uint32_t> entries;  // waiting for the block
  };
  struct lane {  // one relay's traffic with one shard
    std::deque<std::pair<relay_block, uint64_t>> queued;  // fetches, with priority
    bool fetching = false;
    std::deque<relay_block> landing;  // fetched, one latency from the relay (in order)
    std::deque<result> up;  // results waiting to go up
    bool uploading = false;
  };

  std::vector<relay_profile> relays_;
  uint32_t shards_;
  std::vector<relay_store> stores_;
  std::vector<std::unordered_set<uint64_t>> fetched_;  // by relay: keys fetched this step
  std::vector<std::unordered_map<uint64_t, pending>> waiting_;  // by relay: fetches queued or running
  std::vector<lane> lanes_;                                    // relay * shards + shard
  std::vector<uint32_t> missing_;  // by entry
  std::vector<relay_counts> counts_;
};

}  // namespace cleave
