// Sparse mode's ops, as ggml's test-backend-ops checks an op: against another
// implementation (the dense ops of kernels/ops.hpp) and against central
// finite differences in double.

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/gemm.hpp"
#include "kernels/ops.hpp"
#include "kernels/random.hpp"
#include "kernels/sparse/sparse_ops.hpp"

using namespace cleave;

namespace {

using tensor_d = basic_tensor<double>;

struct sparse_batch {
  std::vector<std::vector<int32_t>> ids;
  std::vector<std::vector<float>> values;
  std::vector<sparse_row> rows() const {
    std::vector<sparse_row> out;
    for (size_t r = 0; r < ids.size(); ++r)
      out.push_back({ids[r].data(), values[r].data(), static_cast<int64_t>(ids[r].size())});
    return out;
  }
  tensor_d dense(int64_t features) const {
    tensor_d x(static_cast<int64_t>(ids.size()), features);
    x.zero();
    for (size_t r = 0; r < ids.size(); ++r)
      for (size_t e = 0; e < ids[r].size(); ++e) x.at(static_cast<int64_t>(r), ids[r][e]) = values[r][e];
    return x;
  }
};

sparse_batch random_sparse(int64_t rows, int64_t features, int per_row, rng& r) {
  sparse_batch b;
  for (int64_t i = 0; i < rows; ++i) {
    std::vector<int32_t> ids;
    while (static_cast<int>(ids.size()) < per_row) {
      const auto f = static_cast<int32_t>(r.below(static_cast<uint64_t>(features)));
      if (std::find(ids.begin(), ids.end(), f) == ids.end()) ids.push_back(f);
    }
    std::sort(ids.begin(), ids.end());
    std::vector<float> values;
    for (size_t e = 0; e < ids.size(); ++e) values.push_back(static_cast<float>(r.normal()));
    b.ids.push_back(ids);
    b.values.push_back(values);
  }
  return b;
}

tensor_d normal(int64_t rows, int64_t cols, rng& r) {
  tensor_d t(rows, cols);
  fill_normal(t, 1.0, r);
  return t;
}

double max_abs_diff(const tensor_d& a, const tensor_d& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

// Central difference of f with respect to x[i].
double numeric(const std::function<double()>& f, double& x) {
  const double h = 1e-5, keep = x;
  x = keep + h;
  const double up = f();
  x = keep - h;
  const double down = f();
  x = keep;
  return (up - down) / (2 * h);
}

}  // namespace

TEST(sparse_ops, sparse_linear_equals_the_dense_layer) {
  rng r(21);
  const int64_t features = 40, out = 7;
  auto x = random_sparse(5, features, 6, r);
  auto w = normal(features, out, r), b = normal(1, out, r), dy = normal(5, out, r);
  tensor_d y, y_dense;
  sparse_linear_forward(x.rows(), w, b, y);
  const auto xd = x.dense(features);
  linear_forward(default_gemm_engine<double>(), 0, -1, xd, w, &b, y_dense);
  EXPECT_LT(max_abs_diff(y, y_dense), 1e-12);

  tensor_d dw(features, out), db(1, out), dw_dense(features, out), db_dense(1, out);
  dw.zero(); db.zero(); dw_dense.zero(); db_dense.zero();
  sparse_linear_backward(x.rows(), dy, dw, db);
  linear_backward<double>(default_gemm_engine<double>(), 0, -1, xd, w, dy, nullptr, dw_dense, &db_dense);
  EXPECT_LT(max_abs_diff(dw, dw_dense), 1e-12);
  EXPECT_LT(max_abs_diff(db, db_dense), 1e-12);
}

TEST(sparse_ops, sampled_softmax_over_every_neuron_is_the_dense_softmax) {
  rng r(22);
  const int64_t in = 6, neurons = 11, rows = 4;
  auto w = normal(neurons, in, r), b = normal(1, neurons, r), h = normal(rows, in, r);
  std::vector<int32_t> all(neurons), labels;
  std::iota(all.begin(), all.end(), 0);
  for (int64_t i = 0; i < rows; ++i) labels.push_back(static_cast<int32_t>(r.below(neurons)));
  // Dense: logits = h w^T + b, softmax cross-entropy, mean over rows.
  tensor_d logits(rows, neurons), probs, dlogits_dense;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < neurons; ++j) {
      double s = b[j];
      for (int64_t k = 0; k < in; ++k) s += h.at(i, k) * w.at(j, k);
      logits.at(i, j) = s;
    }
  const double dense_loss = softmax_xent_forward(logits, labels, probs);
  softmax_xent_backward(probs, labels, dlogits_dense);
  double loss = 0;
  for (int64_t i = 0; i < rows; ++i) {
    std::vector<double> l(neurons), d(neurons);
    active_logits(h.data() + i * in, w, b, all, l.data());
    for (int64_t j = 0; j < neurons; ++j) EXPECT_NEAR(l[j], logits.at(i, j), 1e-12);
    const auto stats = partial_softmax(l.data(), neurons);
    loss += sampled_softmax_xent(l.data(), all, {labels[i]}, stats, 1.0 / rows, d.data()) / rows;
    for (int64_t j = 0; j < neurons; ++j) EXPECT_NEAR(d[j], dlogits_dense.at(i, j), 1e-12);
  }
  EXPECT_NEAR(loss, dense_loss, 1e-12);
}

