// The distributed engine's checks on what devices return: the result's
// shape, its values (finite), Freivalds' test against the operands
// (actors/ps/verify/freivalds.hpp), the two copies of a replicated tile,
// and the strikes that quarantine a device whose results are refused.

#include <algorithm>
#include <cstring>

#include <spdlog/spdlog.h>

#include "actors/ps/engine/distributed_gemm.hpp"

namespace cleave {

namespace {

bool all_finite(const std::vector<float>& v) {
  // Exponent bits all set means NaN or infinity. No early exit inside a
  // chunk, so the test vectorises: it runs on every result the PS accepts.
  constexpr size_t chunk = 4096;
  for (size_t i = 0; i < v.size(); i += chunk) {
    const size_t end = std::min(v.size(), i + chunk);
    uint32_t bad = 0;
    for (size_t j = i; j < end; ++j) {
      uint32_t u;
      std::memcpy(&u, &v[j], sizeof(u));
      bad |= static_cast<uint32_t>((u & 0x7f800000u) == 0x7f800000u);
    }
    if (bad != 0) return false;
  }
  return true;
}

}  // namespace

stored_block distributed_gemm::block_of(const gemm_call& call, const block_ref& ref) const {
  const auto live = call.in.live(ref.which);
  if (operand_precision(opts_.wire) == wire_precision::bf16) {  // what was sent: the rounded copy (locate)
    const float* snap =
      call.blocks.at(std::make_tuple(ref.which, ref.r0, ref.r1, ref.c0, ref.c1)).snapshot->data();
    return {snap + ref.r0 * live.cols + ref.c0, ref.r1 - ref.r0, ref.c1 - ref.c0, live.cols,
            call.in.transposed(ref.which)};
  }
  return {live.data + ref.r0 * live.ld + ref.c0, ref.r1 - ref.r0, ref.c1 - ref.c0, live.ld,
          call.in.transposed(ref.which)};
}

const b_digest& distributed_gemm::b_digest_of(gemm_call& call, const pending_tile& p) {
  auto [it, fresh] = call.b_digests.try_emplace({p.b.r0, p.b.r1, p.b.c0, p.b.c1});
  if (fresh) it->second = freivalds::digest_b(block_of(call, p.b), freivalds::window(call.probes, call.c.cols, p.where.t.n0));
  return it->second;
}

verdict distributed_gemm::check(gemm_call& call, const pending_tile& p, const float* result,
                                int64_t ld) {
  const auto t0 = clock_type::now();
  // The operands as sent (block_of): the live ones in fp32, which no product
  // of the batch writes while its tiles are in flight.
  const tile& t = p.where.t;
  const verdict v = checker_.check(result, t.m1 - t.m0, t.n1 - t.n0, block_of(call, p.a),
                                   b_digest_of(call, p), freivalds::window(call.probes, call.c.cols, t.n0), ld,
                                   result_precision(opts_.wire));
  acc_.verify.seconds += seconds_since(t0);
  return v;
}

bool distributed_gemm::prepare_check(inflight_batch& batch) {
  for (; batch.prepared_call < batch.calls.size(); ++batch.prepared_call, batch.prepared_group = 0) {
    auto& call = batch.calls[batch.prepared_call];
    while (batch.prepared_group < call.groups.size()) {
      auto& g = call.groups[batch.prepared_group++];
      if (g.judged || g.expected || opts_.trust_results) continue;
      const auto t0 = clock_type::now();
      // y = Σ_t op(B_t)·r_t in the group's tile order; the sums add the same
      // terms in the order results come, which the check's tolerance allows
      // for (freivalds::check with an a_expectation).
      const auto& first = call.tiles[g.tiles.front()];
      const int64_t k = first.where.t.k1 - first.where.t.k0;
      std::array<std::vector<double>, freivalds_probes> y;
      for (auto& v : y) v.assign(static_cast<size_t>(k), 0.0);
      for (size_t j : g.tiles) add_b_r(y, b_digest_of(call, call.tiles[j]));
      g.expected = freivalds::expect(block_of(call, first.a), probe_window{y[0].data(), y[1].data()});
      acc_.verify.idle_seconds += seconds_since(t0);
      return true;
    }
  }
  return false;
}

void distributed_gemm::release(gemm_call& call, pending_tile& p, int32_t device) {
  if (std::find(p.excluded.begin(), p.excluded.end(), device) == p.excluded.end())
    p.excluded.push_back(device);
  const auto h = std::find(p.holders.begin(), p.holders.end(), device);
  if (h != p.holders.end()) p.holders.erase(h);
  if (p.holders.empty()) reassign(call, p);
}

void distributed_gemm::refuse(gemm_call& call, pending_tile& p, int32_t device,
                              const std::string& why, bool strikes,
                              inflight_batch& batch) {
  ++acc_.refused;
  ++acc_.devices[device].refused;
  spdlog::warn("refusing result {} for step {} gemm {} tile {} from device {}", why, p.key.step,
               p.key.gemm, p.key.tile, device);
  if (p.arrived) {  // held for its group: the group waits for it again
    p.arrived = false;
    p.in_c = false;  // what it left in C is overwritten by the result finally taken
    std::vector<float>().swap(p.result);
    ++call.groups[p.group].open;
  }
  release(call, p, device);
  if (strikes) strike(device, why, batch);
}

void distributed_gemm::finish(gemm_call& call, size_t i, inflight_batch& batch) {
  auto& p = call.tiles[i];
  const bool was_open = !p.arrived;
  p.arrived = false;
  p.done = true;
  p.holders.clear();
  --call.remaining;
  fold_ready(call, i);
  if (!was_open) return;
  auto& g = call.groups[p.group];
  --g.open;
  judge(call, g, batch);
}

bool distributed_gemm::take(gemm_call& call, size_t i, tile_result& r,
                            inflight_batch& batch) {
  auto& p = call.tiles[i];
  const tile& t = p.where.t;
  const int64_t rows = t.m1 - t.m0;
  const int64_t cols = t.n1 - t.n0;
  const int32_t from = r.device;
  // An answer the device had no business sending is dropped; a wrong
  // answer to a task it was given counts against it.
  std::string problem;
  if (std::find(p.given.begin(), p.given.end(), from) == p.given.end())
    problem = "from a device the tile was not given to";  // it moved away: another may still win
  else if (trust_.quarantined(from))
    problem = "from a quarantined device";
  else if (from == p.first_device)
    problem = "a second time from the same device";
  const bool counts_against = problem.empty();
  auto& g = call.groups[p.group];
  // The group's sums see NaN and infinity in the pass they read the result
  // with; results checked otherwise are scanned for them first.
  const bool into_group = !opts_.trust_results && p.copies_wanted == 1 && !g.judged;
  if (counts_against) {
    if (r.rows != rows || r.cols != cols || static_cast<int64_t>(r.data.size()) != rows * cols) {
      problem = "of the wrong shape";
    } else if (r.wire != result_precision(opts_.wire)) {
      // A coarser result than asked for would widen its own tolerance.
      problem = fmt::format("in {} where {} was asked for", to_string(r.wire),
                            to_string(result_precision(opts_.wire)));
    } else if (into_group) {
      const auto t0 = clock_type::now();
      if (!g.sums) g.sums.emplace(rows, t.k1 - t.k0, result_precision(opts_.wire));
      // A result C takes by copy (the first on its block of C, beta 0) is
      // copied in by the pass that sums it: no second read of it when the
      // group passes, and its buffer is freed now. Its block of C is
      // written by no other tile before it is folded, and a refused result
      // is replaced there by the one finally taken.
      float* to = call.folds->copies(i) ? call.c.data + t.m0 * call.c.ld + t.n0 : nullptr;
      if (!g.sums->add(r.data.data(), cols, freivalds::window(call.probes, call.c.cols, t.n0),
                       b_digest_of(call, p), cols, to, call.c.ld))
        problem = "containing NaN or infinity";
      else
        p.in_c = to != nullptr;
      acc_.verify.seconds += seconds_since(t0);
    } else if (!all_finite(r.data)) {
      problem = "containing NaN or infinity";
    }
  }
  if (!problem.empty()) {
    refuse(call, p, from, problem, counts_against, batch);
    return false;
  }
  auto& acct = acc_.devices[from];
  ++acct.tiles;
  acct.bytes_up += r.data.size() * result_element_bytes(r.wire);
  acct.cache_hits += r.cache_hits;
  acct.busy_seconds += r.busy_seconds;
  acct.flops += static_cast<double>(t.flops());
  if (into_group) {
    // In its group's sums (above); the verdict comes when the group is complete.
    if (!p.in_c) p.result = std::move(r.data);
    p.arrived = true;
    p.answered_by = from;
    p.holders.clear();  // a copy still running elsewhere is no longer needed
    --g.open;
    judge(call, g, batch);
    return true;
  }
  if (!opts_.trust_results) {
    const verdict v = check(call, p, r.data.data());
    if (v.checked && !v.passed) {
      refuse(call, p, from,
             fmt::format("that failed verification (row {} off by {:.3g} times its tolerance)",
                         v.worst_row, v.worst_ratio),
             true, batch);
      return false;
    }
    ++(v.checked ? acc_.verify.tiles_verified : acc_.verify.unverifiable);
    trust_.passed(from);
  }
  if (p.copies_wanted > 1 && p.first_device < 0) {
    p.first_device = from;
    p.first_copy = std::move(r.data);
    release(call, p, from);  // the second copy goes to a device other than this one
    return true;
  }
  if (p.first_device >= 0)
    settle_copies(call, p, from, std::move(r.data), batch);
  else
    p.result = std::move(r.data);
  finish(call, i, batch);
  return true;
}

void distributed_gemm::judge(gemm_call& call, check_group& g, inflight_batch& batch) {
  if (g.open > 0 || g.judged || !g.sums) return;
  g.judged = true;
  std::vector<size_t> arrived;
  int64_t columns = 0;
  for (size_t j : g.tiles) {
    const tile& t = call.tiles[j].where.t;
    columns += t.n1 - t.n0;
    if (call.tiles[j].arrived) arrived.push_back(j);
  }
  const auto t0 = clock_type::now();
  const auto& first = call.tiles[g.tiles.front()];
  // The prepared op(A)·y holds every tile's B: it serves when the sums do too.
  const bool prepared = g.expected && arrived.size() == g.tiles.size() && g.sums->columns == columns;
  const verdict v = prepared ? checker_.check(*g.expected, first.where.t.k1 - first.where.t.k0, *g.sums)
                             : checker_.check(block_of(call, first.a), *g.sums);
  g.expected.reset();
  acc_.verify.seconds += seconds_since(t0);
  g.sums.reset();
  if (!v.checked || v.passed) {
    (v.checked ? acc_.verify.tiles_verified : acc_.verify.unverifiable) += arrived.size();
    for (size_t j : arrived) {
      trust_.passed(call.tiles[j].answered_by);
      finish(call, j, batch);
    }
    return;
  }
  // The sum is wrong in row v.worst_row: find the tiles at fault.
  for (size_t j : arrived) {
    auto& p = call.tiles[j];
    const tile& t = p.where.t;
    const verdict alone =
      p.in_c ? check(call, p, call.c.data + t.m0 * call.c.ld + t.n0, call.c.ld) : check(call, p, p.result.data());
    if (alone.checked && !alone.passed) {
      refuse(call, p, p.answered_by,
             fmt::format("that failed verification (row {} off by {:.3g} times its tolerance)",
                         alone.worst_row, alone.worst_ratio),
             true, batch);
      continue;
    }
    ++acc_.verify.tiles_verified;
    trust_.passed(p.answered_by);
    finish(call, j, batch);
  }
}

void distributed_gemm::settle_copies(gemm_call& call, pending_tile& p, int32_t second,
                                     std::vector<float> result, inflight_batch& batch) {
  const tile& t = p.where.t;
  const auto ad = freivalds::digest_a(block_of(call, p.a));
  const auto& bd = b_digest_of(call, p);
  const int64_t rows = t.m1 - t.m0, cols = t.n1 - t.n0, k = t.k1 - t.k0;
  ++acc_.verify.tiles_replicated;
  const auto t0 = clock_type::now();
  const bool agree = checker_.first_disagreement(p.first_copy.data(), result.data(), rows, cols, k, ad,
                                                 bd, result_precision(opts_.wire)) < 0;
  acc_.verify.seconds += seconds_since(t0);
  if (agree) {
    p.result = std::move(p.first_copy);
    return;
  }
  // One of them is wrong by more than rounding: the PS's own product decides.
  ++acc_.verify.replica_mismatches;
  const auto t1 = clock_type::now();
  p.result = compute_here(call, p);
  acc_.totals.ps_compute_seconds += seconds_since(t1);
  for (auto [dev, copy] : {std::pair{p.first_device, &p.first_copy}, std::pair{second, &result}}) {
    const int64_t at =
      checker_.first_disagreement(copy->data(), p.result.data(), rows, cols, k, ad, bd,
                                  result_precision(opts_.wire));
    if (at < 0) continue;
    ++acc_.refused;
    ++acc_.devices[dev].refused;
    const std::string why = fmt::format("whose element {} differs from the PS's own product", at);
    spdlog::warn("refusing result {} for step {} gemm {} tile {} from device {}", why, p.key.step,
                 p.key.gemm, p.key.tile, dev);
    strike(dev, why, batch);
  }
  std::vector<float>().swap(p.first_copy);
}

void distributed_gemm::strike(int32_t device, const std::string& why,
                              inflight_batch& batch) {
  if (!trust_.failed(device)) return;
  acc_.verify.quarantined.insert(device);
  spdlog::warn("device {} is quarantined after {} refused results (the last {}); it gets no "
               "more tiles", device, opts_.trust.quarantine_after, why);
  self_->send(fleet_.planner(), quarantine_atom::value, device, why);
  on_event(fleet_event{fleet_event_kind::quarantined, device, 0}, batch);
}

}  // namespace cleave
