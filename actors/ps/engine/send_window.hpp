#pragma once
// How many tasks each device holds at once when devices pipeline their
// tiles (--pipelined-devices): the next tile's operands arrive while one
// computes and the one before goes up, as deep as its memory allows
// (device_pipeline_depth in cost_model.hpp, the depth the planner's tile
// model and the simulator's devices use). A device's further tasks wait at
// the PS in the order they were given and go out as its results come back,
// so the PS decides the order and the number of its sends in flight, rather
// than every task of a batch crawling through the link at once, and a
// device process is never sent more than its memory holds. Pure.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>
#include <vector>

namespace cleave {

// A task waiting for room at its device: the batch's call and its tile.
struct queued_task {
  size_t call = 0;
  size_t tile = 0;
  bool with_all_data = false;
};

class send_window {
 public:
  // Whether a task for `device`, `depth` tasks deep, may go now: there is
  // room and nothing waits before it. The caller then calls sent().
  bool has_room(int32_t device, uint32_t depth);
  void sent(int32_t device);
  // Waits for room, behind the device's other waiting tasks.
  void enqueue(int32_t device, uint32_t depth, queued_task t);
  // An answer from `device` to a task it was sent: one fewer at it.
  void answered(int32_t device);
  // The next waiting task that now has room (the caller sends it, or drops
  // it when it is no longer wanted, and calls sent() only when it sends).
  std::optional<queued_task> next(int32_t device);
  // A device gone: what waited for it is dropped.
  void forget(int32_t device);
  void clear() { lanes_.clear(); }

  // The most tasks `device` held at once since the window was made.
  uint32_t most_in_flight(int32_t device) const;
  size_t waiting(int32_t device) const;

 private:
  struct lane {
    uint32_t in_flight = 0, most = 0, depth = 1;
    std::deque<queued_task> queue;
  };
  std::unordered_map<int32_t, lane> lanes_;
};

}  // namespace cleave
