#pragma once
// How a product with a registered weight is shared among the PS shards,
// whether the shards are threads of this process (sharded_ps over local
// shards) or processes of their own (remote_shard): pure arithmetic on
// views, no actor and no socket here.
//
// | product          | column-split weight            | row-split weight              |
// |------------------|--------------------------------|-------------------------------|
// | forward Y = X W  | Y's columns, in place          | K split: partials, summed     |
// | dX = dY W^T      | K split: partials, summed      | dX's columns, in place        |
// | dW = X^T dY      | into the shard's gradient slice| into the shard's gradient slice|
//
// Partials are summed in shard order, so a run's numbers do not depend on
// which shard finishes first. Other products (attention) stay whole.

#include <cstdint>
#include <vector>

#include "actors/ps/shards/shard_slices.hpp"
#include "kernels/gemm.hpp"
#include "kernels/tensor.hpp"
#include "training/models/parameter.hpp"

namespace cleave {

// One shard's share of a weight product. Its weight slice W_s and gradient
// slice G_s are the shard's own; everything else is the coordinator's.
struct slice_product {
  enum class kind_t : uint8_t {
    times_slice = 0,  // out = beta * out + a * op(W_s), op = transpose if trans_w
    into_grad = 1,    // G_s = beta * G_s + op(a) * op(b)
  };
  kind_t kind = kind_t::times_slice;
  gemm_tag tag;
  const_view<float> a;
  bool trans_a = false;
  const_view<float> b;  // into_grad only
  bool trans_b = false;  // into_grad only
  bool trans_w = false;  // times_slice only
  mut_view<float> out;   // times_slice only: columns of the product, or a partial
  float beta = 0;
};

// The split of one batch: each shard's slice products in job order, and the
// jobs that name no registered weight (run whole, by the first shard).
struct split_batch {
  std::vector<std::vector<slice_product>> per_shard;
  std::vector<gemm_job<float>> whole;
};

class product_split {
 public:
  // Cuts every parameter into `shards` contiguous slices along its axis.
  void attach(const std::vector<parameter*>& params, int shards);
  int shards() const { return shards_; }
  const std::vector<parameter*>& params() const { return params_; }
  // Parameter id's slice for shard s.
  const shard_slice& slice(size_t id, size_t s) const { return slices_[id][s]; }

  // Splits a batch. Partials live in this object until the next split.
  void split(const std::vector<gemm_job<float>>& jobs, split_batch& out);
  // Sums the last split's partials into their products, in shard order.
  // Returns whether there were any.
  bool reduce();

 private:
  // The registered weight the job multiplies (or whose gradient it makes)
  // with linear_forward / linear_backward's transposes, or null.
  parameter* weight_of(const gemm_job<float>& job) const;
  void split_one(const gemm_job<float>& job, split_batch& out);

  int shards_ = 0;
  std::vector<parameter*> params_;
  std::vector<std::vector<shard_slice>> slices_;  // by parameter id, then shard
  struct reduction {
    mut_view<float> c;
    float beta;
  };
  std::vector<reduction> reductions_;
  std::vector<std::vector<tensor>> partials_;  // per reduction, one per shard
};

}  // namespace cleave
