// The extreme classifier (--model=xc), SLIDE's network: sparse input features
// -> a dense hidden layer (ReLU) -> a wide output layer over the labels, with a
// softmax cross-entropy whose targets are uniform over each sample's labels.
//
// Parameters: in.w [features, hidden] and in.b [1, hidden]; out.w [labels,
// hidden] and out.b [labels, 1], neuron-major, so that a neuron is one row
// and a model-let (a range of neurons on a device) a block of rows.
//
// Sparse mode (xc_settings::sparse): each sample works only on its active set,
// the neurons its hidden activations' LSH buckets hold (an lsh_index over the
// output neurons' weights), its labels and a random top-up to min_active. Its
// softmax is over that set, computed as partial stats that merge, so the same
// code serves a layer split into model-lets. The store then updates only the
// rows the step touched: in.w's rows of the batch's features, out.w's and
// out.b's rows of the union of the active sets (row_sparse parameters).
// On devices (xc_settings::modellets), the output layer's neurons are
// ranges held by devices, each with its own index (D-SLIDE): the model
// sends the hidden activations and gets the hidden layer's gradient back
// (modellet_link.hpp). out.w and out.b stay here as the PS's copy of the
// layer, kept out of the store's updates (row_sparse, never touched), and
// evaluation scores every neuron from that copy, brought up to date first.
// Dense mode scores every neuron of every sample through the gemm engine:
// the full softmax sparse mode is measured against. Evaluation is exact
// (every neuron) in both.

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

#include <spdlog/spdlog.h>

#include "kernels/random.hpp"
#include "kernels/sparse/sparse_ops.hpp"
#include "training/models/model.hpp"
#include "training/models/modellet_link.hpp"

namespace cleave {
namespace {

// in.w's initial deviation: a sample has a handful of features of value
// about 1, so He's sqrt(2 / fan-in) over all features would start the hidden
// layer near zero; this starts its pre-activations at about unit scale.
constexpr double in_weight_stddev = 0.3;

// Byte counts of one sample's model-let messages (see sample_bytes).
constexpr double float_bytes = 4, id_bytes = 4, stats_bytes = 16;

// What a model-let split of the output layer moves for one sample: its
// hidden activations down to the devices, (neuron id, logit) pairs and the
// softmax stats (max and sum, two doubles) up, the logits' gradients down
// (values only, in the order of the ids sent up) and the hidden layer's
// partial gradient up. Dense, a split that returns full logits: the same
// without ids or stats, over every neuron.
double sample_bytes(int64_t hidden, int64_t active, bool sparse) {
  const double h = static_cast<double>(hidden), a = static_cast<double>(active);
  if (!sparse) return 2 * h * float_bytes + 2 * a * float_bytes;
  return 2 * h * float_bytes + a * (id_bytes + float_bytes) + stats_bytes + a * float_bytes;
}

// The k highest of n scores, best first (ties: the lower index).
void top_k(const float* x, int64_t n, int k, std::vector<int32_t>& out) {
  out.clear();
  for (int64_t j = 0; j < n; ++j) {
    if (static_cast<int>(out.size()) == k && x[j] <= x[out.back()]) continue;
    auto at = std::upper_bound(out.begin(), out.end(), x[j],
                               [&](float v, int32_t o) { return v > x[o]; });
    out.insert(at, static_cast<int32_t>(j));
    if (static_cast<int>(out.size()) > k) out.pop_back();
  }
}

class xc_model final : public model {
 public:
  xc_model(const model_config& cfg, uint64_t seed, gemm_engine<float>& eng, const xc_settings& xc)
      : model(cfg, eng),
        xc_(xc),
        seed_(seed),
        features_(cfg.inputs),
        hidden_(cfg.hidden.at(0)),
        labels_(cfg.classes) {
    rng r(derive_seed(seed, 1));
    in_w_ = &add_parameter("in.w", features_, hidden_, true);
    fill_normal(in_w_->value, in_weight_stddev, r);
    in_b_ = &add_parameter("in.b", 1, hidden_, false);
    out_w_ = &add_parameter("out.w", labels_, hidden_, true);
    fill_normal(out_w_->value, std::sqrt(1.0 / static_cast<double>(hidden_)), r);  // Xavier
    out_b_ = &add_parameter("out.b", labels_, 1, false);
    in_w_->row_sparse = true;
    out_w_->row_sparse = out_b_->row_sparse = xc_.sparse;
    marks_.assign(static_cast<size_t>(std::max(features_, labels_)), 0);
    if (xc_.modellets) {
      // The devices update these rows; the store must not.
      out_w_->row_sparse = out_b_->row_sparse = true;
    } else if (xc_.sparse) {
      min_active_ = xc_.min_active > 0 ? xc_.min_active
                                       : static_cast<int32_t>(std::max<int64_t>(1, labels_ / 200));
      lsh_config hash = xc_.lsh;
      hash.seed = derive_seed(seed, 2);
      index_ = std::make_unique<lsh_index>(hash, hidden_, static_cast<int32_t>(labels_),
                                           xc_.bucket_size, xc_.policy);
      index_->rehash(out_w_->value.data(), hidden_);
    } else {
      every_neuron_.resize(static_cast<size_t>(labels_));
      std::iota(every_neuron_.begin(), every_neuron_.end(), 0);
    }
  }

