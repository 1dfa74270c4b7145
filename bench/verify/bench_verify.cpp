// Freivalds' test on the tiles gpt small and opt-125m produce: how often
// each kind of corruption is caught, and how often an honest tile is
// refused. The tiles are the planner's own, for every linear layer's
// forward, grad-input and grad-weight product on 16 devices of the
// overhead fleet (bench/runtime/overhead_fleet.json); operands are drawn
// like a transformer's (activations of unit scale, weights of 0.02, and
// post-GELU activations that are mostly positive).
//
// Usage: bench_verify [checks per model (default 100000)]

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "actors/device/lies.hpp"
#include "actors/planner/grid_search.hpp"
#include "actors/ps/verify/freivalds.hpp"
#include "kernels/gemm.hpp"
#include "kernels/random.hpp"

using namespace cleave;

namespace {

struct shape {
  int64_t m, n, k;
  bool ta, tb;
};

struct model_shapes {
  const char* name;
  int64_t tokens, d, ffn;
};

// Every distinct tile shape the planner makes for the model's linear layers.
std::vector<shape> tile_shapes(const model_shapes& ms) {
  std::vector<device_view> fleet;
  device_profile p{"overhead", 1e11, 8000000000, 1e10, 1e10, 0.0};
  for (int i = 0; i < 16; ++i) fleet.push_back({i, p, 0});
  planner_config cost;
  cost.ps_egress = 1e10;
  cost.max_tiles_per_device = 1;
  std::map<std::tuple<int64_t, int64_t, int64_t, bool, bool>, shape> out;
  const std::pair<int64_t, int64_t> layers[] = {
    {ms.d, 3 * ms.d}, {ms.d, ms.d}, {ms.d, ms.ffn}, {ms.ffn, ms.d}};  // qkv, proj, ffn in, ffn out
  for (auto [in, outw] : layers)
    for (auto role : {gemm_role::forward, gemm_role::grad_input, gemm_role::grad_weight}) {
      gemm_problem g;
      g.role = role;
      bool ta = false, tb = false;
      if (role == gemm_role::forward) { g.m = ms.tokens; g.n = outw; g.k = in; }
      if (role == gemm_role::grad_input) { g.m = ms.tokens; g.n = in; g.k = outw; tb = true; }
      if (role == gemm_role::grad_weight) { g.m = in; g.n = outw; g.k = ms.tokens; ta = true; }
      const plan pl = make_plan(g, fleet, cost);
      for (const auto& a : pl.tiles) {
        const tile& t = a.t;
        shape s{t.m1 - t.m0, t.n1 - t.n0, t.k1 - t.k0, ta, tb};
        out.try_emplace({s.m, s.n, s.k, ta, tb}, s);
      }
    }
  std::vector<shape> v;
  for (auto& [key, s] : out) v.push_back(s);
  return v;
}

// An honest tile: stored operands, the device's float product, and r.
struct instance {
  shape s;
  std::vector<float> a, b, c;
  stored_block a_block() const { return {a.data(), s.ta ? s.k : s.m, s.ta ? s.m : s.k, s.ta ? s.m : s.k, s.ta}; }
  stored_block b_block() const { return {b.data(), s.tb ? s.n : s.k, s.tb ? s.k : s.n, s.tb ? s.k : s.n, s.tb}; }
};

instance make_instance(const shape& s, std::mt19937_64& g, int flavour, double& gemm_seconds) {
  instance x{s, std::vector<float>(static_cast<size_t>(s.m * s.k)),
             std::vector<float>(static_cast<size_t>(s.k * s.n)), {}};
  std::normal_distribution<float> unit(0, 1), weight(0, 0.02f);
  // 0: activations x weights; 1: post-GELU activations (mostly positive);
  // 2: two activation-like operands (grad-weight: X^T dY).
  for (auto& v : x.a) v = flavour == 1 ? std::max(unit(g), -0.17f) : unit(g);
  for (auto& v : x.b) v = flavour == 2 ? unit(g) : weight(g);
  x.c.assign(static_cast<size_t>(s.m * s.n), 0.0f);
  const auto t0 = std::chrono::steady_clock::now();
  gemm_local<float>({x.a.data(), x.a_block().rows, x.a_block().cols, x.a_block().ld}, s.ta,
                    {x.b.data(), x.b_block().rows, x.b_block().cols, x.b_block().ld}, s.tb,
                    {x.c.data(), s.m, s.n, s.n}, 0.0f);
  gemm_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return x;
}

struct tally {
  uint64_t trials = 0, caught = 0;
  uint64_t above = 0, above_caught = 0;  // corruptions larger than the row's tolerance
  double smallest_ratio = 1e300, largest_ratio = 0;  // max over rows of |change| / tolerance
  double missed_above = 0;  // the largest such ratio among corruptions above it that passed
};

}  // namespace

