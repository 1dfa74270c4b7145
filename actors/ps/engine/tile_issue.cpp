// The distributed engine's tiles: cutting operand blocks (hashed for the
// devices' caches, copied into snapshots when sent), sending tasks, moving a
// tile (where to: tile_schedule.hpp), tiles the PS computes itself, and
// folding results into C. Checking results is tile_check.cpp's.

#include <algorithm>
#include <chrono>
#include <cstring>

#include <spdlog/spdlog.h>

#include "actors/planner/cost_model.hpp"
#include "actors/ps/engine/distributed_gemm.hpp"
#include "kernels/bf16.hpp"
#include "schema/block_key.hpp"

namespace cleave {


distributed_gemm::block_state distributed_gemm::shelve(const gemm_call& call, int which,
                                                       int64_t r0, int64_t r1, int64_t c0,
                                                       int64_t c1, std::optional<uint64_t> key) {
  const auto m = call.in.live(which);
  const float* at = m.data + r0 * m.ld + c0;
  const int64_t rows = r1 - r0, cols = c1 - c0;
  auto copy = [&](float* into) -> uint64_t {
    if (operand_precision(opts_.wire) != wire_precision::bf16) return block_key(at, rows, cols, m.ld, into, m.cols);
    // The key is the rounded values', the same in every call that rounds
    // the same live block.
    int64_t ld = m.cols;
    if (into == nullptr) {
      rounded_.resize(static_cast<size_t>(rows * cols));
      into = rounded_.data();
      ld = cols;
    }
    round_bf16_block(at, rows, cols, m.ld, into, ld);
    return wire_block_key(block_key(into, rows, cols, ld), wire_precision::bf16);
  };
  const auto spot = snapshots_.put({m.data, m.rows, m.cols, m.ld}, {r0, r1, c0, c1}, key, copy,
                                   call.in.read_again);
  return {spot.key, spot.snapshot};
}

distributed_gemm::block_ref distributed_gemm::locate(gemm_call& call, int which, int64_t r0,
                                                     int64_t r1, int64_t c0, int64_t c1,
                                                     batch_keys& batch, bool will_send) {
  const auto m = call.in.live(which);
  // (r0, r1, c0, c1) are ranges of op(m); the block travels as stored.
  if (call.in.transposed(which)) {
    std::swap(r0, c0);
    std::swap(r1, c1);
  }
  auto [it, fresh] = call.blocks.try_emplace(std::make_tuple(which, r0, r1, c0, c1));
  if (fresh) {
    // Memory no product of the batch writes: the same block of it, read by
    // another product (dY is dX's A and dW's B), has the same key.
    const float* at = m.data + r0 * m.ld + c0;
    const auto where = std::make_tuple(at, r1 - r0, c1 - c0, m.ld);
    auto [known, first] = batch.try_emplace(where);
    const std::optional<uint64_t> key = first ? std::nullopt : std::optional{known->second};
    // With bf16 operands every block is rounded into a snapshot, sent or not: the
    // devices compute on the rounded values, and so must the PS's checks
    // and its own tiles (block_of reads them there). A block to be sent is
    // hashed as it is copied.
    if (will_send || operand_precision(opts_.wire) == wire_precision::bf16)
      it->second = shelve(call, which, r0, r1, c0, c1, key);
    else
      it->second.key = key ? *key : block_key(at, r1 - r0, c1 - c0, m.ld, nullptr, m.cols);
    known->second = it->second.key;
  }
  return {which, r0, r1, c0, c1, it->second.key};
}

operand distributed_gemm::cut(gemm_call& call, const block_ref& ref, bool with_data) {
  const auto live = call.in.live(ref.which);
  operand op;
  op.key = ref.key;
  op.rows = ref.r1 - ref.r0;
  op.cols = ref.c1 - ref.c0;
  op.trans = call.in.transposed(ref.which);
  if (!with_data) return op;
  auto& state = call.blocks.at(std::make_tuple(ref.which, ref.r0, ref.r1, ref.c0, ref.c1));
  if (state.snapshot == nullptr)
    state = shelve(call, ref.which, ref.r0, ref.r1, ref.c0, ref.c1, ref.key);
  const int64_t ld = live.cols;  // the snapshot is the operand, packed
  op.shared = state.snapshot;
  op.offset = ref.r0 * ld + ref.c0;
  op.ld = ld;
  return op;
}

void distributed_gemm::send_task(gemm_call& call, pending_tile& p, int32_t dev,
                                 bool with_all_data) {
  if (opts_.pipelined_devices && batch_ != nullptr) {
    const uint32_t depth = device_pipeline_depth(fleet_.members().at(dev).profile.memory_bytes,
                                                 opts_.shards, tile_working_set(p.where.t));
    if (!window_.has_room(dev, depth)) {
      // Held from now on, as far as the schedule knows: it waits at the PS.
      window_.enqueue(dev, depth, {batch_->index_of(call), static_cast<size_t>(&p - call.tiles.data()), with_all_data});
      if (std::find(p.holders.begin(), p.holders.end(), dev) == p.holders.end()) p.holders.push_back(dev);
      return;
    }
    count_sent(dev);
  }
  dispatch(call, p, dev, with_all_data);
}

void distributed_gemm::count_sent(int32_t dev) {
  window_.sent(dev);
  auto& most = acc_.devices[dev].most_tasks_at_once;
  most = std::max(most, window_.most_in_flight(dev));
}

void distributed_gemm::send_waiting(int32_t dev) {
  while (auto t = window_.next(dev)) {
    auto& call = batch_->calls[t->call];
    auto& p = call.tiles[t->tile];
    // Taken by another device, or moved off this one, while it waited.
    if (p.done || p.arrived || !fleet_.has(dev) ||
        std::find(p.holders.begin(), p.holders.end(), dev) == p.holders.end())
      continue;
    count_sent(dev);
    dispatch(call, p, dev, t->with_all_data);
  }
}

void distributed_gemm::dispatch(gemm_call& call, pending_tile& p, int32_t dev,
                                bool with_all_data) {
  const auto& member = fleet_.members().at(dev);
  auto& known = sent_.of(member);
  auto& acct = acc_.devices[dev];
  tile_task msg;
  msg.key = p.key;
  msg.wire = opts_.wire;
  uint64_t bytes = 0;
  for (auto [ref, dst] : {std::pair{&p.a, &msg.a}, std::pair{&p.b, &msg.b}}) {
    ++acct.operands;
    // As the device will: a named block it still holds is looked up (and so
    // used again recently), a sent one cached.
    const bool send = with_all_data || known.get(ref->key) == nullptr;
    *dst = cut(call, *ref, send);
    const uint64_t block_bytes = static_cast<uint64_t>(dst->rows * dst->cols) * operand_element_bytes(opts_.wire);
    const auto first = sent_.named(member, ref->key);
    if (first.in_step) acc_.operand_bytes_once += block_bytes;
    if (first.for_holder) acc_.operand_bytes_once_per_holder += block_bytes;
    if (!send) ++acct.operands_named;
    if (send) {
      bytes += block_bytes;
      known.put(ref->key, cached_block{ref->r1 - ref->r0, ref->c1 - ref->c0, nullptr, 0, 0, {}});
    }
  }
  acct.bytes_down += bytes;
  if (std::find(p.holders.begin(), p.holders.end(), dev) == p.holders.end())
    p.holders.push_back(dev);
  if (std::find(p.given.begin(), p.given.end(), dev) == p.given.end()) p.given.push_back(dev);
  if (!egress_.paced()) {
    msg.sent_at_ns = caf::make_timestamp().time_since_epoch().count();
    self_->send(member.handle, std::move(msg));
    return;
  }
  // Every task of a paced link goes through the actor clock at the time it
  // is through, computed from that time alone: tasks due at the same time
  // (one naming a block the one before it carries) keep their order, which
  // a delay from each call's own `now` would not promise. The task carries
  // when the PS began sending it: the device's download ran meanwhile.
  using clock = caf::actor_clock::clock_type;
  const auto now = self_->clock().now();
  const double now_s = std::chrono::duration<double>(now.time_since_epoch()).count();
  const double through = egress_.pass(now_s, bytes);
  const double began = through - egress_.transfer_seconds(bytes);
  const clock::time_point due{
    std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(through))};
  msg.sent_at_ns = (caf::make_timestamp() + std::chrono::duration_cast<caf::timespan>(
                                              std::chrono::duration<double>(began - now_s)))
                     .time_since_epoch().count();
  self_->scheduled_send(member.handle, due, std::move(msg));
}

