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
// is the ops' median. Prints the simulator's flags. The fit runs on one
// thread (the rates are per thread); then each op on large blocks (1024 and
// 2048 a side, past row_parts_min_bytes) on one thread and on THREADS
// (default every core), as --ps-op-threads shares them.
//
// Usage: bench_ps_ops [rounds (default 7)] [threads (default every core)]

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
#include "kernels/gemm.hpp"
#include "kernels/row_parts.hpp"
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

// The five ops over n x n blocks of live matrices twice as wide, each call
// on the next of `count` of them: the callable for op i.
struct op_bench {
  int64_t n, ld, count;
  std::vector<float> live, snap, result, c;
  std::vector<double> probes;
  probe_window r{};
  b_digest bd;
  int64_t next = 0;

  op_bench(int64_t side, int64_t bytes_in_all, std::mt19937_64& rng)
      : n(side), ld(2 * side), count(std::max<int64_t>(4, bytes_in_all / (side * 2 * side * 4))) {
    std::uniform_real_distribution<float> value(-1.0f, 1.0f);
    live.resize(static_cast<size_t>(count * n * ld));
    snap.resize(static_cast<size_t>(n * n));
    result.resize(static_cast<size_t>(count * n * n));
    c.resize(static_cast<size_t>(count * n * ld));
    for (auto* v : {&live, &result, &c})
      for (auto& x : *v) x = value(rng);
    probes = freivalds::draw_probes(n, rng);
    r = freivalds::window(probes, n, 0);
    bd = freivalds::digest_b(block(), r);
  }
  float* at(std::vector<float>& v, int64_t size) { return v.data() + (next++ % count) * size; }
  stored_block block() { return stored_block{at(live, n * ld), n, n, ld, false}; }
  double bytes() const { return static_cast<double>(n * n) * 4; }

  // Seconds per call of op i (the order of the flags below).
  double seconds(int i, int rounds) {
    switch (i) {
      case 0: return time_op([&] { sink += block_key(at(live, n * ld), n, n, ld); }, rounds);
      case 1: return time_op([&] { sink += block_key(at(live, n * ld), n, n, ld, snap.data(), n); }, rounds);
      case 2: {  // digest_b over a B block and expect over an A block: one prepare each
        const double digest = time_op([&] { sink += freivalds::digest_b(block(), r).finite; }, rounds);
        const double expect = time_op([&] { sink += freivalds::expect(block(), r).norms.size(); }, rounds);
        return 0.5 * (digest + expect);
      }
      case 3:
        return time_op([&] {
          row_sums sums(n, n);
          sink += sums.add(at(result, n * n), n, r, bd, n, at(c, n * ld), ld);
        }, rounds);
      default:
        return time_op([&] {
          float* into = at(c, n * ld);
          fold_tile({into, n, ld, ld}, {0, n, 0, n}, at(result, n * n), false);
        }, rounds);
    }
  }
};

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 7;
  set_compute_threads(argc > 2 ? std::atoi(argv[2]) : 0);
  const int threads = compute_threads();
  const std::vector<int64_t> sides{64, 128, 256, 512};
  std::mt19937_64 rng(7);
  struct op_points {
    const char* flag;
    std::vector<std::pair<double, double>> pts;
  } ops[] = {{"--ps-hash-rate", {}}, {"--ps-copy-rate", {}}, {"--ps-prepare-rate", {}},
             {"--ps-check-rate", {}}, {"--ps-fold-rate", {}}};
  for (int64_t n : sides) {
    // The PS reads a GEMM's operands and results once each, out of the
    // caches: enough blocks to fill 256 MB.
    op_bench b(n, int64_t{256} << 20, rng);
    for (int i = 0; i < 5; ++i) ops[i].pts.emplace_back(b.bytes(), b.seconds(i, rounds));
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

  // Large blocks on one thread and on `threads`: bytes/s and the speed-up.
  std::printf("large blocks, 1 thread -> %d threads (bytes/s, speed-up):\n", threads);
  for (int64_t n : {1024, 2048}) {
    op_bench b(n, int64_t{512} << 20, rng);
    for (int i = 0; i < 5; ++i) {
      set_pass_threads(1);
      const double one_thread = b.seconds(i, rounds);
      set_pass_threads(threads);
      const double all = b.seconds(i, rounds);
      set_pass_threads(1);
      std::printf("  %-18s %5lld x %-5lld %8.3g -> %8.3g  %.2fx\n", ops[i].flag, static_cast<long long>(n),
                  static_cast<long long>(n), b.bytes() / one_thread, b.bytes() / all, one_thread / all);
    }
  }
  return 0;
}
