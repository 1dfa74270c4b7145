#pragma once
// One direction of a PS's link to its fleet, emulated: bytes cross it one
// message after another at a fixed rate, as they would leave one NIC. The
// PS (or an in-process shard, as if on a host of its own) holds a task
// until its operands have crossed its egress, and a result until it has
// crossed its ingress, so that one machine shows the PS link binding. The
// device's own link carries the same bytes at the same time (cut through):
// a task tells its device when the PS began sending it, and the device's
// download ends at the later of the two links' ends. Pure.

#include <cstdint>

namespace cleave {

class paced_link {
 public:
  // bytes_per_second <= 0 leaves the link unpaced (pass returns `now`).
  explicit paced_link(double bytes_per_second = 0) : rate_(bytes_per_second) {}

  bool paced() const { return rate_ > 0; }
  // When `bytes` handed to the link at `now` (seconds, any fixed origin)
  // have crossed it, behind everything handed to it before.
  double pass(double now, uint64_t bytes);
  // Seconds `bytes` take on the link alone (0 when unpaced).
  double transfer_seconds(uint64_t bytes) const {
    return paced() ? static_cast<double>(bytes) / rate_ : 0;
  }
  // Seconds messages have waited for the link so far (queueing and transfer).
  double waited_seconds() const { return waited_; }

 private:
  double rate_;
  double free_at_ = 0;
  double waited_ = 0;
};

}  // namespace cleave