tile_policy distributed_gemm::policy() const {
  std::vector<policy_device> devices;
  for (const auto& [id, m] : fleet_.members()) devices.push_back({id, m.profile.memory_bytes});
  return tile_policy(std::move(devices));
}

std::vector<policy_tile> distributed_gemm::policy_view(const gemm_call& call) {
  std::vector<policy_tile> out;
  out.reserve(call.tiles.size());
  for (const auto& pt : call.tiles)
    out.push_back({tile_working_set(pt.where.t), pt.holders, pt.excluded, pt.done || pt.arrived,
                   pt.speculated});
  return out;
}

batch_view distributed_gemm::policy_view(const inflight_batch& batch) {
  batch_view out;
  out.reserve(batch.calls.size());
  for (const auto& call : batch.calls) out.push_back(policy_view(call));
  return out;
}

void distributed_gemm::reassign(gemm_call& call, pending_tile& p) {
  // The PS itself computes the tile when no device is left that can hold it.
  auto view = policy_view(call);
  const auto next = tile_schedule::reassign(view, 0, static_cast<size_t>(&p - call.tiles.data()),
                                            policy());
  p.where.device = next.device;
  if (next.device >= 0) send_task(call, p, next.device, true);
}

std::vector<float> distributed_gemm::compute_here(const gemm_call& call, const pending_tile& p) {
  const tile& t = p.where.t;
  std::vector<float> out(static_cast<size_t>((t.m1 - t.m0) * (t.n1 - t.n0)), 0.0f);
  const stored_block a = block_of(call, p.a);
  const stored_block b = block_of(call, p.b);
  gemm_local<float>({a.data, a.rows, a.cols, a.ld}, a.trans, {b.data, b.rows, b.cols, b.ld}, b.trans,
                    {out.data(), t.m1 - t.m0, t.n1 - t.n0, t.n1 - t.n0}, 0.0f);
  // Rounded as a device's result is, so a tile's numbers do not depend on
  // whether churn left it to the PS.
  if (result_precision(opts_.wire) == wire_precision::bf16) round_bf16(out.data(), out.data(), out.size());
  return out;
}

