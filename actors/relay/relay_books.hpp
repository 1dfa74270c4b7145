#pragma once
// What a relay keeps and knows, with no actor inside (relay_actor.hpp moves
// the frames). The ps sends a block to a relay once per step and names it
// after (actors/ps/engine/sent_mirrors.hpp); the relay keeps every block it
// passes down in its operand store, bounded by --relay-memory, least
// recently used out, and fills a named block in for a device of its that
// lacks it. Like the ps, it knows what each of its devices holds by
// replaying the device's own cache rule (block_cache) on what it passed, so
// a block a device holds stays a name on the last hop too.
//
// Each device's tasks reach the relay on a connection of their own, so a
// task that names a block can overtake the task that carries it (a name is
// a few bytes, a block megabytes, on a link the ps shares). A named block
// the relay has not met this step is on its way: the task is parked until
// it comes, and then filled in. A block it met and evicted is named on, as
// the ps named it.
//
// A device that misses a block anyway (it evicted it) is answered from the
// store when the store has it; only a block neither holds costs the ps a
// miss, and the ps then sends the values again. Blocks are keyed by content,
// so a stale hit is impossible by construction, and the relay never changes
// a value: whatever it forwards, the ps checks every result (Freivalds).

#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "actors/device/block_cache.hpp"
#include "schema/messages.hpp"

namespace cleave {

struct relay_counters {
  uint64_t blocks_in = 0, bytes_in = 0;          // values that came from the ps
  uint64_t blocks_served = 0, bytes_served = 0;  // filled in from the store
  uint64_t blocks_named = 0;                     // left a name: the device holds it
  uint64_t misses_answered = 0;                  // a device's miss the store answered
  uint64_t misses_up = 0;                        // ... it could not: sent to the ps
  uint64_t tasks_parked = 0;                     // named a block still on its way
  uint64_t tasks_expired = 0;                    // ... that never came: passed on named
  double hit_rate() const {
    const uint64_t asked = blocks_served + misses_up;
    return asked == 0 ? 0.0 : static_cast<double>(blocks_served) / static_cast<double>(asked);
  }
};

class relay_books {
 public:
  explicit relay_books(uint64_t store_bytes) : store_(store_bytes) {}

  // A device behind the relay, by its connection, with the cache its
  // declared memory gives it (default_cache_bytes).
  void admit(uint64_t device, uint64_t cache_bytes);
  void drop(uint64_t device);

  // A task from the ps for `device` (at `now`, seconds), as the device is
  // to get it: blocks that carry values are kept; named blocks the device
  // does not hold are filled in from the store when it has them. None when
  // the task names a block still on its way: it is parked, and released
  // (released()) when the block comes.
  std::optional<tile_task> pass_down(uint64_t device, tile_task task, double now = 0);
  // Parked tasks whose blocks came, filled in, with their devices; once.
  std::vector<std::pair<uint64_t, tile_task>> released();
  // Parked tasks that waited more than `patience` seconds by `now`, as the
  // ps named them (their devices will miss, and the ps send the values).
  std::vector<std::pair<uint64_t, tile_task>> expire(double now, double patience);
  // The device missed block `miss.operand_key` of task `miss.key`: the task
  // again with the block's values when the store has it; none when it does
  // not (the miss goes up to the ps) or the task is not one it was given.
  std::optional<tile_task> answer_miss(uint64_t device, const tile_miss& miss);
  // The device answered task `key`: the relay forgets it.
  void answered(uint64_t device, const tile_key& key);

  const relay_counters& counters() const { return counters_; }
  uint64_t store_bytes() const { return store_.bytes(); }
  size_t devices() const { return devices_.size(); }

 private:
  struct device_books {
    block_cache held;                     // the device's cache, replayed
    std::map<tile_key, tile_task> tasks;  // given and not answered: shapes and keys only
  };
  struct parked_task {
    uint64_t device = 0;
    tile_task task;
    double since = 0;
  };
  // Op's values from the store into `op`, when it has them.
  bool fill(operand& op);
  void keep(const operand& op);
  // A later step (or a ps resumed well before) forgets the step's blocks.
  void enter_step(uint64_t step);
  // Fills in what the device lacks; false when a block is still on its way.
  bool complete(device_books& books, tile_task& task, bool park_if_missing);
  void remember(device_books& books, const tile_task& task);

  block_cache store_;
  std::unordered_map<uint64_t, device_books> devices_;
  std::unordered_set<uint64_t> met_;  // blocks that came this step, kept or since evicted
  uint64_t step_ = 0;
  std::list<parked_task> parked_;
  std::vector<std::pair<uint64_t, tile_task>> released_;
  relay_counters counters_;
};

}  // namespace cleave
