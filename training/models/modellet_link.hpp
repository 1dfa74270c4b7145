#pragma once
// The xc model's output layer when it lives on devices as model-lets
// (D-SLIDE, sparse mode with --devices): what the model asks of whoever
// holds the ranges. The PS's side (actors/ps/modellet/modellet_ps.hpp) implements it
// over the device edge; the model does not know where the ranges are.

#include <cstdint>

#include "kernels/ops.hpp"
#include "kernels/sparse/modellet.hpp"
#include "training/models/parameter.hpp"

namespace cleave {

// The output layer's part of one training step.
struct modellet_step {
  double loss_sum = 0;        // summed over the batch's samples
  double sum_of_squares = 0;  // of the layer's gradients, for global clipping
  double active_sum = 0;      // active neurons, summed over samples
  double bytes = 0;           // frame bytes moved over device links this step
};

class modellet_link {
 public:
  virtual ~modellet_link() = default;
  // Places the layer: w [labels, hidden] and b [labels, 1], values and AdamW
  // moments, as of optimizer step `step`. w and b stay the PS's copy of the
  // layer (modellet_ps keeps them current every so many steps).
  virtual void place(parameter& w, parameter& b, int64_t step) = 0;
  // Forward on every range, the exact softmax over the union of their active
  // sets, backward. dh [n, hidden] is overwritten with the hidden layer's
  // gradient. Step is the 0-based step being computed.
  virtual modellet_step train(const tensor& h, const label_rows& labels, int64_t step, tensor& dh) = 0;
  // AdamW step t on every range, gradients times grad_scale.
  virtual void update(const adamw_config& cfg, int64_t t, double grad_scale) = 0;
  // Brings the PS's copy (w and b of place) up to date with the devices.
  virtual void sync() = 0;
};

}  // namespace cleave
