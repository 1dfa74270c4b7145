// A decoder-only transformer (GPT/OPT layout): learned token and position
// embeddings, pre-LayerNorm blocks of causal self-attention and a GELU MLP,
// a final LayerNorm and an untied output head.

#include <cmath>

#include "training/models/model.hpp"
#include "kernels/random.hpp"

namespace cleave {
namespace {

constexpr float ln_eps = 1e-5f;

struct block {
  parameter *ln1_g, *ln1_b, *qkv_w, *qkv_b, *proj_w, *proj_b;
  parameter *ln2_g, *ln2_b, *fc_w, *fc_b, *out_w, *out_b;
  // activations kept for the backward pass
  tensor x_in, h1, qkv, attn, probs, x_mid, h2, fc, act;
  layernorm_cache<float> ln1, ln2;
};

class gpt final : public model {
 public:
  gpt(const model_config& cfg, uint64_t seed, gemm_engine<float>& eng) : model(cfg, eng) {
    const int64_t d = cfg.d_model;
    rng r(derive_seed(seed, 2));
    const double std_init = 0.02;
    // Residual projections are scaled down with depth (GPT-2).
    const double std_resid = 0.02 / std::sqrt(2.0 * static_cast<double>(cfg.layers));
    tok_ = &add_parameter("tok_emb", cfg.vocab, d, false);
    fill_normal(tok_->value, std_init, r);
    pos_ = &add_parameter("pos_emb", cfg.context, d, false);
    fill_normal(pos_->value, std_init, r);
    blocks_.resize(static_cast<size_t>(cfg.layers));
    for (int64_t l = 0; l < cfg.layers; ++l) {
      auto& bl = blocks_[static_cast<size_t>(l)];
      const std::string p = "h" + std::to_string(l) + ".";
      bl.ln1_g = &add_parameter(p + "ln1.g", 1, d, false);
      fill_constant(bl.ln1_g->value, 1.0f);
      bl.ln1_b = &add_parameter(p + "ln1.b", 1, d, false);
      bl.qkv_w = &add_parameter(p + "attn.qkv.w", d, 3 * d, true, true);
      fill_normal(bl.qkv_w->value, std_init, r);
      bl.qkv_b = &add_parameter(p + "attn.qkv.b", 1, 3 * d, false);
      bl.proj_w = &add_parameter(p + "attn.proj.w", d, d, true, true);
      fill_normal(bl.proj_w->value, std_resid, r);
      bl.proj_w->shard_split = shard_axis::rows;  // pairs with qkv
      bl.proj_b = &add_parameter(p + "attn.proj.b", 1, d, false);
      bl.ln2_g = &add_parameter(p + "ln2.g", 1, d, false);
      fill_constant(bl.ln2_g->value, 1.0f);
      bl.ln2_b = &add_parameter(p + "ln2.b", 1, d, false);
      bl.fc_w = &add_parameter(p + "mlp.fc.w", d, cfg.ffn, true, true);
      fill_normal(bl.fc_w->value, std_init, r);
      bl.fc_b = &add_parameter(p + "mlp.fc.b", 1, cfg.ffn, false);
      bl.out_w = &add_parameter(p + "mlp.proj.w", cfg.ffn, d, true, true);
      fill_normal(bl.out_w->value, std_resid, r);
      bl.out_w->shard_split = shard_axis::rows;  // pairs with fc
      bl.out_b = &add_parameter(p + "mlp.proj.b", 1, d, false);
    }
    lnf_g_ = &add_parameter("lnf.g", 1, d, false);
    fill_constant(lnf_g_->value, 1.0f);
    lnf_b_ = &add_parameter("lnf.b", 1, d, false);
    head_ = &add_parameter("head.w", d, cfg.vocab, true, true);
    fill_normal(head_->value, std_init, r);
  }

  double train_batch(const batch& b) override {
    forward(b);
    const double loss = softmax_xent_forward(logits_, b.targets, probs_);
    softmax_xent_backward(probs_, b.targets, dlogits_);
    backward(b);
    return loss;
  }

  eval_totals evaluate(const batch& b) override {
    forward(b);
    eval_totals out;
    out.rows = b.rows;
    out.loss_sum = softmax_xent_forward(logits_, b.targets, probs_) * b.rows;
    return out;
  }

 private:
  // GEMM tags: product k of layer l is l * 8 + k; the head comes last.
  uint32_t tag(int64_t layer, int k) const { return static_cast<uint32_t>(layer * 8 + k); }

  void positions(int64_t rows) {
    if (static_cast<int64_t>(pos_ids_.size()) == rows) return;
    pos_ids_.resize(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i)
      pos_ids_[static_cast<size_t>(i)] = static_cast<int32_t>(i % config_.context);
  }

