#pragma once
// --ps-shards=S: S parameter-server shards in the coordinator's process.
// Shard s owns one slice of every parameter (actors/ps/shard_slices.hpp)
// with its gradient and AdamW moments, multiplies through its own engine
// (for a fleet: its own actor, plans and traffic) and runs on its own
// thread, so all shards work on a layer at the same time.
//
// It is the model's gemm_engine and its parameter_store. A product with a
// weight (named by gemm_tag::weight, the parameter's registered id) runs as
// S products of the shards' slices: an output split by columns is written in place
// (the all-gather), an output split along K is summed in shard order (so a
// run's numbers do not depend on which shard finishes first), and a weight
// gradient lands in the owning shard's slice. Other products (attention)
// run whole on shard 0. The row-wise ops stay with the coordinator, which
// reads the gathered values after every update.

#include <functional>
#include <vector>

#include "kernels/gemm.hpp"
#include "actors/ps/shard_pool.hpp"
#include "actors/ps/shard_slices.hpp"
#include "training/parameter_store.hpp"

namespace cleave {

class sharded_ps final : public gemm_engine<float>, public parameter_store {
 public:
  // engines[s] multiplies for shard s and outlives this object.
  explicit sharded_ps(std::vector<gemm_engine<float>*> engines);

  int shards() const { return static_cast<int>(engines_.size()); }

  // The coordinator's whole gradients and every slice's.
  void zero_grads() override;
  // Adds the gradients the coordinator computed (norms, biases,
  // embeddings) into the owners' slices; returns the global sum of squares.
  double reduce_gradients() override;
  // AdamW on every slice, the shards in parallel; then gathers the values
  // into the parameters for the coordinator's row-wise ops.
  void update(const adamw_config& cfg, int64_t t, double grad_scale) override;
  // Gathers the moments into the parameters (a checkpoint holds whole tensors).
  void gather_moments() override;
  // Each shard's slices with their gradients and moments.
  std::vector<uint64_t> shard_bytes() const override;
  // Runs job(s) on every shard's thread at once.
  void for_each_shard(const std::function<void(int)>& job) { pool_.run(job); }
  // Seconds spent gathering, reducing and scattering between the shards.
  double exchange_seconds() const { return exchange_seconds_; }

  void gemm(gemm_tag tag, const_view<float> a, bool trans_a, const_view<float> b, bool trans_b,
            mut_view<float> c, float beta) override;
  // Each shard runs its share of every product as one batch of its own.
  void gemm_batch(const std::vector<gemm_job<float>>& jobs) override;
  // Products without a weight (attention) are shard 0's.
  bool computes_here(gemm_tag tag, int64_t m, int64_t n, int64_t k) override;
  void add_local_seconds(double seconds, int64_t products) override;

 private:
  // Cuts the registered parameters (values and moments) into the shards' slices.
  void on_attach() override;

  struct slice_state {
    shard_slice where;
    tensor value, grad, adam_m, adam_v;
  };
  struct owned {
    parameter* p = nullptr;
    std::vector<slice_state> slices;  // one per shard
  };

  std::vector<gemm_engine<float>*> engines_;
  shard_pool pool_;
  std::vector<owned> owned_;  // by parameter id
  // A product summed from the shards' partial products (its reduction
  // dimension is the split one), and where each shard's partial goes.
  struct reduction {
    mut_view<float> c;
    float beta;
    std::vector<tensor>* partials;
  };
  // Adds job's share for each shard to per_shard; a product whose shards
  // produce partial sums also gets a reduction.
  void split(const gemm_job<float>& job, std::vector<std::vector<gemm_job<float>>>& per_shard,
             std::vector<reduction>& reductions);
  std::vector<std::vector<tensor>> partials_;  // per reduction of a batch, one per shard
  double exchange_seconds_ = 0;
};

}  // namespace cleave
