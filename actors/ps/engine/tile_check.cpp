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
  return {live.data + ref.r0 * live.ld + ref.c0, ref.r1 - ref.r0, ref.c1 - ref.c0, live.ld,
          call.in.transposed(ref.which)};
}

verdict distributed_gemm::check(gemm_call& call, const pending_tile& p,
                                const std::vector<float>& result) {
  const auto t0 = clock_type::now();
  // The operands are the live ones: no product of the batch writes them
  // while its tiles are in flight.
  const stored_block a = block_of(call, p.a);
  const stored_block b = block_of(call, p.b);
  const tile& t = p.where.t;
  const double* r = call.signs.data() + t.n0;
  auto [ai, a_new] = call.a_digests.try_emplace({p.a.r0, p.a.r1, p.a.c0, p.a.c1});
  if (a_new) ai->second = freivalds::digest_a(a);
  auto [bi, b_new] = call.b_digests.try_emplace({p.b.r0, p.b.r1, p.b.c0, p.b.c1});
  if (b_new) bi->second = freivalds::digest_b(b, r);
  const verdict v = checker_.check(result.data(), t.m1 - t.m0, t.n1 - t.n0, a, ai->second,
                                   bi->second, r);
  acc_.verify.seconds += seconds_since(t0);
  return v;
}

void distributed_gemm::release(gemm_call& call, pending_tile& p, int32_t device) {
  if (std::find(p.excluded.begin(), p.excluded.end(), device) == p.excluded.end())
    p.excluded.push_back(device);
  const auto h = std::find(p.holders.begin(), p.holders.end(), device);
  if (h == p.holders.end()) return;
  p.holders.erase(h);
  if (p.holders.empty()) reassign(call, p);
}

distributed_gemm::taken distributed_gemm::take(gemm_call& call, pending_tile& p, tile_result& r,
                                               std::vector<gemm_call>& calls) {
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
  if (counts_against) {
    if (r.rows != rows || r.cols != cols || static_cast<int64_t>(r.data.size()) != rows * cols) {
      problem = "of the wrong shape";
    } else if (!all_finite(r.data)) {
      problem = "containing NaN or infinity";
    } else {
      const verdict v = check(call, p, r.data);
      if (!v.checked)
        ++acc_.verify.unverifiable;
      else if (v.passed)
        ++acc_.verify.tiles_verified;
      else
        problem = fmt::format("that failed verification (row {} off by {:.3g} times its tolerance)",
                              v.worst_row, v.worst_ratio);
    }
  }
  if (!problem.empty()) {
    ++acc_.refused;
    ++acc_.devices[from].refused;
    spdlog::warn("refusing result {} for step {} gemm {} tile {} from device {}", problem,
                 r.key.step, r.key.gemm, r.key.tile, from);
    release(call, p, from);
    if (counts_against) strike(from, problem, calls);
    return taken::refused;
  }
  trust_.passed(from);
  auto& acct = acc_.devices[from];
  ++acct.tiles;
  acct.bytes_up += r.data.size() * sizeof(float);
  acct.cache_hits += r.cache_hits;
  acct.busy_seconds += r.busy_seconds;
  acct.flops += static_cast<double>(t.flops());
  if (p.copies_wanted > 1 && p.first_device < 0) {
    p.first_device = from;
    p.first_copy = std::move(r.data);
    release(call, p, from);  // the second copy goes to a device other than this one
    return taken::held;
  }
  if (p.first_device >= 0) {
    settle_copies(call, p, from, std::move(r.data), calls);
  } else {
    p.result = std::move(r.data);
  }
  p.done = true;
  return taken::done;
}

void distributed_gemm::settle_copies(gemm_call& call, pending_tile& p, int32_t second,
                                     std::vector<float> result, std::vector<gemm_call>& calls) {
  const tile& t = p.where.t;
  const auto& ad = call.a_digests.at({p.a.r0, p.a.r1, p.a.c0, p.a.c1});
  const auto& bd = call.b_digests.at({p.b.r0, p.b.r1, p.b.c0, p.b.c1});
  const int64_t rows = t.m1 - t.m0, cols = t.n1 - t.n0, k = t.k1 - t.k0;
  ++acc_.verify.tiles_replicated;
  const auto t0 = clock_type::now();
  const bool agree =
    checker_.first_disagreement(p.first_copy.data(), result.data(), rows, cols, k, ad, bd) < 0;
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
    const int64_t at = checker_.first_disagreement(copy->data(), p.result.data(), rows, cols, k, ad, bd);
    if (at < 0) continue;
    ++acc_.refused;
    ++acc_.devices[dev].refused;
    const std::string why = fmt::format("whose element {} differs from the PS's own product", at);
    spdlog::warn("refusing result {} for step {} gemm {} tile {} from device {}", why, p.key.step,
                 p.key.gemm, p.key.tile, dev);
    strike(dev, why, calls);
  }
  std::vector<float>().swap(p.first_copy);
}

void distributed_gemm::strike(int32_t device, const std::string& why,
                              std::vector<gemm_call>& calls) {
  if (!trust_.failed(device)) return;
  acc_.verify.quarantined.insert(device);
  spdlog::warn("device {} is quarantined after {} refused results (the last {}); it gets no "
               "more tiles", device, opts_.trust.quarantine_after, why);
  self_->send(fleet_.planner(), quarantine_atom::value, device, why);
  on_event(fleet_event{fleet_event_kind::quarantined, device, 0}, calls);
}

}  // namespace cleave
