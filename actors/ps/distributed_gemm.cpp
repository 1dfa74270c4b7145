#include "actors/ps/distributed_gemm.hpp"

#include <chrono>
#include <cmath>

#include <spdlog/spdlog.h>

#include "actors/device/block_cache.hpp"
#include "schema/errors.hpp"

namespace cleave {

namespace {

using clock_type = std::chrono::steady_clock;

double since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

bool all_finite(const std::vector<float>& v) {
  for (float x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

}  // namespace

distributed_gemm::distributed_gemm(caf::actor_system& sys, caf::actor planner,
                                   double tile_timeout_seconds, caf::actor gateway)
    : self_(sys),
      planner_(std::move(planner)),
      gateway_(std::move(gateway)),
      tile_timeout_(std::chrono::duration_cast<caf::timespan>(
        std::chrono::duration<double>(tile_timeout_seconds))) {
  if (gateway_) self_->send(gateway_, subscribe_atom::value, caf::actor_cast<caf::actor>(self_));
}

caf::error distributed_gemm::begin_step(uint64_t step) {
  step_ = step;
  gemm_seq_ = 0;
  forward_plans_.clear();
  sent_.clear();
  caf::error err;
  self_->request(planner_, caf::infinite, fleet_atom::value)
    .receive(
      [&](uint64_t version, std::vector<fleet_member>& members) {
        if (version == fleet_version_) return;
        fleet_version_ = version;
        fleet_.clear();
        for (auto& m : members) {
          accounts_[m.id].profile = m.profile.name;
          fleet_.emplace(m.id, std::move(m));
        }
        plans_.clear();
      },
      [&](caf::error& e) { err = std::move(e); });
  if (err) return fail("cannot reach the planner: " + self_->system().render(err));
  return caf::none;
}

const plan& distributed_gemm::plan_for(gemm_tag tag, const gemm_problem& g) {
  const auto key = std::make_tuple(g.m, g.n, g.k, static_cast<int>(g.role),
                                   tag.role == gemm_role::forward ? 0u : tag.layer);
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    plan p;
    p.local = true;
    p.reason = "planner unreachable";
    auto fwd = forward_plans_.find(tag.layer);
    const bool mirror = (g.role == gemm_role::grad_input || g.role == gemm_role::grad_weight)
                        && fwd != forward_plans_.end() && !fwd->second.local;
    auto on_plan = [&](plan& reply) { p = std::move(reply); };
    auto on_error = [&](caf::error& e) {
      spdlog::warn("planner did not answer ({}); computing locally", self_->system().render(e));
    };
    if (mirror)
      self_->request(planner_, caf::infinite, mirror_atom::value, fwd->second, g.role, g)
        .receive(on_plan, on_error);
    else
      self_->request(planner_, caf::infinite, plan_atom::value, g).receive(on_plan, on_error);
    for (auto& a : p.tiles)
      if (fleet_.count(a.device) == 0) p.local = true;  // the fleet moved on; stay safe
    spdlog::debug("plan {}x{}x{} role {} layer {}: {}", g.m, g.n, g.k, static_cast<int>(g.role),
                  tag.layer, p.reason);
    it = plans_.emplace(key, std::move(p)).first;
  }
  if (g.role == gemm_role::forward) forward_plans_[tag.layer] = it->second;
  return it->second;
}

void distributed_gemm::run_local(const_view<float> a, bool ta, const_view<float> b, bool tb,
                                 mut_view<float> c, float beta) {
  const auto t0 = clock_type::now();
  // Devices are idle while the PS computes (a step's GEMMs run one after the
  // other), so the PS may use every core for its own products.
  set_gemm_threads(compute_threads());
  gemm_local<float>(a, ta, b, tb, c, beta);
  set_gemm_threads(1);
  totals_.ps_compute_seconds += since(t0);
  ++local_gemms_;
}

distributed_gemm::block_ref distributed_gemm::locate(const_view<float> m, bool trans, int64_t r0,
                                                     int64_t r1, int64_t c0, int64_t c1, int which,
                                                     block_keys& keys) {
  // (r0, r1, c0, c1) are ranges of op(m); the block travels as stored.
  if (trans) {
    std::swap(r0, c0);
    std::swap(r1, c1);
  }
  auto [it, fresh] = keys.try_emplace(std::make_tuple(which, r0, r1, c0, c1), 0);
  if (fresh) it->second = block_key(m.data + r0 * m.ld + c0, r1 - r0, c1 - c0, m.ld);
  return {r0, r1, c0, c1, it->second};
}

operand distributed_gemm::cut(const_view<float> m, bool trans, const block_ref& ref,
                              bool with_data) {
  operand op;
  op.key = ref.key;
  op.rows = ref.r1 - ref.r0;
  op.cols = ref.c1 - ref.c0;
  op.trans = trans;
  if (with_data) {
    op.data.resize(static_cast<size_t>(op.rows * op.cols));
    const float* src = m.data + ref.r0 * m.ld + ref.c0;
    for (int64_t r = 0; r < op.rows; ++r)
      std::copy(src + r * m.ld, src + r * m.ld + op.cols, op.data.data() + r * op.cols);
  }
  return op;
}

void distributed_gemm::send_task(const inputs& in, pending_tile& p, bool with_all_data) {
  const int32_t dev = p.where.device;
  auto& known = sent_[dev];
  auto& acct = accounts_[dev];
  tile_task msg;
  msg.key = p.key;
  for (auto [ref, m, trans, dst] : {std::tuple{&p.a, in.a, in.trans_a, &msg.a},
                                    std::tuple{&p.b, in.b, in.trans_b, &msg.b}}) {
    ++acct.operands;
    const bool send = with_all_data || known.count(ref->key) == 0;
    *dst = cut(m, trans, *ref, send);
    if (send) {
      acct.bytes_down += dst->data.size() * sizeof(float);
      known.insert(ref->key);
    }
  }
  const auto& member = fleet_.at(dev);
  if (member.bulk && gateway_)
    self_->send(gateway_, task_atom::value, dev, std::move(msg));
  else
    self_->send(member.handle, std::move(msg));
}

bool distributed_gemm::accept(pending_tile& p, tile_result& r) {
  const tile& t = p.where.t;
  const int64_t rows = t.m1 - t.m0;
  const int64_t cols = t.n1 - t.n0;
  const char* problem = nullptr;
  if (r.device != p.where.device)
    problem = "from a device the tile was not given to";
  else if (r.rows != rows || r.cols != cols || static_cast<int64_t>(r.data.size()) != rows * cols)
    problem = "of the wrong shape";
  else if (!all_finite(r.data))
    problem = "containing NaN or infinity";
  if (problem != nullptr) {
    ++refused_;
    ++accounts_[r.device].refused;
    spdlog::warn("refusing result {} for step {} gemm {} tile {} from device {}", problem,
                 r.key.step, r.key.gemm, r.key.tile, r.device);
    return false;
  }
  auto& acct = accounts_[r.device];
  ++acct.tiles;
  acct.bytes_up += r.data.size() * sizeof(float);
  acct.cache_hits += r.cache_hits;
  acct.busy_seconds += r.busy_seconds;
  acct.flops += static_cast<double>(t.flops());
  p.result = std::move(r.data);
  p.done = true;
  return true;
}

void distributed_gemm::reassign(const inputs& in, pending_tile& p) {
  // Next device in id order after the one that failed; the PS itself when
  // none is left that can hold the tile.
  const uint64_t need = tile_working_set(p.where.t);
  int32_t next = -1;
  for (int pass = 0; pass < 2 && next < 0; ++pass)
    for (const auto& [id, m] : fleet_)
      if ((pass == 1 || id > p.where.device) && id != p.where.device
          && m.profile.memory_bytes >= need && (next < 0 || id < next))
        next = id;
  p.where.device = next;
  if (next >= 0) send_task(in, p, true);
}

void distributed_gemm::gemm(gemm_tag tag, const_view<float> a, bool trans_a, const_view<float> b,
                            bool trans_b, mut_view<float> c, float beta) {
  gemm_problem g;
  g.m = c.rows;
  g.n = c.cols;
  g.k = trans_a ? a.rows : a.cols;
  g.role = tag.role;
  const uint32_t seq = gemm_seq_++;
  static const plan stay_local{};
  const plan& p = fleet_.empty() ? stay_local : plan_for(tag, g);
  if (p.local || p.tiles.empty()) {
    run_local(a, trans_a, b, trans_b, c, beta);
    return;
  }
  const inputs in{a, b, trans_a, trans_b};
  std::vector<pending_tile> tiles(p.tiles.size());
  block_keys keys;
  for (size_t i = 0; i < tiles.size(); ++i) {
    auto& pt = tiles[i];
    pt.where = p.tiles[i];
    const tile& t = pt.where.t;
    pt.key = tile_key{step_, seq, static_cast<uint32_t>(i)};
    pt.a = locate(a, trans_a, t.m0, t.m1, t.k0, t.k1, 0, keys);
    pt.b = locate(b, trans_b, t.k0, t.k1, t.n0, t.n1, 1, keys);
    send_task(in, pt, false);
  }
  tiles_total_ += tiles.size();
  totals_.predicted_wait_seconds += p.predicted_seconds;

  const auto t_wait = clock_type::now();
  size_t remaining = tiles.size();
  auto find = [&](const tile_key& k) -> pending_tile* {
    if (k.step != step_ || k.gemm != seq || k.tile >= tiles.size()) return nullptr;
    return &tiles[k.tile];
  };
  while (remaining > 0) {
    bool timed_out = false;
    self_->receive(
      [&](tile_result& r) {
        pending_tile* pt = find(r.key);
        if (pt == nullptr || pt->done) {
          spdlog::debug("dropping late or duplicate result step {} gemm {} tile {} from {}",
                        r.key.step, r.key.gemm, r.key.tile, r.device);
          return;
        }
        if (accept(*pt, r))
          --remaining;
        else if (r.device == pt->where.device)
          reassign(in, *pt);
      },
      [&](tile_miss& m) {
        pending_tile* pt = find(m.key);
        if (pt != nullptr && !pt->done && m.device == pt->where.device) {
          sent_[m.device].clear();  // its cache is not what we thought
          send_task(in, *pt, true);
        }
      },
      caf::after(tile_timeout_) >> [&] { timed_out = true; });
    if (timed_out) {
      for (auto& pt : tiles)
        if (!pt.done) {
          spdlog::warn("tile step {} gemm {} tile {} timed out on device {}; reassigning",
                       step_, seq, pt.key.tile, pt.where.device);
          pt.where.device = -1;
        }
    }
    // Tiles without a device (none could take them) are computed here.
    for (auto& pt : tiles) {
      if (pt.done || pt.where.device >= 0) continue;
      const tile& t = pt.where.t;
      pt.result.assign(static_cast<size_t>((t.m1 - t.m0) * (t.n1 - t.n0)), 0.0f);
      const auto& ra = pt.a;
      const auto& rb = pt.b;
      run_local({a.data + ra.r0 * a.ld + ra.c0, ra.r1 - ra.r0, ra.c1 - ra.c0, a.ld}, trans_a,
                {b.data + rb.r0 * b.ld + rb.c0, rb.r1 - rb.r0, rb.c1 - rb.c0, b.ld}, trans_b,
                {pt.result.data(), t.m1 - t.m0, t.n1 - t.n0, t.n1 - t.n0}, 0.0f);
      pt.done = true;
      --remaining;
    }
  }
  totals_.wait_seconds += since(t_wait);

  const auto t_gather = clock_type::now();
  auto cm = c.map();
  if (beta == 0.0f)
    cm.setZero();
  else if (beta != 1.0f)
    cm *= beta;
  for (auto& pt : tiles) {  // tile order: K partials add up the same way every run
    const tile& t = pt.where.t;
    const int64_t rows = t.m1 - t.m0;
    const int64_t cols = t.n1 - t.n0;
    for (int64_t r = 0; r < rows; ++r) {
      float* dst = c.data + (t.m0 + r) * c.ld + t.n0;
      const float* src = pt.result.data() + r * cols;
      for (int64_t j = 0; j < cols; ++j) dst[j] += src[j];
    }
  }
  totals_.allgather_seconds += since(t_gather);
}

}  // namespace cleave