TEST(sparse_ops, a_softmax_in_parts_merges_into_the_whole) {
  rng r(23);
  std::vector<double> logits(30);
  for (auto& l : logits) l = 5 * r.normal();
  std::vector<int32_t> active(30);
  std::iota(active.begin(), active.end(), 100);
  const std::vector<int32_t> labels{104, 117};
  std::vector<double> whole_d(30), parts_d(30);
  const auto whole = partial_softmax(logits.data(), 30);
  const double whole_loss = sampled_softmax_xent(logits.data(), active, labels, whole, 1.0, whole_d.data());
  // Three model-lets: 0-9, 10-19, 20-29, each with its own labels.
  softmax_stats merged;
  for (int p = 0; p < 3; ++p) merged = merge(merged, partial_softmax(logits.data() + 10 * p, 10));
  EXPECT_NEAR(merged.max, whole.max, 0);
  EXPECT_NEAR(merged.sum, whole.sum, 1e-12 * whole.sum);
  double parts_loss = 0;
  for (int p = 0; p < 3; ++p) {
    std::vector<int32_t> mine(active.begin() + 10 * p, active.begin() + 10 * (p + 1)), my_labels;
    for (int32_t l : labels)
      if (std::binary_search(mine.begin(), mine.end(), l)) my_labels.push_back(l);
    // Each part weighs its labels by the sample's whole label count.
    std::vector<double> d(10);
    const double share = sampled_softmax_xent(logits.data() + 10 * p, mine, my_labels, merged, 1.0, d.data());
    parts_loss += share * static_cast<double>(my_labels.size()) / static_cast<double>(labels.size());
    for (int j = 0; j < 10; ++j) {
      // dlogits carry the target 1/|my_labels|; rescale to the whole's 1/|labels|.
      const bool is_label = std::binary_search(my_labels.begin(), my_labels.end(), mine[static_cast<size_t>(j)]);
      parts_d[static_cast<size_t>(10 * p + j)] =
        is_label ? d[static_cast<size_t>(j)] + 1.0 / my_labels.size() - 1.0 / labels.size() : d[static_cast<size_t>(j)];
    }
  }
  EXPECT_NEAR(parts_loss, whole_loss, 1e-12);
  for (size_t j = 0; j < 30; ++j) EXPECT_NEAR(parts_d[j], whole_d[j], 1e-12);
  EXPECT_THROW(sampled_softmax_xent(logits.data(), active, {3}, whole, 1.0, whole_d.data()),
               std::invalid_argument);
}

TEST(sparse_ops, active_backward_matches_finite_differences) {
  rng r(24);
  const int64_t in = 5, neurons = 9;
  auto w = normal(neurons, in, r), b = normal(1, neurons, r), h = normal(1, in, r);
  const std::vector<int32_t> active{0, 2, 3, 7, 8}, labels{3, 8};
  std::vector<double> l(active.size()), d(active.size());
  auto loss = [&] {
    active_logits(h.data(), w, b, active, l.data());
    return sampled_softmax_xent(l.data(), active, labels, partial_softmax(l.data(), 5), 1.0, d.data());
  };
  loss();
  tensor_d dw(neurons, in), db(1, neurons);
  dw.zero();
  db.zero();
  std::vector<double> dh(in, 0.0);
  const auto dl = d;
  active_backward(h.data(), w, active, dl.data(), dh.data(), dw, db);
  for (int64_t i = 0; i < in; ++i) EXPECT_NEAR(dh[static_cast<size_t>(i)], numeric(loss, h[i]), 1e-7);
  for (int64_t i = 0; i < w.size(); ++i) EXPECT_NEAR(dw[i], numeric(loss, w[i]), 1e-7) << i;
  for (int64_t j = 0; j < neurons; ++j) EXPECT_NEAR(db[j], numeric(loss, b[j]), 1e-7) << j;
  // Inactive neurons get nothing.
  for (int64_t k = 0; k < in; ++k) EXPECT_EQ(dw.at(1, k), 0.0);
}

