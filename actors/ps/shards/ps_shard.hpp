#pragma once
// One PS shard as sharded_ps drives it: a thread of this process
// (local_shard) or a `--role=ps-shard` process behind a framed connection
// (remote_shard.hpp). sharded_ps calls every shard from that shard's own
// thread, so the shards work at the same time; each call is blocking.
// Errors are values: a shard that cannot do its part (a process that went
// away) says why, and the run stops with that reason.

#include <cstdint>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "actors/ps/shards/shard_split.hpp"
#include "actors/ps/shards/shard_store.hpp"
#include "kernels/gemm.hpp"
#include "kernels/ops.hpp"

namespace cleave {

class ps_shard {
 public:
  virtual ~ps_shard() = default;
  // Takes this shard's slice (`mine[id]`) of every parameter: values and
  // moments; gradients start at zero.
  virtual caf::error attach(const std::vector<parameter*>& params,
                            const std::vector<shard_slice>& mine) = 0;
  virtual caf::error zero_grads() = 0;
  // Computes the slice products (outputs written to their views before it
  // returns) and, on the first shard, the products that stay whole.
  virtual caf::error run(const std::vector<slice_product>& products,
                         const std::vector<gemm_job<float>>& whole) = 0;
  // Adds the coordinator's gradients (params' grads, this shard's windows)
  // into the gradient slices; returns this shard's sum of squares.
  virtual caf::expected<double> add_grads(const std::vector<parameter*>& params) = 0;
  // AdamW step t on the slices.
  virtual caf::error update(const adamw_config& cfg, int64_t t, double grad_scale) = 0;
  // The values after the last update into params' windows.
  virtual void gather_values(const std::vector<parameter*>& params) = 0;
  // The moments into params' windows (checkpoints hold whole tensors).
  virtual caf::error gather_moments(const std::vector<parameter*>& params) = 0;
  // Bytes of values, gradients and moments this shard keeps.
  virtual uint64_t bytes() const = 0;
  // Whether a product that stays whole is computed right here (see
  // gemm_engine::computes_here); asked of the first shard.
  virtual bool computes_here(gemm_tag tag, int64_t m, int64_t n, int64_t k) = 0;
  virtual void add_local_seconds(double /*seconds*/, int64_t /*products*/) {}
};

// A shard in this process: its store, multiplying through `engine` (the
// local GEMM, or for a fleet the shard's own distributed engine).
class local_shard final : public ps_shard {
 public:
  explicit local_shard(gemm_engine<float>& engine) : engine_(engine) {}
  caf::error attach(const std::vector<parameter*>& params, const std::vector<shard_slice>& mine) override;
  caf::error zero_grads() override;
  caf::error run(const std::vector<slice_product>& products,
                 const std::vector<gemm_job<float>>& whole) override;
  caf::expected<double> add_grads(const std::vector<parameter*>& params) override;
  caf::error update(const adamw_config& cfg, int64_t t, double grad_scale) override;
  void gather_values(const std::vector<parameter*>& params) override;
  caf::error gather_moments(const std::vector<parameter*>& params) override;
  uint64_t bytes() const override { return store_.bytes(); }
  bool computes_here(gemm_tag tag, int64_t m, int64_t n, int64_t k) override {
    return engine_.computes_here(tag, m, n, k);
  }
  void add_local_seconds(double seconds, int64_t products) override {
    engine_.add_local_seconds(seconds, products);
  }

 private:
  gemm_engine<float>& engine_;
  shard_store store_;
};

}  // namespace cleave
