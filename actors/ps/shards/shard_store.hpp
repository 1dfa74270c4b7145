#pragma once
// What one PS shard owns: its slice of every parameter with the slice's
// gradient and AdamW moments, and how it computes its share of a product.
// The same code serves a shard thread of this process (local_shard in
// ps_shard.hpp) and a `--role=ps-shard` process (shard_server.hpp), so both
// give the same bits. Pure: no actor, no socket.

#include <cstdint>
#include <vector>

#include "actors/ps/shards/shard_slices.hpp"
#include "actors/ps/shards/shard_split.hpp"
#include "kernels/gemm.hpp"
#include "kernels/ops.hpp"
#include "kernels/tensor.hpp"

namespace cleave {

struct slice_state {
  shard_slice where;
  bool decay = false;  // AdamW weight decay (matrices, not biases or norms)
  tensor value, grad, adam_m, adam_v;
};

class shard_store {
 public:
  // Takes the slices, by parameter id; gradients start at zero.
  void attach(std::vector<slice_state> slices);
  size_t size() const { return slices_.size(); }
  const slice_state& slice(size_t id) const { return slices_[id]; }
  slice_state& slice(size_t id) { return slices_[id]; }

  void zero_grads();
  // The products as jobs on this shard's slices (W_s, G_s filled in).
  std::vector<gemm_job<float>> jobs_for(const std::vector<slice_product>& products);
  // The sum of squares of every gradient slice, in parameter order.
  double sum_of_squares() const;
  // AdamW step t on every slice.
  void update(const adamw_config& cfg, int64_t t, double grad_scale);
  // Values, gradients and moments.
  uint64_t bytes() const;

 private:
  std::vector<slice_state> slices_;
};

}  // namespace cleave