  void forward(const batch& b) {
    const int64_t seq = config_.context;
    const int64_t n_seq = b.rows / seq;
    positions(b.rows);
    embedding_forward(b.tokens, tok_->value, x_);
    embedding_forward(pos_ids_, pos_->value, tmp_);
    add_inplace(x_, tmp_);
    for (size_t l = 0; l < blocks_.size(); ++l) {
      auto& bl = blocks_[l];
      const auto L = static_cast<int64_t>(l);
      bl.x_in = x_;
      layernorm_forward(x_, bl.ln1_g->value, bl.ln1_b->value, ln_eps, bl.h1, bl.ln1);
      linear_forward(*gemm_, tag(L, 0), bl.qkv_w->id, bl.h1, bl.qkv_w->value, &bl.qkv_b->value, bl.qkv);
      attention_forward(*gemm_, tag(L, 1), bl.qkv, n_seq, seq, config_.heads, bl.attn, bl.probs);
      linear_forward(*gemm_, tag(L, 2), bl.proj_w->id, bl.attn, bl.proj_w->value, &bl.proj_b->value, tmp_);
      add_inplace(x_, tmp_);
      bl.x_mid = x_;
      layernorm_forward(x_, bl.ln2_g->value, bl.ln2_b->value, ln_eps, bl.h2, bl.ln2);
      linear_forward(*gemm_, tag(L, 3), bl.fc_w->id, bl.h2, bl.fc_w->value, &bl.fc_b->value, bl.fc);
      gelu_forward(bl.fc, bl.act);
      linear_forward(*gemm_, tag(L, 4), bl.out_w->id, bl.act, bl.out_w->value, &bl.out_b->value, tmp_);
      add_inplace(x_, tmp_);
    }
    x_final_ = x_;
    layernorm_forward(x_final_, lnf_g_->value, lnf_b_->value, ln_eps, hf_, lnf_);
    linear_forward(*gemm_, tag(config_.layers, 0), head_->id, hf_, head_->value, static_cast<const tensor*>(nullptr), logits_);
  }

  void backward(const batch& b) {
    const int64_t seq = config_.context;
    const int64_t n_seq = b.rows / seq;
    // dx_ carries the gradient of the residual stream.
    linear_backward(*gemm_, tag(config_.layers, 0), head_->id, hf_, head_->value, dlogits_, &dh_,
                    head_->grad, static_cast<tensor*>(nullptr));
    layernorm_backward(x_final_, lnf_g_->value, lnf_, dh_, dx_, lnf_g_->grad, lnf_b_->grad);
    for (size_t l = blocks_.size(); l-- > 0;) {
      auto& bl = blocks_[l];
      const auto L = static_cast<int64_t>(l);
      // MLP sub-block: x = x_mid + proj(gelu(fc(ln2(x_mid))))
      linear_backward(*gemm_, tag(L, 4), bl.out_w->id, bl.act, bl.out_w->value, dx_, &dh_, bl.out_w->grad,
                      &bl.out_b->grad);
      gelu_backward(bl.fc, dh_, dtmp_);
      linear_backward(*gemm_, tag(L, 3), bl.fc_w->id, bl.h2, bl.fc_w->value, dtmp_, &dh_, bl.fc_w->grad,
                      &bl.fc_b->grad);
      layernorm_backward(bl.x_mid, bl.ln2_g->value, bl.ln2, dh_, dtmp_, bl.ln2_g->grad,
                         bl.ln2_b->grad);
      add_inplace(dx_, dtmp_);
      // Attention sub-block: x_mid = x_in + proj(attn(qkv(ln1(x_in))))
      linear_backward(*gemm_, tag(L, 2), bl.proj_w->id, bl.attn, bl.proj_w->value, dx_, &dh_, bl.proj_w->grad,
                      &bl.proj_b->grad);
      attention_backward(*gemm_, tag(L, 1), bl.qkv, bl.probs, dh_, n_seq, seq, config_.heads,
                         dqkv_);
      linear_backward(*gemm_, tag(L, 0), bl.qkv_w->id, bl.h1, bl.qkv_w->value, dqkv_, &dh_, bl.qkv_w->grad,
                      &bl.qkv_b->grad);
      layernorm_backward(bl.x_in, bl.ln1_g->value, bl.ln1, dh_, dtmp_, bl.ln1_g->grad,
                         bl.ln1_b->grad);
      add_inplace(dx_, dtmp_);
    }
    embedding_backward(b.tokens, dx_, tok_->grad);
    embedding_backward(pos_ids_, dx_, pos_->grad);
  }

  parameter *tok_, *pos_, *lnf_g_, *lnf_b_, *head_;
  std::vector<block> blocks_;
  std::vector<int32_t> pos_ids_;
  tensor x_, tmp_, x_final_, hf_, logits_, probs_, dlogits_;
  tensor dx_, dh_, dtmp_, dqkv_;
  layernorm_cache<float> lnf_;
};

}  // namespace

std::unique_ptr<model> make_gpt(const model_config& cfg, uint64_t seed, gemm_engine<float>& eng) {
  return std::make_unique<gpt>(cfg, seed, eng);
}

}  // namespace cleave
