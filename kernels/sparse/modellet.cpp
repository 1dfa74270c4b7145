#include "kernels/sparse/modellet.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "kernels/random.hpp"
#include "kernels/reproducible.hpp"

namespace cleave {

modellet::modellet(modellet_state state, const modellet_sampling& sampling)
    : s_(std::move(state)), sampling_(sampling) {
  const int64_t rows = static_cast<int64_t>(s_.end) - s_.begin;
  if (rows <= 0 || s_.begin < 0 || s_.hidden <= 0)
    throw std::invalid_argument("modellet: empty range [" + std::to_string(s_.begin) + ", "
                                + std::to_string(s_.end) + ") or no hidden units");
  for (const tensor* t : {&s_.w, &s_.m_w, &s_.v_w})
    if (t->rows() != rows || t->cols() != s_.hidden)
      throw std::invalid_argument("modellet: a weight tensor is not [" + std::to_string(rows) + ", "
                                  + std::to_string(s_.hidden) + "]");
  for (const tensor* t : {&s_.b, &s_.m_b, &s_.v_b})
    if (t->rows() != rows || t->cols() != 1)
      throw std::invalid_argument("modellet: a bias tensor is not [" + std::to_string(rows) + ", 1]");
  gw_.resize(rows, s_.hidden);
  gw_.zero();
  gb_.resize(rows, 1);
  gb_.zero();
  if (sampling_.min_active < rows) {
    lsh_config hash = sampling_.lsh;
    // Each range draws its own hash functions: a device's tables are its own.
    hash.seed = derive_seed(hash.seed, static_cast<uint64_t>(s_.begin));
    index_ = std::make_unique<lsh_index>(hash, s_.hidden, static_cast<int32_t>(rows),
                                         sampling_.bucket_size, sampling_.policy);
    if (last_refresh(sampling_.schedule, s_.step) == 0)
      index_->rehash(s_.w.data(), s_.hidden);
    else
      index_->resume_at(sampling_.schedule, s_.step, s_.w.data(), s_.hidden);
  }
}

modellet_scores modellet::forward(const tensor& h, const label_rows& labels, int64_t step) {
  const int64_t n = h.rows();
  if (h.cols() != s_.hidden || labels.n != n)
    throw std::invalid_argument("modellet::forward: h is not [n, hidden] or labels are not n rows");
  drop_gradients();  // a step redone after a failure starts clean
  h_ = h;
  active_.resize(static_cast<size_t>(n));
  const int32_t rows = s_.end - s_.begin;
  const uint64_t step_seed = derive_seed(derive_seed(sampling_.seed, static_cast<uint64_t>(step)),
                                         static_cast<uint64_t>(s_.begin));
#pragma omp parallel for num_threads(compute_threads()) schedule(dynamic, 4)
  for (int64_t r = 0; r < n; ++r) {
    auto& act = active_[static_cast<size_t>(r)];
    if (!index_) {
      act.resize(static_cast<size_t>(rows));
      std::iota(act.begin(), act.end(), 0);
      continue;
    }
    std::vector<int32_t> forced;
    for (int64_t e = labels.offsets[r]; e < labels.offsets[r + 1]; ++e)
      if (labels.ids[e] >= s_.begin && labels.ids[e] < s_.end) forced.push_back(labels.ids[e] - s_.begin);
    std::sort(forced.begin(), forced.end());
    forced.erase(std::unique(forced.begin(), forced.end()), forced.end());
    thread_local std::vector<uint8_t> marks;
    if (marks.size() != static_cast<size_t>(rows)) marks.assign(static_cast<size_t>(rows), 0);
    rng draw(derive_seed(step_seed, static_cast<uint64_t>(r)));
    act = index_->active(h.data() + r * s_.hidden, forced, sampling_.min_active, draw, marks);
  }
  modellet_scores out;
  out.offsets.assign(static_cast<size_t>(n) + 1, 0);
  for (int64_t r = 0; r < n; ++r)
    out.offsets[static_cast<size_t>(r) + 1] =
      out.offsets[static_cast<size_t>(r)] + static_cast<int64_t>(active_[static_cast<size_t>(r)].size());
  offsets_ = out.offsets;
  out.ids.resize(static_cast<size_t>(out.offsets.back()));
  out.logits.resize(out.ids.size());
  out.stats.resize(static_cast<size_t>(n));
#pragma omp parallel for num_threads(compute_threads()) schedule(dynamic, 4)
  for (int64_t r = 0; r < n; ++r) {
    const auto& act = active_[static_cast<size_t>(r)];
    const int64_t at = out.offsets[static_cast<size_t>(r)];
    float* l = out.logits.data() + at;
    active_logits(h.data() + r * s_.hidden, s_.w, s_.b, act, l);
    out.stats[static_cast<size_t>(r)] = partial_softmax(l, static_cast<int64_t>(act.size()));
    for (size_t j = 0; j < act.size(); ++j) out.ids[static_cast<size_t>(at) + j] = act[j] + s_.begin;
  }
  return out;
}

std::string modellet::backward(const std::vector<float>& dlogits, tensor& dh, double& sum_of_squares) {
  if (offsets_.empty() || static_cast<int64_t>(dlogits.size()) != offsets_.back())
    return "modellet::backward: " + std::to_string(dlogits.size()) + " logit gradients for "
           + std::to_string(offsets_.empty() ? 0 : offsets_.back()) + " active pairs";
  const int64_t n = h_.rows();
  dh.resize(n, s_.hidden);
  dh.zero();
  const int threads = compute_threads();
  const int32_t rows = s_.end - s_.begin;
#pragma omp parallel num_threads(threads)
  {
#pragma omp for schedule(static)
    for (int64_t r = 0; r < n; ++r)
      active_grad_input(s_.w, active_[static_cast<size_t>(r)],
                        dlogits.data() + offsets_[static_cast<size_t>(r)], dh.data() + r * s_.hidden);
    // Samples share neurons: each thread owns a block of rows and adds the
    // samples in order, the same sums for any thread count (as in xc.cpp).
#pragma omp for schedule(static)
    for (int t = 0; t < threads; ++t) {
      const auto first = static_cast<int32_t>(static_cast<int64_t>(rows) * t / threads);
      const auto last = static_cast<int32_t>(static_cast<int64_t>(rows) * (t + 1) / threads);
      for (int64_t r = 0; r < n; ++r)
        active_grad_weight(h_.data() + r * s_.hidden, active_[static_cast<size_t>(r)],
                           dlogits.data() + offsets_[static_cast<size_t>(r)], first, last, gw_, gb_);
    }
  }
  std::vector<uint8_t> marks(static_cast<size_t>(rows), 0);
  for (int32_t r : touched_) marks[static_cast<size_t>(r)] = 1;
  for (const auto& act : active_)
    for (int32_t j : act)
      if (!marks[static_cast<size_t>(j)]) {
        marks[static_cast<size_t>(j)] = 1;
        touched_.push_back(j);
      }
  std::sort(touched_.begin(), touched_.end());
  sum_of_squares = sum_of_squares_rows(gw_, touched_) + sum_of_squares_rows(gb_, touched_);
  offsets_.clear();  // a second backward without a forward is refused
  return {};
}

void modellet::drop_gradients() {
  for (int32_t r : touched_) {
    std::fill_n(gw_.data() + static_cast<int64_t>(r) * s_.hidden, s_.hidden, 0.0f);
    gb_[r] = 0;
  }
  touched_.clear();
}

void modellet::update(const adamw_config& cfg, int64_t t, double grad_scale) {
  // As the PS's store would: out.w decays, out.b does not.
  adamw_update_rows(s_.w, gw_, s_.m_w, s_.v_w, touched_, t, cfg, grad_scale, true);
  adamw_update_rows(s_.b, gb_, s_.m_b, s_.v_b, touched_, t, cfg, grad_scale, false);
  rows_updated_ += static_cast<int64_t>(touched_.size());
  drop_gradients();
  s_.step = t;
  if (index_) index_->refresh(sampling_.schedule, t, s_.w.data(), s_.hidden);
}

}  // namespace cleave
