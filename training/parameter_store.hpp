#pragma once
// Where a model's parameters are kept and updated. The model registers each
// parameter by name (its id is its place in registration order, and a
// product with a weight carries that id in its gemm_tag); the training loop
// then asks the store, never the parameters, to zero the gradients, sum their
// squares for clipping, run AdamW and gather whole tensors for a checkpoint.
//
// Two stores: local_parameter_store updates whole tensors in this process;
// sharded_ps (actors/ps/) keeps each parameter as slices, one per PS shard,
// each with its own gradient and moments. Names, not addresses, identify a
// parameter, which is what a shard on another host needs.

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include <caf/error.hpp>

#include "kernels/ops.hpp"
#include "training/models/parameter.hpp"

namespace cleave {

class parameter_store {
 public:
  virtual ~parameter_store() = default;

  // Registers the model's parameters by name; called when the model is
  // built and again after a restore replaced their values. Refuses a
  // duplicate name or an id that is not the parameter's place.
  caf::error attach(std::deque<parameter>& params);
  // The registered parameter of that name, or null.
  parameter* find(const std::string& name) const;
  const std::vector<parameter*>& registered() const { return params_; }

  // The gradients the next step adds into start at zero.
  virtual void zero_grads() = 0;
  // The global sum of squares of every gradient (for clipping).
  virtual double reduce_gradients() = 0;
  // AdamW step t over every parameter, gradients scaled by grad_scale; the
  // parameters' values are current afterwards.
  virtual void update(const adamw_config& cfg, int64_t t, double grad_scale) = 0;
  // The parameters' adam_m and adam_v are current afterwards (checkpoints).
  virtual void gather_moments() = 0;
  // The checkpoint is written: a store whose moments live elsewhere drops
  // the whole ones gather_moments made.
  virtual void forget_moments() {}
  // Bytes each shard keeps for its parameters (values, gradients and AdamW
  // moments), one entry per shard: what the console shows as its memory.
  virtual std::vector<uint64_t> shard_bytes() const;

 protected:
  // The registered parameters have changed (attach).
  virtual void on_attach() {}
  std::vector<parameter*> params_;  // by id

 private:
  std::unordered_map<std::string, parameter*> by_name_;
};

// Every parameter in this process: whole, or only the rows a step touched
// for a row_sparse one (sparse mode).
class local_parameter_store : public parameter_store {
 public:
  void zero_grads() override;
  double reduce_gradients() override;
  void update(const adamw_config& cfg, int64_t t, double grad_scale) override;
  void gather_moments() override {}
};

}  // namespace cleave