void distributed_gemm::compute_unheld(gemm_call& call, inflight_batch& batch) {
  // Tiles no device holds (none could take them, or they timed out) are
  // computed here, on one thread like a device: Eigen's thread count is
  // process-wide and changes its blocking (so the rounding) of the devices
  // computing the GEMM's other tiles right now. A replicated tile's first
  // copy, if one came, is dropped: the PS's own result needs no second.
  for (size_t i = 0; i < call.tiles.size(); ++i) {
    auto& pt = call.tiles[i];
    if (pt.done || pt.arrived || !pt.holders.empty()) continue;
    const auto t0 = clock_type::now();
    pt.result = compute_here(call, pt);
    acc_.totals.ps_compute_seconds += seconds_since(t0);
    std::vector<float>().swap(pt.first_copy);
    ++acc_.churn.tiles_at_ps;
    finish(call, i, batch);
  }
}

void distributed_gemm::fold_ready(gemm_call& call, size_t i) {
  const auto t0 = clock_type::now();
  for (size_t j : call.folds->ready(i)) {
    auto& pt = call.tiles[j];
    const tile& t = pt.where.t;
    if (!pt.in_c)
      fold_tile(call.c, {t.m0, t.m1, t.n0, t.n1}, pt.result.data(), call.folds->copies(j));
    std::vector<float>().swap(pt.result);
  }
  call.fold_seconds += seconds_since(t0);
}

}  // namespace cleave