int main(int argc, char** argv) {
  const long checks = argc > 1 ? std::atol(argv[1]) : 100000;
  set_gemm_threads(1);
  std::mt19937_64 g(2026);
  rng lie_rng(7);
  const freivalds f;
  const model_shapes models[] = {{"gpt small", 2048, 256, 1024}, {"opt-125m", 2048, 768, 3072}};
  for (const auto& ms : models) {
    const auto shapes = tile_shapes(ms);
    std::printf("== %s: %zu distinct tile shapes from the planner (16 overhead devices)\n", ms.name,
                shapes.size());
    // A handful of honest tiles per shape, each checked with many secret r.
    const int per_shape = 4;
    const long rs = std::max<long>(1, checks / static_cast<long>(shapes.size() * per_shape));
    uint64_t honest = 0, false_positives = 0;
    double worst = 0, verify_seconds = 0, gemm_seconds = 0;
    std::map<std::string, tally> kinds;
    for (const auto& s : shapes) {
      for (int inst = 0; inst < per_shape; ++inst) {
        instance x = make_instance(s, g, inst % 3, gemm_seconds);
        // "The previous step": the same activations, weights one AdamW step
        // (1e-3 of their scale) away.
        double unused = 0;
        const instance other = make_instance(s, g, inst % 3, unused);  // another batch, same shapes
        instance prev = x;
        std::normal_distribution<float> step(0, 1);
        for (auto& v : prev.b) v += 1e-3f * 0.02f * step(g);
        std::fill(prev.c.begin(), prev.c.end(), 0.0f);
        gemm_local<float>({prev.a.data(), x.a_block().rows, x.a_block().cols, x.a_block().ld}, s.ta,
                          {prev.b.data(), x.b_block().rows, x.b_block().cols, x.b_block().ld}, s.tb,
                          {prev.c.data(), s.m, s.n, s.n}, 0.0f);
        for (long rep = 0; rep < rs; ++rep) {
          const auto probes = freivalds::draw_probes(s.n, g);
          const auto r = freivalds::window(probes, s.n, 0);
          const auto t1 = std::chrono::steady_clock::now();
          const b_digest bd = freivalds::digest_b(x.b_block(), r);
          const verdict v = f.check(x.c.data(), s.m, s.n, x.a_block(), bd, r);
          verify_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
          ++honest;
          false_positives += v.checked && !v.passed;
          worst = std::max(worst, v.worst_ratio);
          if (rep % 25 != 0) continue;  // corruptions on every 25th r: enough trials, less time
          const auto ad = freivalds::digest_a(x.a_block());
          // A corruption is above the tolerance when some row's change has a
          // Euclidean norm above the tolerance the check applies to that row
          // (the more lenient probe's, with the corrupted row's magnitude).
          // For one element the probes see at least the change itself, less
          // the honest tile's own rounding (about 1% of the tolerance,
          // measured above); for several, a probe misses with probability
          // at most tolerance / largest change.
          auto try_kind = [&](const std::string& kind, const std::vector<float>& bad) {
            auto& t = kinds[kind];
            ++t.trials;
            const bool caught = !f.check(bad.data(), s.m, s.n, x.a_block(), bd, r).passed;
            t.caught += caught;
            double ratio = 0;
            for (int64_t i = 0; i < s.m; ++i) {
              double e2 = 0, magnitude = 0;
              for (int64_t j = 0; j < s.n; ++j) {
                const double got = bad[static_cast<size_t>(i * s.n + j)];
                const double e = got - x.c[static_cast<size_t>(i * s.n + j)];
                e2 += e * e;
                magnitude += std::fabs(got);
              }
              // The most lenient probe's tolerance.
              double tol = 0;
              for (double w2 : bd.weighted2)
                tol = std::max(tol, f.check_tolerance(s.k, s.n, ad.row_norms[static_cast<size_t>(i)],
                                                      std::sqrt(w2), magnitude));
              ratio = std::max(ratio, std::isfinite(magnitude) ? std::sqrt(e2) / tol : 1e300);
            }
            if (ratio > 1) {
              ++t.above;
              t.above_caught += caught;
              if (!caught) t.missed_above = std::max(t.missed_above, ratio);
            }
            t.smallest_ratio = std::min(t.smallest_ratio, ratio);
            t.largest_ratio = std::max(t.largest_ratio, ratio);
          };
          const int64_t at = static_cast<int64_t>(g() % static_cast<uint64_t>(s.m * s.n));
          for (double size : {1e-3, 1e-6}) {
            auto bad = x.c;
            corrupt_element_at(bad, s.m, s.n, at, size, (g() & 1) != 0);
            try_kind(size == 1e-3 ? "one element, 1e-3 relative" : "one element, 1e-6 relative", bad);
          }
          {
            auto bad = x.c;
            corrupt_row(bad, s.m, s.n, 1.0, lie_rng);
            try_kind("one row", bad);
          }
          {
            auto bad = x.c;
            for (auto& v : bad) v *= (g() & 1) ? 1.001f : 0.999f;
            try_kind("every element, 1e-3 relative", bad);
          }
          try_kind("previous step: another batch", other.c);
          try_kind("previous step: weights 1 step older", prev.c);
        }
      }
    }
    std::printf("   honest tiles: %lu checks, %lu refused (false positives); the largest |d|/tolerance seen %.3g\n",
                static_cast<unsigned long>(honest), static_cast<unsigned long>(false_positives), worst);
    std::printf("   checking cost %.1f%% of computing the same tiles with the float GEMM on one thread\n",
                100.0 * verify_seconds / static_cast<double>(rs) / gemm_seconds);
    std::printf("   %-38s %7s %8s %24s %22s %s\n", "corruption", "trials", "caught", "caught above tolerance",
                "size/tolerance (range)", "largest missed above");
    for (const auto& [kind, t] : kinds)
      std::printf("   %-38s %7lu %7.1f%% %15lu of %-6lu %10.2g .. %-10.2g %.4g\n", kind.c_str(),
                  static_cast<unsigned long>(t.trials), 100.0 * t.caught / std::max<uint64_t>(1, t.trials),
                  static_cast<unsigned long>(t.above_caught), static_cast<unsigned long>(t.above),
                  t.smallest_ratio, t.largest_ratio, t.missed_above);
  }
  return 0;
}
