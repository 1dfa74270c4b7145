#include "actors/ps/sharded_ps.hpp"

#include <stdexcept>

#include "actors/ps/elapsed.hpp"

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

void sharded_ps::attach(model& m) {
  const int n_shards = shards();
  params_.clear();
  by_value_.clear();
  by_grad_.clear();
  params_.reserve(m.parameters().size());  // the maps point into params_
  for (auto& p : m.parameters()) {
    owned o;
    o.p = &p;
    const int64_t extent = p.shard_split == shard_axis::columns ? p.value.cols() : p.value.rows();
    for (const auto& r : split_evenly(extent, n_shards)) {
      slice_state st;
      st.where = {p.shard_split, r};
      copy_out(p.value, st.where, st.value);
      copy_out(p.adam_m, st.where, st.adam_m);
      copy_out(p.adam_v, st.where, st.adam_v);
      st.grad.resize(st.value.rows(), st.value.cols());
      o.slices.push_back(std::move(st));
    }
    params_.push_back(std::move(o));
    by_value_[p.value.data()] = &params_.back();
    by_grad_[p.grad.data()] = &params_.back();
  }
}

void sharded_ps::zero_grads() {
  pool_.run([&](int s) {
    for (auto& o : params_) o.slices[static_cast<size_t>(s)].grad.zero();
  });
}

double sharded_ps::reduce_gradients() {
  const auto t0 = clock_type::now();
  std::vector<double> squares(engines_.size(), 0.0);
  pool_.run([&](int s) {
    for (auto& o : params_) {
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
    for (auto& o : params_) {
      auto& st = o.slices[static_cast<size_t>(s)];
      if (st.value.size() > 0)
        adamw_update(st.value, st.grad, st.adam_m, st.adam_v, t, cfg, grad_scale, o.p->decay);
    }
  });
  const auto t0 = clock_type::now();
  pool_.run([&](int s) {
    for (auto& o : params_) {
      const auto& st = o.slices[static_cast<size_t>(s)];
      copy_in(st.value, st.where, o.p->value);
    }
  });
  exchange_seconds_ += seconds_since(t0);
}

void sharded_ps::gather_moments() {
  pool_.run([&](int s) {
    for (auto& o : params_) {
      const auto& st = o.slices[static_cast<size_t>(s)];
      copy_in(st.adam_m, st.where, o.p->adam_m);
      copy_in(st.adam_v, st.where, o.p->adam_v);
    }
  });
}

void sharded_ps::gemm(gemm_tag tag, const_view<float> a, bool trans_a, const_view<float> b,
                      bool trans_b, mut_view<float> c, float beta) {
  // A weight product is recognised by the weight's (or its gradient's)
  // storage and the transposes linear_forward / linear_backward use.
  auto find = [](const auto& map, const float* key) {
    auto it = map.find(key);
    return it == map.end() ? nullptr : it->second;
  };
  owned* w = nullptr;
  const gemm_role role = tag.role;
  if (role == gemm_role::forward && !trans_a && !trans_b)
    w = find(by_value_, b.data);
  else if (role == gemm_role::grad_input && !trans_a && trans_b)
    w = find(by_value_, b.data);
  else if (role == gemm_role::grad_weight && trans_a && !trans_b)
    w = find(by_grad_, c.data);
  if (w != nullptr) {
    const tensor& v = w->p->value;
    const bool whole = role == gemm_role::grad_weight
                         ? c.rows == v.rows() && c.cols == v.cols() && c.ld == v.cols()
                         : b.rows == v.rows() && b.cols == v.cols() && b.ld == v.cols();
    if (!whole) w = nullptr;
  }
  if (w == nullptr) {
    engines_[0]->gemm(tag, a, trans_a, b, trans_b, c, beta);
    return;
  }
  const bool by_columns = w->slices[0].where.axis == shard_axis::columns;
  auto slice = [&](int s) -> slice_state& { return w->slices[static_cast<size_t>(s)]; };

  // The product's reduction dimension is the split one: partial sums.
  if ((role == gemm_role::forward && !by_columns) || (role == gemm_role::grad_input && by_columns)) {
    partials_.resize(engines_.size());
    pool_.run([&](int s) {
      auto& st = slice(s);
      auto& out = partials_[static_cast<size_t>(s)];
      out.resize(c.rows, c.cols);
      if (st.where.range.size() == 0) return out.zero();
      engines_[static_cast<size_t>(s)]->gemm(tag, columns_of(a, st.where.range), false,
                                             st.value.view(), role == gemm_role::grad_input,
                                             out.view(), 0.0f);
    });
    const auto t0 = clock_type::now();
    auto cm = c.map();
    if (beta == 0.0f)
      cm.setZero();
    else if (beta != 1.0f)
      cm *= beta;
    for (const auto& part : partials_) cm += part.map();
    exchange_seconds_ += seconds_since(t0);
    return;
  }
  // Otherwise every shard writes its own columns of c, or its own gradient.
  pool_.run([&](int s) {
    auto& st = slice(s);
    const auto& r = st.where.range;
    if (r.size() == 0) return;
    auto& eng = *engines_[static_cast<size_t>(s)];
    if (role == gemm_role::forward)  // columns
      eng.gemm(tag, a, false, st.value.view(), false, columns_of(c, r), beta);
    else if (role == gemm_role::grad_input)  // rows
      eng.gemm(tag, a, false, st.value.view(), true, columns_of(c, r), beta);
    else if (by_columns)  // dW[:, r] = X^T dY[:, r]
      eng.gemm(tag, a, true, columns_of(b, r), false, st.grad.view(), beta);
    else  // dW[r, :] = X[:, r]^T dY
      eng.gemm(tag, columns_of(a, r), true, b, false, st.grad.view(), beta);
  });
}

}  // namespace cleave
