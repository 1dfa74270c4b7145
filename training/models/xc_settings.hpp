#pragma once
// How the extreme classifier (--model=xc) computes its wide output layer:
// sparse mode's LSH sampling, or the dense full softmax it is checked against.
// Not part of the model's shape (model_config): a checkpoint does not record
// them, and a resumed run is bit for bit only under the same settings.

#include <cstdint>
#include <memory>

#include "kernels/lsh/lsh_index.hpp"

namespace cleave {

class modellet_link;

struct xc_settings {
  // true: each sample works on its active set (its LSH buckets' neurons, its
  // labels, a random top-up to min_active); false: every output neuron.
  bool sparse = true;
  // Defaults from SLIDE's Amazon-670K network (Chen et al., MLSys 2020):
  // DWTA, K = 6, L = 50, buckets of 128, rehash every 50 and rebuild every
  // 1000 steps of 128 samples (its 6,400 and 128,000 samples).
  lsh_config lsh;  // the seed is drawn from the run's seed
  int32_t bucket_size = 128;
  bucket_policy policy = bucket_policy::fifo;
  int32_t min_active = 0;  // 0: 0.5% of the labels (SLIDE's output sparsity)
  lsh_schedule schedule{50, 1000, 1.0};
  // Sparse mode on devices: the output layer's ranges live there, behind
  // this link (null: in this process).
  std::shared_ptr<modellet_link> modellets;
};

}  // namespace cleave
