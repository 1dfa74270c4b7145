#include "actors/planner/ps_local_work.hpp"

#include <algorithm>

namespace cleave {

namespace {

constexpr double float_bytes = 4;

// Elements touched (read plus written) and FLOPs, per kind of op.
class op_list {
 public:
  void add(const char* name, double elements, double flops, bool sharded = false) {
    for (auto& op : ops_)
      if (op.name == name) {
        op.bytes += elements * float_bytes;
        op.flops += flops;
        return;
      }
    ops_.push_back(ps_op{name, flops, elements * float_bytes, sharded});
  }
  // Zeroing gradients (write), the clipping norm (read) and AdamW (read p,
  // g, m, v; write p, m, v) over every parameter.
  void optimizer(double params) { add("adamw", 9 * params, 14 * params, true); }
  std::vector<ps_op> take() { return std::move(ops_); }

 private:
  std::vector<ps_op> ops_;
};

std::vector<int64_t> mlp_widths(const model_config& cfg) {
  std::vector<int64_t> widths{cfg.inputs};
  widths.insert(widths.end(), cfg.hidden.begin(), cfg.hidden.end());
  widths.push_back(cfg.classes);
  return widths;
}

std::vector<ps_op> mlp_ops(const model_config& cfg, int64_t batch) {
  const auto widths = mlp_widths(cfg);
  const double n = static_cast<double>(batch);
  op_list ops;
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    const double out = n * static_cast<double>(widths[i + 1]);
    ops.add("bias add", 2 * out, out);
    ops.add("bias grad", out, out);
    if (i + 2 < widths.size()) {  // ReLU after every layer but the last
      ops.add("relu", 2 * out, out);
      ops.add("relu backward", 3 * out, out);
    }
  }
  const double logits = n * static_cast<double>(cfg.classes);
  ops.add("cross-entropy", 4 * logits, 6 * logits);
  ops.optimizer(static_cast<double>(parameter_count(cfg)));
  return ops.take();
}

std::vector<ps_op> gpt_ops(const model_config& cfg, int64_t batch) {
  const double rows = static_cast<double>(batch * cfg.context), d = static_cast<double>(cfg.d_model);
  const double f = static_cast<double>(cfg.ffn), L = static_cast<double>(cfg.layers);
  const double scores = static_cast<double>(batch * cfg.heads) * static_cast<double>(cfg.context) *
                        static_cast<double>(cfg.context);
  const double nd = rows * d, nf = rows * f, norms = 2 * L + 1;
  op_list ops;
  // Forward.
  ops.add("embedding", 7 * nd, nd);                       // two gathers and their sum
  ops.add("layernorm", norms * 2 * nd, norms * 8 * nd);
  ops.add("bias add", L * 2 * rows * (5 * d + f), L * rows * (5 * d + f));  // qkv, proj, fc, out
  ops.add("attention softmax", L * 2 * scores, L * 5 * scores);  // scale, causal mask, softmax
  ops.add("attention reshapes", L * 8 * nd, 0);            // q, k, v to heads and back
  ops.add("residual add", L * 6 * nd, L * 2 * nd);
  ops.add("gelu", L * 2 * nf, L * 15 * nf);
  const double logits = rows * static_cast<double>(cfg.vocab);
  ops.add("cross-entropy", 4 * logits, 6 * logits);       // softmax, then its gradient
  // Backward.
  ops.add("layernorm", norms * 4 * nd, norms * 12 * nd);
  ops.add("bias grad", L * rows * (5 * d + f), L * rows * (5 * d + f));
  ops.add("gelu", L * 3 * nf, L * 20 * nf);
  ops.add("attention softmax", L * 3 * scores, L * 4 * scores);
  ops.add("attention reshapes", L * 8 * nd, 0);
  ops.add("residual add", L * 6 * nd, L * 2 * nd);
  ops.add("embedding", 6 * nd, 2 * nd);                    // two scatter-adds
  ops.optimizer(static_cast<double>(parameter_count(cfg)));
  return ops.take();
}

}  // namespace

int64_t parameter_count(const model_config& cfg) {
  if (cfg.kind == "gpt") {
    const int64_t d = cfg.d_model, f = cfg.ffn;
    const int64_t block = 2 * d + (d * 3 * d + 3 * d) + (d * d + d) + 2 * d + (d * f + f) + (f * d + d);
    return cfg.vocab * d + cfg.context * d + cfg.layers * block + 2 * d + d * cfg.vocab;
  }
  const auto widths = mlp_widths(cfg);
  int64_t total = 0;
  for (size_t i = 0; i + 1 < widths.size(); ++i) total += widths[i] * widths[i + 1] + widths[i + 1];
  return total;
}

double ps_op_seconds(const ps_op& op, double ps_flops, double memory_bandwidth, int32_t shards) {
  const double t = std::max(op.flops / ps_flops, op.bytes / memory_bandwidth);
  return op.sharded ? t / std::max<int32_t>(1, shards) : t;
}

std::vector<ps_op> ps_local_ops(const model_config& cfg, int64_t batch) {
  if (cfg.kind == "gpt") return gpt_ops(cfg, batch);
  return mlp_ops(cfg, batch);
}

}  // namespace cleave
