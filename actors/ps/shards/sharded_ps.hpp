#pragma once
// --ps-shards=S: S parameter-server shards. Shard s owns one slice of every
// parameter (actors/ps/shards/shard_slices.hpp) with its gradient and AdamW
// moments and computes its share of every weight product
// (actors/ps/shards/shard_split.hpp). A shard is a thread of this process with its
// own engine (for a fleet: its own actor, plans and traffic), or a
// `--role=ps-shard` process behind a framed connection (remote_shard.hpp);
// sharded_ps drives every shard from a thread of its own, so all shards
// work on a layer at the same time.
//
// It is the model's gemm_engine and its parameter_store. The row-wise ops
// stay with the coordinator, which reads the gathered values after every
// update. The coordinator holds no AdamW moments (a checkpoint gathers them
// for the time it is written) and no gradient of a weight only products use
// (product_weight): the shards make those into their slices. A shard that
// cannot do its part (a shard process lost) makes the call throw
// std::runtime_error with the reason; the trainer stops the run with it.

#include <functional>
#include <memory>
#include <vector>

#include "actors/ps/shards/ps_shard.hpp"
#include "actors/ps/shards/shard_pool.hpp"
#include "actors/ps/shards/shard_split.hpp"
#include "kernels/gemm.hpp"
#include "training/parameter_store.hpp"

namespace cleave {

class sharded_ps final : public gemm_engine<float>, public parameter_store {
 public:
  // Shards in this process: engines[s] multiplies for shard s and outlives this object.
  explicit sharded_ps(std::vector<gemm_engine<float>*> engines);
  // Any shards (remote ones), which it owns.
  struct shard_list {
    std::vector<std::unique_ptr<ps_shard>> shards;
  };
  explicit sharded_ps(shard_list list);

  int shards() const { return static_cast<int>(shards_.size()); }
  ps_shard& shard(int s) { return *shards_[static_cast<size_t>(s)]; }

  // The coordinator's whole gradients and every slice's.
  void zero_grads() override;
  // Adds the gradients the coordinator computed (norms, biases,
  // embeddings) into the owners' slices; returns the global sum of squares.
  double reduce_gradients() override;
  // AdamW on every slice, the shards in parallel; then gathers the values
  // into the parameters for the coordinator's row-wise ops.
  void update(const adamw_config& cfg, int64_t t, double grad_scale) override;
  // Gathers the moments into the parameters (a checkpoint holds whole
  // tensors), until forget_moments.
  void gather_moments() override;
  void forget_moments() override;
  // The moments and the product weights' gradients are the shards' alone.
  bool keeps_parameter_state() const override { return true; }
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
  // Cuts the registered parameters (values and moments) into the shards'
  // slices; the whole moments (a restore's) are dropped once the shards have them.
  void on_attach() override;
  // Runs call(s) on every shard at once; the first failure, in shard order,
  // is thrown as std::runtime_error.
  void on_every_shard(const char* what, const std::function<caf::error(int)>& call);

  std::vector<std::unique_ptr<ps_shard>> shards_;
  shard_pool pool_;
  product_split split_;
  split_batch batch_;
  double exchange_seconds_ = 0;
};

}  // namespace cleave
