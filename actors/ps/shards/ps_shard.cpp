#include "actors/ps/shards/ps_shard.hpp"

namespace cleave {

caf::error local_shard::attach(const std::vector<parameter*>& params,
                               const std::vector<shard_slice>& mine) {
  std::vector<slice_state> slices(params.size());
  for (size_t id = 0; id < params.size(); ++id) {
    auto& st = slices[id];
    st.where = mine[id];
    st.decay = params[id]->decay;
    copy_out(params[id]->value, st.where, st.value);
    moment_out(params[id]->adam_m, st.where, st.value, st.adam_m);
    moment_out(params[id]->adam_v, st.where, st.value, st.adam_v);
  }
  store_.attach(std::move(slices));
  return {};
}

caf::error local_shard::zero_grads() {
  store_.zero_grads();
  return {};
}

caf::error local_shard::run(const std::vector<slice_product>& products,
                            const std::vector<gemm_job<float>>& whole) {
  auto jobs = store_.jobs_for(products);
  jobs.insert(jobs.end(), whole.begin(), whole.end());
  if (!jobs.empty()) engine_.gemm_batch(jobs);
  return {};
}

caf::expected<double> local_shard::add_grads(const std::vector<parameter*>& params) {
  for (size_t id = 0; id < params.size(); ++id) {
    auto& st = store_.slice(id);
    if (!params[id]->grad.empty()) add_out(params[id]->grad, st.where, st.grad);
  }
  return store_.sum_of_squares();
}

caf::error local_shard::update(const adamw_config& cfg, int64_t t, double grad_scale) {
  store_.update(cfg, t, grad_scale);
  return {};
}

void local_shard::gather_values(const std::vector<parameter*>& params) {
  for (size_t id = 0; id < params.size(); ++id) {
    const auto& st = store_.slice(id);
    copy_in(st.value, st.where, params[id]->value);
  }
}

caf::error local_shard::gather_moments(const std::vector<parameter*>& params) {
  for (size_t id = 0; id < params.size(); ++id) {
    const auto& st = store_.slice(id);
    copy_in(st.adam_m, st.where, params[id]->adam_m);
    copy_in(st.adam_v, st.where, params[id]->adam_v);
  }
  return {};
}

}  // namespace cleave
