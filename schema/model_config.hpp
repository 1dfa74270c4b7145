#pragma once
// The shape of a model: what a checkpoint records and a resume must match.

#include <cstdint>
#include <string>
#include <vector>

namespace cleave {

struct model_config {
  std::string kind;  // "mlp", "gpt" or "xc"
  // mlp; xc: inputs = sparse features, hidden = {width}, classes = labels
  int64_t inputs = 0;
  std::vector<int64_t> hidden;
  int64_t classes = 0;
  // gpt (decoder-only transformer, pre-LayerNorm, learned positions, untied head)
  int64_t vocab = 0;
  int64_t context = 0;
  int64_t d_model = 0;
  int64_t layers = 0;
  int64_t heads = 0;
  int64_t ffn = 0;

  bool operator==(const model_config& o) const {
    return kind == o.kind && inputs == o.inputs && hidden == o.hidden && classes == o.classes
           && vocab == o.vocab && context == o.context && d_model == o.d_model
           && layers == o.layers && heads == o.heads && ffn == o.ffn;
  }
  bool operator!=(const model_config& o) const { return !(*this == o); }
};

// e.g. "mlp 784-256-128-10" or "gpt d=256 layers=4 heads=4 ffn=1024 ctx=128 vocab=256"
std::string to_string(const model_config& cfg);

}  // namespace cleave
