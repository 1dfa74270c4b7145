#include "actors/simulator/model_footprint.hpp"

namespace cleave {

namespace {

model_footprint gpt_footprint(const model_config& c) {
  model_footprint out;
  const double d = static_cast<double>(c.d_model), ffn = static_cast<double>(c.ffn);
  const double ctx = static_cast<double>(c.context), heads = static_cast<double>(c.heads);
  const uint64_t du = static_cast<uint64_t>(c.d_model), fu = static_cast<uint64_t>(c.ffn);
  layer_cost embed;
  embed.parameters = static_cast<uint64_t>(c.vocab + c.context) * du;
  embed.activation_floats_per_sample = ctx * d;
  embed.output_floats_per_sample = ctx * d;
  out.layers.push_back(embed);
  layer_cost block;
  block.parameters = 4 * du /* two norms */ + du * 3 * du + 3 * du + du * du + du + du * fu + fu
                     + fu * du + du;
  // Per token: qkv, proj, fc, out; attention scores and values over the context.
  block.forward_flops_per_sample = ctx * (2 * (3 * d * d + d * d + 2 * d * ffn) + 4 * ctx * d);
  // Per token: x, ln1, qkv, attention output, x_mid, ln2, fc and gelu
  // outputs, and the attention probabilities (heads x context).
  block.activation_floats_per_sample = ctx * (7 * d + 2 * ffn + heads * ctx);
  block.output_floats_per_sample = ctx * d;
  for (int64_t l = 0; l < c.layers; ++l) out.layers.push_back(block);
  layer_cost head;
  head.parameters = 2 * du + du * static_cast<uint64_t>(c.vocab);
  head.forward_flops_per_sample = ctx * 2 * d * static_cast<double>(c.vocab);
  head.activation_floats_per_sample = ctx * (2 * d + static_cast<double>(c.vocab));
  head.output_floats_per_sample = ctx * static_cast<double>(c.vocab);
  out.layers.push_back(head);
  out.hidden_floats_per_sample = ctx * d;
  for (const auto& l : out.layers) out.parameters += l.parameters;
  return out;
}

model_footprint mlp_footprint(const model_config& c) {
  model_footprint out;
  std::vector<int64_t> widths{c.inputs};
  widths.insert(widths.end(), c.hidden.begin(), c.hidden.end());
  widths.push_back(c.classes);
  double widest = 0;
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    const double in = static_cast<double>(widths[i]), o = static_cast<double>(widths[i + 1]);
    layer_cost l;
    l.parameters = static_cast<uint64_t>(widths[i] * widths[i + 1] + widths[i + 1]);
    l.forward_flops_per_sample = 2 * in * o;
    l.activation_floats_per_sample = in + o;
    l.output_floats_per_sample = o;
    out.layers.push_back(l);
    widest = std::max(widest, o);
  }
  out.hidden_floats_per_sample = widest;
  for (const auto& l : out.layers) out.parameters += l.parameters;
  return out;
}

}  // namespace

model_footprint footprint_of(const model_config& cfg) {
  return cfg.kind == "gpt" ? gpt_footprint(cfg) : mlp_footprint(cfg);
}

}  // namespace cleave