  double train_batch(const batch& b) override {
    hidden_forward(b);
    touch(*in_w_, {&b.feature_ids});
    const double loss = xc_.modellets ? modellet_output(b) : xc_.sparse ? sparse_output(b) : dense_output(b);
    relu_backward(pre_, dh_, dpre_);
    sparse_linear_backward(rows_, dpre_, in_w_->grad, in_b_->grad);
    return loss;
  }

  eval_totals evaluate(const batch& b) override {
    sync_external();
    hidden_forward(b);
    dense_logits(b.rows);
    const int64_t n = b.rows;
    std::vector<double> loss(static_cast<size_t>(n)), p1(loss.size()), p5(loss.size());
#pragma omp parallel for num_threads(compute_threads()) schedule(static)
    for (int64_t r = 0; r < n; ++r) {
      const float* row = logits_.data() + r * labels_;
      const id_range ls = labels_of(b, r);
      const int32_t *first = ls.first, *last = ls.last;
      if (first == last) continue;  // no labels: nothing to predict, counted as a miss
      const softmax_stats s = partial_softmax(row, labels_);
      const double log_z = s.max + std::log(s.sum);
      double sum = 0;
      for (auto l = first; l != last; ++l) sum += log_z - row[*l];
      loss[static_cast<size_t>(r)] = sum / static_cast<double>(last - first);
      thread_local std::vector<int32_t> best;
      top_k(row, labels_, 5, best);
      auto hit = [&](int32_t j) { return std::binary_search(first, last, j); };
      p1[static_cast<size_t>(r)] = hit(best[0]);
      p5[static_cast<size_t>(r)] = static_cast<double>(std::count_if(best.begin(), best.end(), hit)) / 5;
    }
    eval_totals out;
    out.rows = n;
    for (int64_t r = 0; r < n; ++r) {
      out.loss_sum += loss[static_cast<size_t>(r)];
      out.correct += static_cast<int64_t>(p1[static_cast<size_t>(r)]);
      out.precision_at_5_sum += p5[static_cast<size_t>(r)];
    }
    return out;
  }

  void after_update(int64_t step) override {
    step_ = step;
    if (index_) index_->refresh(xc_.schedule, step, out_w_->value.data(), hidden_);
  }

  void restored(int64_t step) override {
    step_ = step;
    if (!index_ && !xc_.modellets) return;
    // Without a refresh yet, the tables the constructor hashed from the
    // initial weights are the run's. On devices, the first step places the
    // restored layer and each model-let rebuilds its tables as of step_.
    const int64_t last = last_refresh(xc_.schedule, step);
    if (last == 0) return;
    if (last != step)
      spdlog::warn("step {} is not a hash-table refresh (the last was at step {}): the tables "
                   "are rebuilt from step {}'s weights, so this run is close to, not bit for "
                   "bit, the uninterrupted one",
                   step, last, step);
    if (index_) index_->resume_at(xc_.schedule, step, out_w_->value.data(), hidden_);
  }

  const sparse_traffic* traffic() const override { return &traffic_; }

  double external_sum_of_squares() const override { return external_sq_; }
  void update_external(const adamw_config& cfg, int64_t t, double grad_scale) override {
    if (!xc_.modellets) return;
    xc_.modellets->update(cfg, t, grad_scale);
    stale_ = true;
  }
  void sync_external() override {
    if (!xc_.modellets || !placed_ || !stale_) return;
    xc_.modellets->sync();
    stale_ = false;
  }

 private:
  struct id_range {
    const int32_t* first;
    const int32_t* last;
  };
  static id_range labels_of(const batch& b, int64_t r) {
    const int32_t* base = b.label_ids.data();
    return {base + b.label_offsets[static_cast<size_t>(r)],
            base + b.label_offsets[static_cast<size_t>(r) + 1]};
  }

