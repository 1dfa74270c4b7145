#include "actors/ps/sharded_ps.hpp"

#include <algorithm>
#include <stdexcept>

#include "training/elapsed.hpp"

namespace cleave {

namespace {

template <class View>
View columns_of(View v, const index_range& r) {
  return {v.data + r.begin, v.rows, r.size(), v.ld};
}

}  // namespace

sharded_ps::sharded_ps(std::vector<gemm_engine<float>*> engines)
    : engines_(std::move(engines)), pool_(static_cast<int>(engines_.size())) {
  if (engines_.empty()) throw std::invalid_argument("sharded_ps: no shard engines");
}

void sharded_ps::on_attach() {
  const int n_shards = shards();
  owned_.clear();
  owned_.reserve(params_.size());
  for (parameter* p : params_) {
    owned o;
    o.p = p;
    const int64_t extent = p->shard_split == shard_axis::columns ? p->value.cols() : p->value.rows();
    for (const auto& r : split_evenly(extent, n_shards)) {
      slice_state st;
      st.where = {p->shard_split, r};
      copy_out(p->value, st.where, st.value);
      copy_out(p->adam_m, st.where, st.adam_m);
      copy_out(p->adam_v, st.where, st.adam_v);
      st.grad.resize(st.value.rows(), st.value.cols());
      o.slices.push_back(std::move(st));
    }
    owned_.push_back(std::move(o));
  }
}

std::vector<uint64_t> sharded_ps::shard_bytes() const {
  std::vector<uint64_t> out(engines_.size(), 0);
  for (const auto& o : owned_)
    for (size_t s = 0; s < o.slices.size() && s < out.size(); ++s) {
      const auto& sl = o.slices[s];
      for (const tensor* t : {&sl.value, &sl.grad, &sl.adam_m, &sl.adam_v})
        out[s] += static_cast<uint64_t>(t->rows() * t->cols()) * sizeof(float);
    }
  return out;
}

void sharded_ps::zero_grads() {
  for (parameter* p : params_) p->grad.zero();
  pool_.run([&](int s) {
    for (auto& o : owned_) o.slices[static_cast<size_t>(s)].grad.zero();
  });
}

double sharded_ps::reduce_gradients() {
  const auto t0 = clock_type::now();
  std::vector<double> squares(engines_.size(), 0.0);
  pool_.run([&](int s) {
    for (auto& o : owned_) {
      auto& st = o.slices[static_cast<size_t>(s)];
      add_out(o.p->grad, st.where, st.grad);
      squares[static_cast<size_t>(s)] += sum_of_squares(st.grad);
    }
  });
  exchange_seconds_ += seconds_since(t0);
  double total = 0;
  for (double sq : squares) total += sq;  // shard order: the same sum every run
  return total;
}

void sharded_ps::update(const adamw_config& cfg, int64_t t, double grad_scale) {
  pool_.run([&](int s) {
    for (auto& o : owned_) {
      auto& st = o.slices[static_cast<size_t>(s)];
      if (st.value.size() > 0)
        adamw_update(st.value, st.grad, st.adam_m, st.adam_v, t, cfg, grad_scale, o.p->decay);
    }
  });
  const auto t0 = clock_type::now();
  pool_.run([&](int s) {
    for (auto& o : owned_) {
      const auto& st = o.slices[static_cast<size_t>(s)];
      copy_in(st.value, st.where, o.p->value);
    }
  });
  exchange_seconds_ += seconds_since(t0);
}

void sharded_ps::gather_moments() {
  pool_.run([&](int s) {
    for (auto& o : owned_) {
      const auto& st = o.slices[static_cast<size_t>(s)];
      copy_in(st.adam_m, st.where, o.p->adam_m);
      copy_in(st.adam_v, st.where, o.p->adam_v);
    }
  });
}

void sharded_ps::gemm(gemm_tag tag, const_view<float> a, bool trans_a, const_view<float> b,
                      bool trans_b, mut_view<float> c, float beta) {
  gemm_batch({{tag, a, trans_a, b, trans_b, c, beta}});
}

bool sharded_ps::computes_here(gemm_tag tag, int64_t m, int64_t n, int64_t k) {
  const bool weight_role = tag.role == gemm_role::forward || tag.role == gemm_role::grad_input ||
                           tag.role == gemm_role::grad_weight;
  return !weight_role && engines_[0]->computes_here(tag, m, n, k);
}

void sharded_ps::add_local_seconds(double seconds, int64_t products) {
  engines_[0]->add_local_seconds(seconds, products);
}

void sharded_ps::gemm_batch(const std::vector<gemm_job<float>>& jobs) {
  std::vector<std::vector<gemm_job<float>>> per_shard(engines_.size());
  std::vector<reduction> reductions;
  partials_.resize(std::max(partials_.size(), jobs.size()));
  for (const auto& job : jobs) split(job, per_shard, reductions);
  const bool only_first = std::all_of(per_shard.begin() + 1, per_shard.end(),
                                      [](const auto& v) { return v.empty(); });
  if (only_first)
    engines_[0]->gemm_batch(per_shard[0]);
  else
    pool_.run([&](int s) {
      auto& mine = per_shard[static_cast<size_t>(s)];
      if (!mine.empty()) engines_[static_cast<size_t>(s)]->gemm_batch(mine);
    });
  const auto t0 = clock_type::now();
  for (const auto& r : reductions) {
    auto cm = r.c.map();
    if (r.beta == 0.0f)
      cm.setZero();
    else if (r.beta != 1.0f)
      cm *= r.beta;
    for (const auto& part : *r.partials) cm += part.map();
  }
  if (!reductions.empty()) exchange_seconds_ += seconds_since(t0);
}

void sharded_ps::split(const gemm_job<float>& job,
                       std::vector<std::vector<gemm_job<float>>>& per_shard,
                       std::vector<reduction>& reductions) {
  const auto& [tag, a, trans_a, b, trans_b, c, beta] = job;
  // A weight product is recognised by the weight's id in its tag and the
  // transposes linear_forward / linear_backward use.
  owned* w = nullptr;
  const gemm_role role = tag.role;
  const bool registered = tag.weight >= 0 && static_cast<size_t>(tag.weight) < owned_.size();
  if (registered && ((role == gemm_role::forward && !trans_a && !trans_b)
                     || (role == gemm_role::grad_input && !trans_a && trans_b)
                     || (role == gemm_role::grad_weight && trans_a && !trans_b)))
    w = &owned_[static_cast<size_t>(tag.weight)];
  if (w != nullptr) {
    const tensor& v = w->p->value;
    // The tag must name the operand it came with: its whole value (or gradient).
    const bool whole = role == gemm_role::grad_weight
                         ? c.data == w->p->grad.data() && c.rows == v.rows() && c.cols == v.cols()
                             && c.ld == v.cols()
                         : b.data == v.data() && b.rows == v.rows() && b.cols == v.cols()
                             && b.ld == v.cols();
    if (!whole) w = nullptr;
  }
  if (w == nullptr) {
    per_shard[0].push_back(job);
    return;
  }
  const bool by_columns = w->slices[0].where.axis == shard_axis::columns;

  // The product's reduction dimension is the split one: partial sums.
  if ((role == gemm_role::forward && !by_columns) || (role == gemm_role::grad_input && by_columns)) {
    auto& partials = partials_[reductions.size()];
    partials.resize(engines_.size());
    reductions.push_back({c, beta, &partials});
    for (size_t s = 0; s < engines_.size(); ++s) {
      auto& st = w->slices[s];
      auto& out = partials[s];
      out.resize(c.rows, c.cols);
      if (st.where.range.size() == 0) {
        out.zero();
        continue;
      }
      per_shard[s].push_back({tag, columns_of(a, st.where.range), false, st.value.view(),
                              role == gemm_role::grad_input, out.view(), 0.0f});
    }
    return;
  }
  // Otherwise every shard writes its own columns of c, or its own gradient.
  for (size_t s = 0; s < engines_.size(); ++s) {
    auto& st = w->slices[s];
    const auto& r = st.where.range;
    if (r.size() == 0) continue;
    auto& mine = per_shard[s];
    if (role == gemm_role::forward)  // columns
      mine.push_back({tag, a, false, st.value.view(), false, columns_of(c, r), beta});
    else if (role == gemm_role::grad_input)  // rows
      mine.push_back({tag, a, false, st.value.view(), true, columns_of(c, r), beta});
    else if (by_columns)  // dW[:, r] = X^T dY[:, r]
      mine.push_back({tag, a, true, columns_of(b, r), false, st.grad.view(), beta});
    else  // dW[r, :] = X[:, r]^T dY
      mine.push_back({tag, columns_of(a, r), true, b, false, st.grad.view(), beta});
  }
}

}  // namespace cleave
