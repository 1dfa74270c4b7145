#include "training/parameter_store.hpp"

#include <algorithm>

#include "kernels/gemm.hpp"
#include "schema/errors.hpp"

namespace cleave {

caf::error parameter_store::attach(std::deque<parameter>& params) {
  std::vector<parameter*> by_id;
  std::unordered_map<std::string, parameter*> by_name;
  for (auto& p : params) {
    if (p.id != static_cast<int32_t>(by_id.size()))
      return fail("parameter " + p.name + " has id " + std::to_string(p.id) + ", expected "
                  + std::to_string(by_id.size()));
    if (!by_name.emplace(p.name, &p).second)
      return fail("two parameters are named " + p.name);
    by_id.push_back(&p);
  }
  params_ = std::move(by_id);
  by_name_ = std::move(by_name);
  on_attach();
  return caf::none;
}

parameter* parameter_store::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<uint64_t> parameter_store::shard_bytes() const {
  uint64_t bytes = 0;
  for (const auto* p : params_)
    for (const tensor* t : {&p->value, &p->grad, &p->adam_m, &p->adam_v})
      bytes += static_cast<uint64_t>(t->rows() * t->cols()) * sizeof(float);
  return {bytes};
}

void local_parameter_store::zero_grads() {
  for (auto* p : params_) {
    if (!p->row_sparse) {
      p->grad.zero();
      continue;
    }
    const int64_t cols = p->grad.cols();
    const auto& rows = p->touched_rows;
    if (!p->touched_grads_zeroed) {
#pragma omp parallel for num_threads(compute_threads()) schedule(static) if (rows.size() > 4096)
      for (int64_t k = 0; k < static_cast<int64_t>(rows.size()); ++k)
        std::fill_n(p->grad.data() + static_cast<int64_t>(rows[static_cast<size_t>(k)]) * cols, cols, 0.0f);
    }
    p->touched_rows.clear();
    p->touched_grads_zeroed = false;
  }
}

double local_parameter_store::reduce_gradients() {
  double sq = 0;
  for (const auto* p : params_)
    sq += p->row_sparse ? sum_of_squares_rows(p->grad, p->touched_rows) : sum_of_squares(p->grad);
  return sq;
}

void local_parameter_store::update(const adamw_config& cfg, int64_t t, double grad_scale) {
  for (auto* p : params_) {
    if (p->row_sparse) {
      adamw_update_rows_zeroing(p->value, p->grad, p->adam_m, p->adam_v, p->touched_rows, t, cfg,
                                grad_scale, p->decay);
      p->touched_grads_zeroed = true;
    } else
      adamw_update(p->value, p->grad, p->adam_m, p->adam_v, t, cfg, grad_scale, p->decay);
  }
}

}  // namespace cleave
