// The PS's own work per tile, timed on this host with the live engine's
// kernels (not copies of them): block_key keying a block alone and copying
// it into a snapshot in the same pass (tile_issue.cpp's locate and shelve),
// freivalds::digest_b and freivalds::expect (the check's part over the
// operands, tile_check.cpp's prepare_check), row_sums::add (its pass over a
// result, which also copies the first partial into C) and fold_tile (a
// later partial added into C). Each op is timed on square blocks of 64 to
// 512 (the tiles the planner cuts for the calibration's fleets run 64 to
// 256 on a side), each call on blocks no call before it read lately, the
// best of several rounds, and fitted to
// seconds = fixed + bytes / rate by least squares; the fixed part printed
// is the ops' median. Prints the simulator's flags.
//
// Usage: bench_ps_ops [rounds (default 7)]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "actors/ps/engine/fold_order.hpp"
#include "actors/ps/verify/freivalds.hpp"
#include "schema/block_key.hpp"

using namespace cleave;

namespace {

using clock_type = std::chrono::steady_clock;

// Seconds per call: the best, over `rounds`, of the mean over enough calls
// to fill 5 ms.
double time_op(const std::function<void()>& op, int rounds) {
  int calls = 1;
  for (;;) {
    const auto t0 = clock_type::now();
    for (int i = 0; i < calls; ++i) op();
    if (std::chrono::duration<double>(clock_type::now() - t0).count() > 5e-3) break;
    calls *= 2;
  }
  double best = 1e30;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = clock_type::now();
    for (int i = 0; i < calls; ++i) op();
    best = std::min(best, std::chrono::duration<double>(clock_type::now() - t0).count() / calls);
  }
  return best;
}

struct fit {
  double fixed = 0, rate = 0;
};

// seconds = fixed + bytes / rate over the points, least squares.
fit line(const std::vector<std::pair<double, double>>& pts) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (auto [x, y] : pts) {
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double n = static_cast<double>(pts.size());
  const double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  return {std::max(0.0, (sy - slope * sx) / n), 1.0 / slope};
}

volatile uint64_t sink = 0;

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 7;
  const std::vector<int64_t> sides{64, 128, 256, 512};
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  struct op_points {
    const char* flag;
    std::vector<std::pair<double, double>> pts;
  } ops[] = {{"--ps-hash-rate", {}}, {"--ps-copy-rate", {}}, {"--ps-prepare-rate", {}},
             {"--ps-check-rate", {}}, {"--ps-fold-rate", {}}};
  for (int64_t n : sides) {
    // Blocks of live matrices twice as wide (row stride 2n), as the PS cuts
    // them, each call on the next of enough of them to fill 256 MB: the PS
    // reads a GEMM's operands and results once each, out of the caches.
    const int64_t ld = 2 * n;
    const int64_t count = std::max<int64_t>(4, (int64_t{256} << 20) / (n * ld * 4));
    std::vector<float> live(static_cast<size_t>(count * n * ld)), snap(static_cast<size_t>(n * n)),
      result(static_cast<size_t>(count * n * n)), c(static_cast<size_t>(count * n * ld));
    for (auto* v : {&live, &result, &c})
      for (auto& x : *v) x = value(rng);
    int64_t next = 0;
    auto at = [&](std::vector<float>& v, int64_t size) { return v.data() + (next++ % count) * size; };
    const double bytes = static_cast<double>(n * n) * 4;
    const std::vector<double> probes = freivalds::draw_probes(n, rng);
    const probe_window r = freivalds::window(probes, n, 0);
    auto block = [&] { return stored_block{at(live, n * ld), n, n, ld, false}; };
    const b_digest bd = freivalds::digest_b(block(), r);
    ops[0].pts.emplace_back(bytes, time_op([&] { sink += block_key(at(live, n * ld), n, n, ld); }, rounds));
    ops[1].pts.emplace_back(
      bytes, time_op([&] { sink += block_key(at(live, n * ld), n, n, ld, snap.data(), n); }, rounds));
    // digest_b over a B block and expect over an A block: one prepare each.
    const double digest = time_op([&] { sink += freivalds::digest_b(block(), r).finite; }, rounds);
    const double expect = time_op([&] { sink += freivalds::expect(block(), r).norms.size(); }, rounds);
    ops[2].pts.emplace_back(bytes, 0.5 * (digest + expect));
    ops[3].pts.emplace_back(bytes, time_op([&] {
                              row_sums sums(n, n);
                              sink += sums.add(at(result, n * n), n, r, bd, n, at(c, n * ld), ld);
                            }, rounds));
    ops[4].pts.emplace_back(bytes, time_op([&] {
                              float* into = at(c, n * ld);
                              fold_tile({into, n, ld, ld}, {0, n, 0, n}, at(result, n * n), false);
                            }, rounds));
  }
  std::vector<double> fixed;
  std::string flags;
  for (const auto& op : ops) {
    const fit f = line(op.pts);
    fixed.push_back(f.fixed);
    std::printf("%-18s", op.flag);
    for (auto [b, s] : op.pts) std::printf("  %6.0f KB %8.2f us", b / 1e3, s * 1e6);
    std::printf("  -> %.3g B/s + %.3g s\n", f.rate, f.fixed);
    char one[64];
    std::snprintf(one, sizeof(one), " %s=%.2g", op.flag, f.rate);
    flags += one;
  }
  std::sort(fixed.begin(), fixed.end());
  char one[64];
  std::snprintf(one, sizeof(one), " --ps-op-seconds=%.2g", fixed[fixed.size() / 2]);
  std::printf("flags:%s%s\n", flags.c_str(), one);
  return 0;
}
