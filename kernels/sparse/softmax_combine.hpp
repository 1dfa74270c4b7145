#pragma once
// The PS's side of a model-let step (D-SLIDE): every range's active
// (neuron id, logit) pairs and partial softmax stats for a batch, merged
// into the exact softmax over the union of the ranges' active sets, and the
// cross-entropy's gradient sent back to each range in the layout it sent its
// pairs. Pure. Every count and id of a part is checked, since parts arrive
// from devices.

#include <string>
#include <vector>

#include "kernels/sparse/modellet.hpp"

namespace cleave {

struct combined_softmax {
  double loss_sum = 0;  // summed over samples (each its mean over labels, as in xc.cpp)
  std::vector<std::vector<float>> dlogits;  // per part, one per pair of that part
};

// parts: one per range, each for the same n samples; labels: the batch's.
// dlogits are scale (p_j - t_j) with targets uniform over a sample's labels.
// An error (empty: none) if a part's shape is not n samples, its ids are not
// ascending within a sample, two parts share an id, or a label is in no
// part's active set (a range must force its labels in).
std::string combine_softmax(const std::vector<const modellet_scores*>& parts,
                            const label_rows& labels, float scale, combined_softmax& out);

}  // namespace cleave
