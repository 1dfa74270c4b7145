#pragma once
// Tiny models and batches shared by the whole-model tests.

#include "training/models/model.hpp"
#include "kernels/random.hpp"

namespace cleave::testing {

inline model_config tiny_mlp() {
  model_config c;
  c.kind = "mlp";
  c.inputs = 20;
  c.hidden = {16, 12};
  c.classes = 5;
  return c;
}

inline model_config tiny_gpt() {
  model_config c;
  c.kind = "gpt";
  c.vocab = 256;
  c.context = 8;
  c.d_model = 16;
  c.layers = 2;
  c.heads = 2;
  c.ffn = 32;
  return c;
}

// Random inputs (mlp: 6 rows) or tokens (gpt: 2 sequences) and targets.
inline batch make_batch(const model_config& cfg, uint64_t seed) {
  rng r(seed);
  batch b;
  if (cfg.kind == "mlp") {
    b.rows = 6;
    b.inputs.resize(b.rows, cfg.inputs);
    fill_normal(b.inputs, 1.0, r);
    for (int64_t i = 0; i < b.rows; ++i) b.targets.push_back(static_cast<int32_t>(r.below(cfg.classes)));
  } else {
    b.rows = 2 * cfg.context;
    for (int64_t i = 0; i < b.rows; ++i) {
      b.tokens.push_back(static_cast<int32_t>(r.below(cfg.vocab)));
      b.targets.push_back(static_cast<int32_t>(r.below(cfg.vocab)));
    }
  }
  return b;
}

}  // namespace cleave::testing