  // h_ = relu(x in.w + in.b) over the batch's sparse rows.
  void hidden_forward(const batch& b) {
    rows_.resize(static_cast<size_t>(b.rows));
    for (int64_t r = 0; r < b.rows; ++r) {
      const int64_t first = b.feature_offsets[static_cast<size_t>(r)];
      rows_[static_cast<size_t>(r)] = {b.feature_ids.data() + first, b.feature_values.data() + first,
                                       b.feature_offsets[static_cast<size_t>(r) + 1] - first};
    }
    sparse_linear_forward(rows_, in_w_->value, in_b_->value, pre_);
    relu_forward(pre_, h_);
  }

  // Adds the ids of every list to p's touched rows, keeping them ascending
  // and distinct.
  void touch(parameter& p, const std::vector<const std::vector<int32_t>*>& lists) {
    auto& rows = p.touched_rows;
    for (int32_t r : rows) marks_[static_cast<size_t>(r)] = 1;
    for (const auto* ids : lists)
      for (int32_t id : *ids) {
        if (marks_[static_cast<size_t>(id)]) continue;
        marks_[static_cast<size_t>(id)] = 1;
        rows.push_back(id);
      }
    // Ascending: many rows (sparse mode's top-up touches about half the
    // output layer) are collected by one scan of the marks, few are sorted.
    const int64_t span = p.value.rows();
    if (static_cast<int64_t>(rows.size()) * 16 < span) {
      for (int32_t r : rows) marks_[static_cast<size_t>(r)] = 0;
      std::sort(rows.begin(), rows.end());
      return;
    }
    rows.clear();
    for (int64_t r = 0; r < span; ++r) {
      if (!marks_[static_cast<size_t>(r)]) continue;
      marks_[static_cast<size_t>(r)] = 0;
      rows.push_back(static_cast<int32_t>(r));
    }
  }

  // logits_ [n, labels] = h_ out.w^T + out.b: every neuron.
  void dense_logits(int64_t n) {
    logits_.resize(n, labels_);
    gemm_->gemm({1, gemm_role::forward, out_w_->id}, h_.view(), false, out_w_->value.view(), true,
                logits_.view(), 0.0f);
    const float* bias = out_b_->value.data();
#pragma omp parallel for num_threads(compute_threads()) schedule(static)
    for (int64_t r = 0; r < n; ++r) {
      float* row = logits_.data() + r * labels_;
      for (int64_t j = 0; j < labels_; ++j) row[j] += bias[j];
    }
  }

  double dense_output(const batch& b) {
    const int64_t n = b.rows;
    dense_logits(n);
    dlogits_.resize(n, labels_);
    std::vector<double> loss(static_cast<size_t>(n));
#pragma omp parallel for num_threads(compute_threads()) schedule(static)
    for (int64_t r = 0; r < n; ++r) {
      const float* row = logits_.data() + r * labels_;
      const id_range ls = labels_of(b, r);
      loss[static_cast<size_t>(r)] = sampled_softmax_xent(
        row, every_neuron_, std::vector<int32_t>(ls.first, ls.last), partial_softmax(row, labels_),
        1.0f / static_cast<float>(n), dlogits_.data() + r * labels_);
    }
    dh_.resize(n, hidden_);
    gemm_->gemm_batch({{{1, gemm_role::grad_input, out_w_->id}, dlogits_.view(), false,
                        out_w_->value.view(), false, dh_.view(), 0.0f},
                       {{1, gemm_role::grad_weight, out_w_->id}, dlogits_.view(), true, h_.view(),
                        false, out_w_->grad.view(), 1.0f}});
    float* db = out_b_->grad.data();
    for (int64_t r = 0; r < n; ++r) {
      const float* d = dlogits_.data() + r * labels_;
      for (int64_t j = 0; j < labels_; ++j) db[j] += d[j];
    }
    traffic_.samples += n;
    traffic_.active_sum += static_cast<double>(n * labels_);
    traffic_.bytes_sum += static_cast<double>(n) * sample_bytes(hidden_, labels_, false);
    return sum_over_rows(loss) / static_cast<double>(n);
  }

