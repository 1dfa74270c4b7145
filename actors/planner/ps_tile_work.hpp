#pragma once
// The PS's own work on a split product's tiles, op by op: keying each
// operand block (schema/block_key.hpp), copying the blocks it sends into
// snapshots in the same pass, the check's part over the operands that needs
// no result (freivalds::digest_b over each B block, freivalds::expect over
// each A block), the check's pass over each result as it comes
// (row_sums::add) and folding a K-split partial into C (fold_tile). Each op
// costs a fixed part per call plus the bytes it reads over its rate, at the
// rates bench/ps_ops measures on the host running the live PS's own
// kernels, on one thread. The PS's actor does all of it, one op after
// another, so it adds up on the PS's serial timeline; the simulator charges
// it there (batch_sim.hpp). A pass over a large block is shared among the
// PS's threads as the live kernels share it (kernels/row_parts.hpp), up to
// what the PS's memory can stream. Pure: from a plan, no data.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "actors/planner/plan.hpp"

namespace cleave {

// Bytes read per second by each op, and each call's fixed part. A default
// one holds this machine's figures (ps_tile_work.cpp says how they were
// measured); docs/SIMULATOR.md quotes the run.
struct ps_op_rates {
  ps_op_rates();
  double op_seconds;    // each op call's fixed part (the task's message, the loops' set-up)
  double hash_rate;     // block_key alone: a block the device holds is keyed, not sent
  double copy_rate;     // block_key copying the block into its snapshot in the same pass
  double prepare_rate;  // digest_b over a B block, expect over an A block
  double check_rate;    // row_sums::add over a result
  double fold_rate;     // fold_tile adding a result into C
  // The threads a pass over a block of at least row_parts_min_bytes is
  // shared among (--ps-op-threads, live and simulated), and the bytes/s
  // they can read together: such a pass runs at min(rate x threads,
  // memory_bandwidth), and never slower than one thread's rate.
  int threads = 1;
  double memory_bandwidth = std::numeric_limits<double>::infinity();
  // No work at all: every op free (the PS's links and devices alone).
  static ps_op_rates none();
  bool is_none() const;
};

// Empty when every rate is positive and finite and op_seconds finite and
// not negative; else the one line that says which flag is wrong.
std::string refusal(const ps_op_rates& r);

// One op: its fixed part and `bytes` at `rate`, on r.threads for a large pass.
double op_seconds(const ps_op_rates& r, double bytes, double rate);

// A split plan's PS work, as the live engine spends it.
struct plan_ps_work {
  // By tile, in plan order, when the PS issues it: its task, and keying (and
  // for a block it sends, copying) each block no tile before it named.
  std::vector<double> issue;
  // By tile: taking its result, checking it and, for a partial after the
  // first on its block of C, folding it.
  std::vector<double> result;
  // The check's part over the operands, done once per distinct block while
  // the devices work.
  double prepare = 0;
  double total() const;
};

// `rounded`: every block is rounded to bf16 into a snapshot (--wire=bf16),
// sent or not, so every block is copied. A plan with no tiles: nothing.
plan_ps_work ps_plan_work(const plan& p, const ps_op_rates& r, bool rounded);

}  // namespace cleave
