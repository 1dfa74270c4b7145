#pragma once
// What a model costs without building it: its parameters, FLOPs and the
// activations a training step keeps, layer by layer, from its model_config
// alone (opt-30b's weights would need 120 GB). The simulator's PS memory and
// the baselines' stage planning read it. It follows the models
// in training/models/ (gpt: pre-LayerNorm blocks with biases, learned
// positions, an untied head without bias; mlp: dense layers with biases).

#include <cstdint>
#include <vector>

#include "schema/model_config.hpp"

namespace cleave {

// One layer in the order a pipeline would cut the model.
struct layer_cost {
  uint64_t parameters = 0;
  double forward_flops_per_sample = 0;  // the layer's GEMMs and attention, one sample
  // Floats kept for the backward pass per sample (inputs of each GEMM, the
  // attention probabilities, norm and activation outputs).
  double activation_floats_per_sample = 0;
  double output_floats_per_sample = 0;  // what crosses to the next layer
};

struct model_footprint {
  std::vector<layer_cost> layers;  // gpt: embeddings, the blocks, the head; mlp: the dense layers
  uint64_t parameters = 0;
  double hidden_floats_per_sample = 0;  // one activation of the model's width per sample (all-reduces)
};

model_footprint footprint_of(const model_config& cfg);

// Bytes a trainer holds per parameter: fp32 value, gradient and the two AdamW moments.
constexpr uint64_t training_bytes_per_parameter = 16;

}  // namespace cleave
