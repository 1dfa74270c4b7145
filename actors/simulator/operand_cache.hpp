#pragma once
// Which operand blocks cross the PS's link, decided as the live pair decides
// it. The PS (distributed_gemm::send_task) sends a block unless it sent the
// same block to that device earlier in the step; the device
// (device_actor's resolve) keeps every block it receives in its block_cache
// (least recently used out, default_cache_bytes) and answers a block it was
// only named but has evicted with a miss, on which the PS forgets what it
// sent that device and sends the tile again with both blocks. The engine
// reads misses only once it has issued the whole batch, so the caller
// resends missed tiles after issuing all (resend_missed). Both start each
// step empty. A plan's a_cached/b_cached flags are the planner's
// prediction of this, not its cause: live devices also hit on blocks of
// other tiles and other products (W in a layer's forward and grad_input
// products, X in its forward and grad_weight, dY in grad_input and
// grad_weight), which the plans do not mark.
//
// Live, a block's key hashes its contents, so one block of one tensor has
// one key whichever product reads it and whether transposed. Here a block
// is named by its tensor and its region in the tensor's own orientation,
// which gives the same matches, except blocks equal by chance (say two
// all-zero blocks), which live share a key and here do not.

#include <cstdint>
#include <memory>
#include <unordered_set>
#include <vector>

#include "actors/device/block_cache.hpp"
#include "actors/planner/plan.hpp"
#include "actors/planner/step_gemms.hpp"

namespace cleave {

struct tensor_ref {
  uint64_t id = 0;
  bool transposed = false;  // op() is the tensor's transpose: its blocks are stored the other way
};

struct product_operands {
  tensor_ref a, b;
  uint64_t element_bytes = gemm_element_bytes;  // on the wire (the product's)
};

// The tensors run `instance` (0-based, in issue order) of product `index` of
// `gemms` reads on PS shard `shard`. A linear layer's products share them:
// forward Y = X W, grad_input dX = dY W^T, grad_weight dW = X^T dY, and the
// backward runs meet the layers in reverse (the last layer's first). Other
// products (attention) read tensors of their own. Every shard has its own
// slices; a block two shards both send is cached twice here (once live).
product_operands operands_of(const std::vector<step_gemm>& gemms, size_t index, int64_t instance,
                             int shard);

// A tile's A and B blocks: their keys and their bytes on the wire.
struct tile_block {
  uint64_t key = 0;
  uint64_t bytes = 0;
};
void tile_blocks(const tile& t, const product_operands& ops, tile_block out[2]);

class operand_cache {
 public:
  // Steps begin with nothing sent and every device's cache empty.
  void begin_step();
  struct sent_task {
    uint64_t bytes = 0;
    bool missed = false;  // the device lacked a block it was only named
    uint8_t with_data = 0;  // bit 0: A was sent, bit 1: B
  };
  // The PS sends tile t, reading `ops`, to `device`, whose cache holds
  // `capacity` bytes and which the PS takes to hold `assumed` (a device's
  // configured cache can differ from default_cache_bytes); all_operands (a
  // reassigned or copied tile) sends both blocks whatever was sent before.
  sent_task send(int32_t device, uint64_t capacity, uint64_t assumed, const tile& t,
                 const product_operands& ops, bool all_operands);
  // A task that missed: the PS forgets what it sent the device and sends
  // the tile again with both blocks. Returns the bytes.
  uint64_t resend_missed(int32_t device, uint64_t capacity, uint64_t assumed, const tile& t,
                         const product_operands& ops);
  // The device died: one that joins in its place starts empty.
  void forget(int32_t device);

  // Over the run: operands named in tasks, those the devices found in their
  // caches (of tasks that did not miss, as the live accounts count), and misses.
  uint64_t operands() const { return operands_; }
  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }

 private:
  struct device_state {
    device_state(uint64_t capacity, uint64_t assumed) : cache(capacity), sent(assumed) {}
    block_cache cache;
    // The PS's view, as distributed_gemm keeps it: the device's rule replayed
    // at the capacity the PS assumes (default_cache_bytes of its memory).
    block_cache sent;
  };
  device_state& state_of(int32_t device, uint64_t capacity, uint64_t assumed);

  // Allocated on a device's first tile: most of a large fleet never gets one.
  std::vector<std::unique_ptr<device_state>> devices_;
  uint64_t operands_ = 0, hits_ = 0, misses_ = 0;
};

}  // namespace cleave
