#include "actors/planner/step_gemms.hpp"

namespace cleave {

namespace {

class step_builder {
 public:
  void add(std::string name, int64_t m, int64_t n, int64_t k, gemm_role role, int64_t count) {
    for (auto& g : gemms_) {
      if (g.problem.m == m && g.problem.n == n && g.problem.k == k && g.problem.role == role) {
        g.count += count;
        return;
      }
    }
    step_gemm g;
    g.name = std::move(name);
    g.problem.m = m;
    g.problem.n = n;
    g.problem.k = k;
    g.problem.role = role;
    g.count = count;
    gemms_.push_back(std::move(g));
  }

  // linear_forward: Y[rows, out] = X[rows, in] W[in, out].
  void forward(const std::string& name, int64_t rows, int64_t in, int64_t out, int64_t count) {
    add(name + " forward", rows, out, in, gemm_role::forward, count);
  }

  // linear_backward: dX = dY W^T (unless the input needs no gradient), then
  // dW = X^T dY with the tokens as K.
  void backward(const std::string& name, int64_t rows, int64_t in, int64_t out, int64_t count,
                bool grad_input) {
    if (grad_input) add(name + " grad_input", rows, in, out, gemm_role::grad_input, count);
    add(name + " grad_weight", in, out, rows, gemm_role::grad_weight, count);
  }

  std::vector<step_gemm> take() { return std::move(gemms_); }

 private:
  std::vector<step_gemm> gemms_;
};

std::vector<step_gemm> mlp_step(const model_config& cfg, int64_t batch) {
  std::vector<int64_t> widths{cfg.inputs};
  widths.insert(widths.end(), cfg.hidden.begin(), cfg.hidden.end());
  widths.push_back(cfg.classes);
  step_builder b;
  const size_t layers = widths.size() - 1;
  for (size_t i = 0; i < layers; ++i)
    b.forward("layer " + std::to_string(i), batch, widths[i], widths[i + 1], 1);
  for (size_t i = layers; i-- > 0;)
    b.backward("layer " + std::to_string(i), batch, widths[i], widths[i + 1], 1, i > 0);
  return b.take();
}

std::vector<step_gemm> gpt_step(const model_config& cfg, int64_t batch) {
  const int64_t rows = batch * cfg.context, d = cfg.d_model, seq = cfg.context;
  const int64_t dh = d / cfg.heads, L = cfg.layers, per_head = batch * cfg.heads * L;
  step_builder b;
  b.forward("qkv", rows, d, 3 * d, L);
  b.add("attn scores", seq, seq, dh, gemm_role::attn_scores, per_head);
  b.add("attn values", seq, dh, seq, gemm_role::attn_values, per_head);
  b.forward("proj", rows, d, d, L);
  b.forward("fc", rows, d, cfg.ffn, L);
  b.forward("out", rows, cfg.ffn, d, L);
  b.forward("head", rows, d, cfg.vocab, 1);
  b.backward("head", rows, d, cfg.vocab, 1, true);
  b.backward("out", rows, cfg.ffn, d, L, true);
  b.backward("fc", rows, d, cfg.ffn, L, true);
  b.backward("proj", rows, d, d, L, true);
  // attention_backward: dV = P^T dO and dQ = dS K (seq x dh x seq), dP = dO V^T
  // (seq x seq x dh) and dK = dS^T Q (seq x dh x seq).
  b.add("attn grad dv/dq/dk", seq, dh, seq, gemm_role::attn_grad, 3 * per_head);
  b.add("attn grad dp", seq, seq, dh, gemm_role::attn_grad, per_head);
  b.backward("qkv", rows, d, 3 * d, L, true);
  return b.take();
}

}  // namespace

std::vector<step_gemm> step_gemms(const model_config& cfg, int64_t batch) {
  if (cfg.kind == "gpt") return gpt_step(cfg, batch);
  return mlp_step(cfg, batch);
}

double step_gemm_flops(const std::vector<step_gemm>& gemms) {
  double total = 0;
  for (const auto& g : gemms) total += g.flops();
  return total;
}

}  // namespace cleave
