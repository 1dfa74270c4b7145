#include "actors/planner/step_gemms.hpp"

namespace cleave {

namespace {

class step_builder {
 public:
  // Returns the entry's index.
  int32_t add(std::string name, int64_t m, int64_t n, int64_t k, gemm_role role, int64_t count,
              shard_cut cut = shard_cut::none, int32_t forward = -1) {
    for (size_t i = 0; i < gemms_.size(); ++i) {
      auto& g = gemms_[i];
      if (g.problem.m == m && g.problem.n == n && g.problem.k == k && g.problem.role == role) {
        g.count += count;
        return static_cast<int32_t>(i);
      }
    }
    step_gemm g;
    g.name = std::move(name);
    g.problem.m = m;
    g.problem.n = n;
    g.problem.k = k;
    g.problem.role = role;
    g.count = count;
    g.cut = cut;
    g.forward = forward;
    gemms_.push_back(std::move(g));
    return static_cast<int32_t>(gemms_.size() - 1);
  }

  // linear_forward: Y[rows, out] = X[rows, in] W[in, out]. The shards cut
  // W's columns (Y's), or W's rows (the product's K) when rows_split.
  void forward(const std::string& name, int64_t rows, int64_t in, int64_t out, int64_t count,
               bool rows_split = false) {
    add(name + " forward", rows, out, in, gemm_role::forward, count,
        rows_split ? shard_cut::k : shard_cut::n);
  }

  // linear_backward: dX = dY W^T (unless the input needs no gradient), then
  // dW = X^T dY with the tokens as K; both mirror the forward product.
  void backward(const std::string& name, int64_t rows, int64_t in, int64_t out, int64_t count,
                bool grad_input, bool rows_split = false) {
    const int32_t fwd = index_of(rows, out, in, gemm_role::forward);
    if (grad_input)
      add(name + " grad_input", rows, in, out, gemm_role::grad_input, count,
          rows_split ? shard_cut::n : shard_cut::k, fwd);
    add(name + " grad_weight", in, out, rows, gemm_role::grad_weight, count,
        rows_split ? shard_cut::m : shard_cut::n, fwd);
  }

  std::vector<step_gemm> take() { return std::move(gemms_); }

 private:
  int32_t index_of(int64_t m, int64_t n, int64_t k, gemm_role role) const {
    for (size_t i = 0; i < gemms_.size(); ++i) {
      const auto& p = gemms_[i].problem;
      if (p.m == m && p.n == n && p.k == k && p.role == role) return static_cast<int32_t>(i);
    }
    return -1;
  }

