#include "actors/ps/shards/shard_store.hpp"

namespace cleave {

void shard_store::attach(std::vector<slice_state> slices) {
  slices_ = std::move(slices);
  for (auto& st : slices_) st.grad.resize(st.value.rows(), st.value.cols());
}

void shard_store::zero_grads() {
  for (auto& st : slices_) st.grad.zero();
}

std::vector<gemm_job<float>> shard_store::jobs_for(const std::vector<slice_product>& products) {
  std::vector<gemm_job<float>> jobs;
  jobs.reserve(products.size());
  for (const auto& p : products) {
    auto& st = slices_[static_cast<size_t>(p.tag.weight)];
    if (p.kind == slice_product::kind_t::times_slice)
      jobs.push_back({p.tag, p.a, p.trans_a, st.value.view(), p.trans_w, p.out, p.beta});
    else
      jobs.push_back({p.tag, p.a, p.trans_a, p.b, p.trans_b, st.grad.view(), p.beta});
  }
  return jobs;
}

double shard_store::sum_of_squares() const {
  double total = 0;
  for (const auto& st : slices_) total += cleave::sum_of_squares(st.grad);
  return total;
}

void shard_store::update(const adamw_config& cfg, int64_t t, double grad_scale) {
  for (auto& st : slices_)
    if (st.value.size() > 0)
      adamw_update(st.value, st.grad, st.adam_m, st.adam_v, t, cfg, grad_scale, st.decay);
}

uint64_t shard_store::bytes() const {
  uint64_t out = 0;
  for (const auto& st : slices_)
    for (const tensor* t : {&st.value, &st.grad, &st.adam_m, &st.adam_v})
      out += static_cast<uint64_t>(t->rows() * t->cols()) * sizeof(float);
  return out;
}

}  // namespace cleave
