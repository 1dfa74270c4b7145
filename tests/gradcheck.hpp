#pragma once
// What the kernel tests share: double and float tensors, random fills,
// the relative error the gradchecks bound, central differences, naive
// causal attention to check forwards against, and an engine that records
// the products it is asked for.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <array>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "kernels/gemm.hpp"
#include "kernels/tensor.hpp"

namespace cleave::gradcheck {

using dt = basic_tensor<double>;
using ft = basic_tensor<float>;

constexpr double kTight = 1e-5;  // double gradcheck bound (contract bound is 1e-3)
constexpr double kFloat = 1e-4;  // float vs double agreement

inline dt rand_t(int64_t r, int64_t c, uint32_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  dt t(r, c);
  for (int64_t i = 0; i < t.size(); ++i) t[i] = u(gen);
  return t;
}

inline ft to_float(const dt& a) {
  ft f(a.rows(), a.cols());
  for (int64_t i = 0; i < a.size(); ++i) f[i] = static_cast<float>(a[i]);
  return f;
}
inline dt to_double(const ft& a) {
  dt d(a.rows(), a.cols());
  for (int64_t i = 0; i < a.size(); ++i) d[i] = a[i];
  return d;
}

// max|a-n| / max(1e-8, max|a| + max|n|)
inline double rel_err(const dt& a, const dt& n) {
  EXPECT_EQ(a.rows(), n.rows());
  EXPECT_EQ(a.cols(), n.cols());
  if (a.size() != n.size()) return 1e9;
  double md = 0, ma = 0, mn = 0;
  for (int64_t i = 0; i < a.size(); ++i) {
    md = std::max(md, std::abs(a[i] - n[i]));
    ma = std::max(ma, std::abs(a[i]));
    mn = std::max(mn, std::abs(n[i]));
  }
  if (std::isnan(md)) return 1e9;
  return md / std::max(1e-8, ma + mn);
}
inline double rel_err(const ft& a, const dt& n) { return rel_err(to_double(a), n); }

inline double dot(const dt& a, const dt& r) {
  EXPECT_EQ(a.size(), r.size());
  double s = 0;
  for (int64_t i = 0; i < std::min(a.size(), r.size()); ++i) s += a[i] * r[i];
  return s;
}

// Central differences of loss() with respect to every element of p.
template <class F>
dt numeric_grad(dt& p, F&& loss, double h = 1e-6) {
  dt g(p.rows(), p.cols());
  for (int64_t i = 0; i < p.size(); ++i) {
    const double o = p[i];
    p[i] = o + h;
    const double lp = loss();
    p[i] = o - h;
    const double lm = loss();
    p[i] = o;
    g[i] = (lp - lm) / (2 * h);
  }
  return g;
}

// Naive causal attention, for checking the forward.
inline dt attention_ref(const dt& qkv, int64_t batch, int64_t seq, int64_t heads) {
  const int64_t d = qkv.cols() / 3, dh = d / heads;
  dt out(batch * seq, d);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < seq; ++i) {
        std::vector<double> s(static_cast<size_t>(i + 1));
        double mx = -1e300;
        for (int64_t j = 0; j <= i; ++j) {
          double acc = 0;
          for (int64_t c = 0; c < dh; ++c)
            acc += qkv.at(b * seq + i, h * dh + c) * qkv.at(b * seq + j, d + h * dh + c);
          s[j] = acc / std::sqrt(double(dh));
          mx = std::max(mx, s[j]);
        }
        double z = 0;
        for (auto& v : s) z += (v = std::exp(v - mx));
        for (int64_t c = 0; c < dh; ++c) {
          double acc = 0;
          for (int64_t j = 0; j <= i; ++j)
            acc += s[j] / z * qkv.at(b * seq + j, 2 * d + h * dh + c);
          out.at(b * seq + i, h * dh + c) = acc;
        }
      }
  return out;
}

// Sanity: the gradient being checked is not trivially zero.
inline double max_abs(const dt& a) {
  double m = 0;
  for (int64_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i]));
  return m;
}

// Forwards every product to gemm_local and records the tags. Says it
// computes here the products `here` accepts (none by default), and records
// what it was asked and the local time it was handed.
template <class T>
struct recording_engine final : gemm_engine<T> {
  std::vector<gemm_tag> tags;
  std::function<bool(gemm_tag, int64_t, int64_t, int64_t)> here;
  std::vector<std::array<int64_t, 4>> asked;  // role, m, n, k
  int64_t local_products = 0;
  double local_seconds = 0;
  void gemm(gemm_tag tag, const_view<T> a, bool ta, const_view<T> b, bool tb, mut_view<T> c,
            T beta) override {
    tags.push_back(tag);
    gemm_local<T>(a, ta, b, tb, c, beta);
  }
  bool computes_here(gemm_tag tag, int64_t m, int64_t n, int64_t k) override {
    asked.push_back({static_cast<int64_t>(tag.role), m, n, k});
    return here && here(tag, m, n, k);
  }
  void add_local_seconds(double seconds, int64_t products) override {
    local_seconds += seconds;
    local_products += products;
  }
};

}  // namespace cleave::gradcheck
