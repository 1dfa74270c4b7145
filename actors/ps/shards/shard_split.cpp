#include "actors/ps/shards/shard_split.hpp"

#include <stdexcept>

namespace cleave {

namespace {

template <class View>
View columns_of(View v, const index_range& r) {
  return {v.data + r.begin, v.rows, r.size(), v.ld};
}

}  // namespace

void product_split::attach(const std::vector<parameter*>& params, int shards) {
  shards_ = shards;
  params_ = params;
  slices_.clear();
  for (const parameter* p : params) {
    const int64_t extent = p->shard_split == shard_axis::columns ? p->value.cols() : p->value.rows();
    std::vector<shard_slice> mine;
    for (const auto& r : split_evenly(extent, shards)) mine.push_back({p->shard_split, r});
    slices_.push_back(std::move(mine));
  }
}

parameter* product_split::weight_of(const gemm_job<float>& job) const {
  const auto& [tag, a, trans_a, b, trans_b, c, beta] = job;
  const gemm_role role = tag.role;
  if (tag.weight < 0 || static_cast<size_t>(tag.weight) >= params_.size()) return nullptr;
  if (!((role == gemm_role::forward && !trans_a && !trans_b)
        || (role == gemm_role::grad_input && !trans_a && trans_b)
        || (role == gemm_role::grad_weight && trans_a && !trans_b)))
    return nullptr;
  parameter* w = params_[static_cast<size_t>(tag.weight)];
  const tensor& v = w->value;
  // The tag must name the operand it came with: its whole value (or
  // gradient; one the coordinator does not keep comes as its shape alone).
  const float* grad = w->grad.empty() ? nullptr : w->grad.data();
  const bool whole = role == gemm_role::grad_weight
                       ? c.data == grad && c.rows == v.rows() && c.cols == v.cols()
                           && c.ld == v.cols()
                       : b.data == v.data() && b.rows == v.rows() && b.cols == v.cols()
                           && b.ld == v.cols();
  return whole ? w : nullptr;
}

void product_split::split(const std::vector<gemm_job<float>>& jobs, split_batch& out) {
  out.per_shard.assign(static_cast<size_t>(shards_), {});
  out.whole.clear();
  reductions_.clear();
  if (partials_.size() < jobs.size()) partials_.resize(jobs.size());
  for (const auto& job : jobs) split_one(job, out);
}

void product_split::split_one(const gemm_job<float>& job, split_batch& out) {
  const auto& [tag, a, trans_a, b, trans_b, c, beta] = job;
  const parameter* w = weight_of(job);
  if (w == nullptr) {
    if (c.data == nullptr && c.rows * c.cols > 0)
      throw std::runtime_error("a product into a gradient the coordinator does not keep names no PS shard's weight");
    out.whole.push_back(job);
    return;
  }
  const gemm_role role = tag.role;
  const auto& slices = slices_[static_cast<size_t>(tag.weight)];
  const bool by_columns = w->shard_split == shard_axis::columns;
  using kind_t = slice_product::kind_t;

  // The product's reduction dimension is the split one: partial sums.
  if ((role == gemm_role::forward && !by_columns) || (role == gemm_role::grad_input && by_columns)) {
    auto& partials = partials_[reductions_.size()];
    partials.resize(static_cast<size_t>(shards_));
    reductions_.push_back({c, beta});
    for (size_t s = 0; s < slices.size(); ++s) {
      auto& part = partials[s];
      part.resize(c.rows, c.cols);
      if (slices[s].range.size() == 0) {
        part.zero();
        continue;
      }
      slice_product sp;
      sp.kind = kind_t::times_slice;
      sp.tag = tag;
      sp.a = columns_of(a, slices[s].range);
      sp.trans_w = role == gemm_role::grad_input;
      sp.out = part.view();
      sp.beta = 0.0f;
      out.per_shard[s].push_back(sp);
    }
    return;
  }
  // Otherwise every shard writes its own columns of c, or its own gradient.
  for (size_t s = 0; s < slices.size(); ++s) {
    const auto& r = slices[s].range;
    if (r.size() == 0) continue;
    slice_product sp;
    sp.tag = tag;
    sp.beta = beta;
    if (role != gemm_role::grad_weight) {  // Y's columns (forward) or dX's (grad_input)
      sp.kind = kind_t::times_slice;
      sp.a = a;
      sp.trans_w = role == gemm_role::grad_input;
      sp.out = columns_of(c, r);
    } else {
      sp.kind = kind_t::into_grad;
      sp.trans_a = true;
      if (by_columns) {  // dW[:, r] = X^T dY[:, r]
        sp.a = a;
        sp.b = columns_of(b, r);
      } else {  // dW[r, :] = X[:, r]^T dY
        sp.a = columns_of(a, r);
        sp.b = b;
      }
    }
    out.per_shard[s].push_back(sp);
  }
}

bool product_split::reduce() {
  for (size_t i = 0; i < reductions_.size(); ++i) {
    const auto& r = reductions_[i];
    auto cm = r.c.map();
    if (r.beta == 0.0f)
      cm.setZero();
    else if (r.beta != 1.0f)
      cm *= r.beta;
    for (const auto& part : partials_[i]) cm += part.map();
  }
  return !reductions_.empty();
}

}  // namespace cleave