  double sparse_output(const batch& b) {
    const int64_t n = b.rows;
    active_.resize(static_cast<size_t>(n));
    active_logits_.resize(static_cast<size_t>(n));
    active_dlogits_.resize(static_cast<size_t>(n));
    std::vector<double> loss(static_cast<size_t>(n));
    // The top-up's draws depend only on the seed, the step and the row.
    const uint64_t step_seed = derive_seed(derive_seed(seed_, 3), static_cast<uint64_t>(step_));
#pragma omp parallel for num_threads(compute_threads()) schedule(dynamic, 4)
    for (int64_t r = 0; r < n; ++r) {
      const auto k = static_cast<size_t>(r);
      const float* h = h_.data() + r * hidden_;
      const id_range ls = labels_of(b, r);
      const std::vector<int32_t> labels(ls.first, ls.last);
      thread_local std::vector<uint8_t> marks;
      if (marks.size() != static_cast<size_t>(labels_)) marks.assign(static_cast<size_t>(labels_), 0);
      rng draw(derive_seed(step_seed, static_cast<uint64_t>(r)));
      active_[k] = index_->active(h, labels, min_active_, draw, marks);
      const auto a = static_cast<int64_t>(active_[k].size());
      active_logits_[k].resize(active_[k].size());
      active_dlogits_[k].resize(active_[k].size());
      active_logits(h, out_w_->value, out_b_->value, active_[k], active_logits_[k].data());
      loss[k] = sampled_softmax_xent(active_logits_[k].data(), active_[k], labels,
                                     partial_softmax(active_logits_[k].data(), a),
                                     1.0f / static_cast<float>(n), active_dlogits_[k].data());
    }
    dh_.resize(n, hidden_);
    dh_.zero();
    const int threads = compute_threads();
#pragma omp parallel num_threads(threads)
    {
#pragma omp for schedule(static)
      for (int64_t r = 0; r < n; ++r)
        active_grad_input(out_w_->value, active_[static_cast<size_t>(r)],
                          active_dlogits_[static_cast<size_t>(r)].data(), dh_.data() + r * hidden_);
      // Samples share neurons: each thread owns a range of rows and adds the
      // samples into it in row order, the same sums for any thread count.
#pragma omp for schedule(static)
      for (int t = 0; t < threads; ++t) {
        const auto first = static_cast<int32_t>(labels_ * t / threads);
        const auto end = static_cast<int32_t>(labels_ * (t + 1) / threads);
        for (int64_t r = 0; r < n; ++r)
          active_grad_weight(h_.data() + r * hidden_, active_[static_cast<size_t>(r)],
                             active_dlogits_[static_cast<size_t>(r)].data(), first, end,
                             out_w_->grad, out_b_->grad);
      }
    }
    double active_sum = 0;
    for (int64_t r = 0; r < n; ++r) {
      const auto k = static_cast<size_t>(r);
      active_sum += static_cast<double>(active_[k].size());
      traffic_.bytes_sum += sample_bytes(hidden_, static_cast<int64_t>(active_[k].size()), true);
    }
    std::vector<const std::vector<int32_t>*> sets;
    for (const auto& a : active_) sets.push_back(&a);
    touch(*out_w_, sets);
    out_b_->touched_rows = out_w_->touched_rows;
    traffic_.samples += n;
    traffic_.active_sum += active_sum;
    return sum_over_rows(loss) / static_cast<double>(n);
  }

  double modellet_output(const batch& b) {
    if (!placed_) {
      xc_.modellets->place(*out_w_, *out_b_, step_);
      placed_ = true;
    }
    const int64_t n = b.rows;
    const label_rows labels{b.label_offsets.data(), b.label_ids.data(), n};
    const modellet_step s = xc_.modellets->train(h_, labels, step_, dh_);
    external_sq_ = s.sum_of_squares;
    traffic_.samples += n;
    traffic_.active_sum += s.active_sum;
    traffic_.bytes_sum += s.bytes;
    return s.loss_sum / static_cast<double>(n);
  }

  static double sum_over_rows(const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return s;
  }

  xc_settings xc_;
  uint64_t seed_;
  int64_t features_, hidden_, labels_;
  int32_t min_active_ = 0;
  parameter *in_w_, *in_b_, *out_w_, *out_b_;
  std::unique_ptr<lsh_index> index_;   // sparse mode
  std::vector<int32_t> every_neuron_;  // dense mode: 0 .. labels - 1
  int64_t step_ = 0;                   // optimizer steps taken
  bool placed_ = false;                // on devices: the layer has been placed
  bool stale_ = false;                 // on devices: out.w and out.b lag the devices
  double external_sq_ = 0;             // on devices: the layer's gradient sum of squares
  std::vector<uint8_t> marks_;         // scratch for touch(), all zero between calls
  sparse_traffic traffic_;
  std::vector<sparse_row> rows_;
  tensor pre_, h_, dh_, dpre_, logits_, dlogits_;
  std::vector<std::vector<int32_t>> active_;
  std::vector<std::vector<float>> active_logits_, active_dlogits_;
};

}  // namespace

std::unique_ptr<model> make_xc(const model_config& cfg, uint64_t seed, gemm_engine<float>& eng,
                               const xc_settings& xc) {
  return std::make_unique<xc_model>(cfg, seed, eng, xc);
}

}  // namespace cleave