  std::vector<step_gemm> gemms_;
};

std::vector<step_gemm> mlp_step(const model_config& cfg, int64_t batch) {
  std::vector<int64_t> widths{cfg.inputs};
  widths.insert(widths.end(), cfg.hidden.begin(), cfg.hidden.end());
  widths.push_back(cfg.classes);
  step_builder b;
  const size_t layers = widths.size() - 1;
  // The shards cut every odd layer's weight by rows (Megatron pairs).
  for (size_t i = 0; i < layers; ++i)
    b.forward("layer " + std::to_string(i), batch, widths[i], widths[i + 1], 1, i % 2 == 1);
  for (size_t i = layers; i-- > 0;)
    b.backward("layer " + std::to_string(i), batch, widths[i], widths[i + 1], 1, i > 0, i % 2 == 1);
  return b.take();
}

std::vector<step_gemm> gpt_step(const model_config& cfg, int64_t batch) {
  const int64_t rows = batch * cfg.context, d = cfg.d_model, seq = cfg.context;
  const int64_t dh = d / cfg.heads, L = cfg.layers, per_head = batch * cfg.heads * L;
  step_builder b;
  b.forward("qkv", rows, d, 3 * d, L);
  b.add("attn scores", seq, seq, dh, gemm_role::attn_scores, per_head);
  b.add("attn values", seq, dh, seq, gemm_role::attn_values, per_head);
  b.forward("proj", rows, d, d, L, true);
  b.forward("fc", rows, d, cfg.ffn, L);
  b.forward("out", rows, cfg.ffn, d, L, true);
  b.forward("head", rows, d, cfg.vocab, 1);
  b.backward("head", rows, d, cfg.vocab, 1, true);
  b.backward("out", rows, cfg.ffn, d, L, true, true);
  b.backward("fc", rows, d, cfg.ffn, L, true);
  b.backward("proj", rows, d, d, L, true, true);
  // attention_backward: dV = P^T dO and dQ = dS K (seq x dh x seq), dP = dO V^T
  // (seq x seq x dh) and dK = dS^T Q (seq x dh x seq).
  b.add("attn grad dv/dq/dk", seq, dh, seq, gemm_role::attn_grad, 3 * per_head);
  b.add("attn grad dp", seq, seq, dh, gemm_role::attn_grad, per_head);
  b.backward("qkv", rows, d, 3 * d, L, true);
  return b.take();
}

}  // namespace

double step_gemm::flops() const {
  const double one = op == tile_op::gemm ? problem.flops() : attention_tile(op, problem, problem.m).flops;
  return one * static_cast<double>(count);
}

std::vector<step_gemm> fuse_attention(const std::vector<step_gemm>& gemms, const model_config& cfg,
                                      int64_t batch) {
  auto is_attention = [](gemm_role r) {
    return r == gemm_role::attn_scores || r == gemm_role::attn_values || r == gemm_role::attn_grad;
  };
  std::vector<step_gemm> out;
  std::vector<int32_t> moved(gemms.size(), -1);  // old index -> new
  bool forward_in = false, backward_in = false;
  for (size_t i = 0; i < gemms.size(); ++i) {
    const auto& g = gemms[i];
    if (!is_attention(g.problem.role)) {
      moved[i] = static_cast<int32_t>(out.size());
      out.push_back(g);
      continue;
    }
    const bool backward = g.problem.role == gemm_role::attn_grad;
    if (backward ? backward_in : forward_in) continue;
    (backward ? backward_in : forward_in) = true;
    step_gemm f;
    f.name = backward ? "attention backward" : "attention forward";
    f.op = backward ? tile_op::attention_backward : tile_op::attention_forward;
    f.problem.m = batch * cfg.heads;
    f.problem.n = cfg.context;
    f.problem.k = cfg.d_model / cfg.heads;
    f.problem.role = backward ? gemm_role::attn_grad : gemm_role::attn_scores;
    f.problem.element_bytes = g.problem.element_bytes;
    f.problem.result_element_bytes = g.problem.result_element_bytes;
    f.count = cfg.layers;
    out.push_back(std::move(f));
  }
  for (auto& g : out)
    if (g.forward >= 0) g.forward = moved[static_cast<size_t>(g.forward)];
  return out;
}

std::vector<step_gemm> step_gemms(const model_config& cfg, int64_t batch) {
  if (cfg.kind == "gpt") return gpt_step(cfg, batch);
  return mlp_step(cfg, batch);
}

std::vector<product_batch> issue_batches(const std::vector<step_gemm>& gemms) {
  std::vector<product_batch> out;
  for (size_t i = 0; i < gemms.size(); ++i) {
    const bool pair = i + 1 < gemms.size() && gemms[i].problem.role == gemm_role::grad_input
                      && gemms[i + 1].problem.role == gemm_role::grad_weight && gemms[i].forward >= 0
                      && gemms[i + 1].forward == gemms[i].forward && gemms[i + 1].count == gemms[i].count;
    out.push_back({i, pair ? i + 2 : i + 1});
    if (pair) ++i;
  }
  return out;
}

double step_gemm_flops(const std::vector<step_gemm>& gemms) {
  double total = 0;
  for (const auto& g : gemms) total += g.flops();
  return total;
}

}  // namespace cleave
