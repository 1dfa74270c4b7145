#include "actors/planner/ps_tile_work.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <tuple>

#include "kernels/row_parts.hpp"

namespace cleave {

namespace {

constexpr double float_bytes = 4;  // the PS holds operands and results in float32

double elements(int64_t rows, int64_t cols) {
  return static_cast<double>(rows) * static_cast<double>(cols);
}

using block_id = std::tuple<int64_t, int64_t, int64_t, int64_t>;

}  // namespace

// This machine's, measured with the live PS's kernels on blocks out of the
// caches: `cmake --build build --target bench_ps_ops &&
// build/bench/ps_ops/bench_ps_ops` (bench/ps_ops/run.sh a), Release,
// -DCLEAVE_PORTABLE=OFF, one thread, the host shared with other builds.
ps_op_rates::ps_op_rates()
    : op_seconds(1.3e-6), hash_rate(6.1e9), copy_rate(5.8e9), prepare_rate(3.2e9), check_rate(4.9e9),
      fold_rate(5.6e9) {}

ps_op_rates ps_op_rates::none() {
  constexpr double inf = std::numeric_limits<double>::infinity();
  ps_op_rates r;
  r.op_seconds = 0;
  r.hash_rate = r.copy_rate = r.prepare_rate = r.check_rate = r.fold_rate = inf;
  return r;
}

double op_seconds(const ps_op_rates& r, double bytes, double rate) {
  if (bytes >= row_parts_min_bytes && r.threads > 1)
    rate = std::max(rate, std::min(rate * r.threads, r.memory_bandwidth));
  return r.op_seconds + bytes / rate;
}

bool ps_op_rates::is_none() const {
  return op_seconds == 0 && std::isinf(hash_rate) && std::isinf(copy_rate) && std::isinf(prepare_rate)
         && std::isinf(check_rate) && std::isinf(fold_rate);
}

std::string refusal(const ps_op_rates& r) {
  if (!(r.op_seconds >= 0) || !std::isfinite(r.op_seconds))
    return "--ps-op-seconds must be finite and >= 0";
  const std::pair<double, const char*> rates[] = {{r.hash_rate, "--ps-hash-rate"},
                                                  {r.copy_rate, "--ps-copy-rate"},
                                                  {r.prepare_rate, "--ps-prepare-rate"},
                                                  {r.check_rate, "--ps-check-rate"},
                                                  {r.fold_rate, "--ps-fold-rate"}};
  for (auto [rate, flag] : rates)
    if (!(rate > 0) || !std::isfinite(rate))
      return std::string(flag) + " must be a positive, finite number of bytes per second";
  if (r.threads < 1 || r.threads > 4096) return "--ps-op-threads must be 1 to 4096";
  if (!(r.memory_bandwidth > 0)) return "--ps-memory-bandwidth must be positive";
  return {};
}

double plan_ps_work::total() const {
  double s = prepare;
  for (double x : issue) s += x;
  for (double x : result) s += x;
  return s;
}

plan_ps_work ps_plan_work(const plan& p, const ps_op_rates& r, bool rounded) {
  plan_ps_work out;
  if (p.local || p.tiles.empty()) return out;
  out.issue.assign(p.tiles.size(), 0);
  out.result.assign(p.tiles.size(), 0);
  if (p.op != tile_op::gemm) {
    // Fused attention (a simulated op): its operands are its own, copied
    // whole, and its result taken whole; no shared blocks, no check.
    for (size_t i = 0; i < p.tiles.size(); ++i) {
      out.issue[i] = r.op_seconds + op_seconds(r, static_cast<double>(tile_down_bytes(p, p.tiles[i])), r.copy_rate);
      out.result[i] = op_seconds(r, static_cast<double>(tile_up_bytes(p, p.tiles[i].t)), r.fold_rate);
    }
    return out;
  }
  // As the engine's locate: a block is keyed the first time a tile names
  // it, and copied then if that tile sends it (or whenever wire rounding
  // puts every block in a snapshot); a block first keyed unsent is copied
  // when a later tile sends it.
  std::set<block_id> keyed_a, copied_a, keyed_b, copied_b, c_blocks, groups;
  auto touch = [&](std::set<block_id>& keyed, std::set<block_id>& copied, const block_id& b,
                   double bytes, bool sends) {
    const bool fresh = keyed.insert(b).second;
    if (sends && copied.insert(b).second) return op_seconds(r, bytes, r.copy_rate);
    return fresh ? op_seconds(r, bytes, r.hash_rate) : 0.0;
  };
  for (size_t i = 0; i < p.tiles.size(); ++i) {
    const auto& a = p.tiles[i];
    const tile& t = a.t;
    const double a_bytes = elements(t.m1 - t.m0, t.k1 - t.k0) * float_bytes;
    const double b_bytes = elements(t.k1 - t.k0, t.n1 - t.n0) * float_bytes;
    const double c_bytes = elements(t.m1 - t.m0, t.n1 - t.n0) * float_bytes;
    const block_id ab{t.m0, t.m1, t.k0, t.k1}, bb{t.k0, t.k1, t.n0, t.n1};
    out.issue[i] = r.op_seconds  // the task
                   + touch(keyed_a, copied_a, ab, a_bytes, rounded || !a.a_cached)
                   + touch(keyed_b, copied_b, bb, b_bytes, rounded || !a.b_cached);
    // The check's pass reads the result; the first partial on its block of
    // C is copied in by that pass, each later one added by fold_tile.
    const bool first_on_c = c_blocks.insert({t.m0, t.m1, t.n0, t.n1}).second;
    out.result[i] = op_seconds(r, c_bytes, r.check_rate)
                    + (first_on_c ? 0.0 : op_seconds(r, c_bytes, r.fold_rate));
    // Tiles sharing A's block are checked as one group: op(A)·y once per
    // group, op(B)·r once per B block.
    if (groups.insert(ab).second) out.prepare += op_seconds(r, a_bytes, r.prepare_rate);
  }
  for (const auto& b : keyed_b) {
    const auto [k0, k1, n0, n1] = b;
    out.prepare += op_seconds(r, elements(k1 - k0, n1 - n0) * float_bytes, r.prepare_rate);
  }
  return out;
}

}  // namespace cleave