TEST(sparse_ops, row_adamw_changes_a_row_exactly_as_the_whole_update) {
  rng r(25);
  tensor w = tensor(8, 16), g = tensor(8, 16);
  fill_normal(w, 1.0, r);
  fill_normal(g, 1.0, r);
  tensor w_all = w, m_all, v_all, w_rows = w, m_rows, v_rows;
  adamw_config cfg;
  cfg.lr = 1e-2;
  for (int64_t t = 1; t <= 3; ++t) {
    adamw_update(w_all, g, m_all, v_all, t, cfg, 0.7, true);
    adamw_update_rows(w_rows, g, m_rows, v_rows, {1, 4, 6}, t, cfg, 0.7, true);
  }
  for (int64_t row = 0; row < 8; ++row)
    for (int64_t c = 0; c < 16; ++c) {
      if (row == 1 || row == 4 || row == 6) EXPECT_EQ(w_rows.at(row, c), w_all.at(row, c));
      else EXPECT_EQ(w_rows.at(row, c), w.at(row, c));
    }
  EXPECT_THROW(adamw_update_rows(w_rows, g, m_rows, v_rows, {8}, 1, cfg, 1.0, true), std::out_of_range);
}

// Rows enough for the rows to spread over threads, and wider than one block
// of the update: still the whole update's values on the touched rows.
TEST(sparse_ops, many_wide_rows_change_exactly_as_the_whole_update) {
  rng r(26);
  const int64_t rows = 600, cols = 700;
  tensor w = tensor(rows, cols), g = tensor(rows, cols);
  fill_normal(w, 1.0, r);
  fill_normal(g, 1.0, r);
  tensor w_all = w, m_all, v_all, w_rows = w, m_rows, v_rows;
  std::vector<int32_t> odd;
  for (int32_t row = 1; row < rows; row += 2) odd.push_back(row);
  adamw_config cfg;
  cfg.lr = 1e-2;
  for (int64_t t = 1; t <= 2; ++t) {
    adamw_update(w_all, g, m_all, v_all, t, cfg, 0.7, true);
    adamw_update_rows(w_rows, g, m_rows, v_rows, odd, t, cfg, 0.7, true);
  }
  int64_t differ = 0;
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t c = 0; c < cols; ++c)
      differ += w_rows.at(row, c) != (row % 2 ? w_all.at(row, c) : w.at(row, c));
  EXPECT_EQ(differ, 0);
}

// The zeroing update changes weights and moments exactly as the plain one,
// and zeroes the listed rows of the gradient and no other.
TEST(sparse_ops, the_zeroing_update_is_the_update_and_clears_only_its_rows) {
  rng r(27);
  const int64_t rows = 600, cols = 130;
  tensor w = tensor(rows, cols), g = tensor(rows, cols);
  fill_normal(w, 1.0, r);
  fill_normal(g, 1.0, r);
  std::vector<int32_t> odd;
  for (int32_t row = 1; row < rows; row += 2) odd.push_back(row);
  adamw_config cfg;
  cfg.lr = 1e-2;
  tensor w_plain = w, m_plain, v_plain, w_zeroing = w, m_zeroing, v_zeroing, g_zeroing = g;
  adamw_update_rows(w_plain, g, m_plain, v_plain, odd, 1, cfg, 0.7, true);
  adamw_update_rows_zeroing(w_zeroing, g_zeroing, m_zeroing, v_zeroing, odd, 1, cfg, 0.7, true);
  int64_t differ = 0, wrong_grads = 0;
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t c = 0; c < cols; ++c) {
      differ += w_zeroing.at(row, c) != w_plain.at(row, c) || m_zeroing.at(row, c) != m_plain.at(row, c)
                || v_zeroing.at(row, c) != v_plain.at(row, c);
      wrong_grads += g_zeroing.at(row, c) != (row % 2 ? 0.0f : g.at(row, c));
    }
  EXPECT_EQ(differ, 0);
  EXPECT_EQ(wrong_grads, 0);
}

// Many rows are summed in blocks by threads: the same sum at any thread
// count, close to one running sum, and a few rows summed as one running sum.
TEST(sparse_ops, sum_of_squares_rows_does_not_depend_on_threads) {
  rng r(28);
  const int64_t rows = 9000, cols = 33;
  tensor g = tensor(rows, cols);
  fill_normal(g, 1.0, r);
  std::vector<int32_t> listed;
  for (int32_t row = 0; row < rows; row += 2) listed.push_back(row);
  auto running = [&](size_t count) {
    double total = 0;
    for (size_t k = 0; k < count; ++k) {
      double row = 0;
      for (int64_t c = 0; c < cols; ++c) row += static_cast<double>(g.at(listed[k], c)) * g.at(listed[k], c);
      total += row;
    }
    return total;
  };
  const int threads = compute_threads();
  set_compute_threads(1);
  const double one = sum_of_squares_rows(g, listed);
  set_compute_threads(2);
  const double two = sum_of_squares_rows(g, listed);
  set_compute_threads(threads);
  EXPECT_EQ(one, two);
  EXPECT_NEAR(one, running(listed.size()), 1e-9 * one);
  const std::vector<int32_t> few(listed.begin(), listed.begin() + 1000);
  EXPECT_NEAR(sum_of_squares_rows(g, few), running(few.size()), 1e-12 * running(few.size()));
}
