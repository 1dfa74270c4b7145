#include "actors/simulator/cleave_sim.hpp"

#include <algorithm>
#include <limits>

#include <spdlog/spdlog.h>

#include "actors/detector/detection_time.hpp"
#include "actors/planner/attention_plan.hpp"
#include "actors/planner/grid_search.hpp"
#include "actors/planner/placement.hpp"
#include "actors/ps/shards/shard_slices.hpp"
#include "schema/errors.hpp"

namespace cleave {

namespace {

bool has_weight(gemm_role r) {
  return r == gemm_role::forward || r == gemm_role::grad_input || r == gemm_role::grad_weight;
}

// Shard s's slice of a product: the weight's output columns are cut.
gemm_problem slice_of(const gemm_problem& g, int s, int shards) {
  gemm_problem out = g;
  out.sharers = shards;
  if (!has_weight(g.role) || shards == 1) return out;
  int64_t& cut = g.role == gemm_role::grad_input ? out.k : out.n;
  cut = split_evenly(cut, shards)[static_cast<size_t>(s)].size();
  return out;
}

// The step's plans, by product and shard: planned on first sight and
// re-placed on the members whenever the fleet changed since.
class sim_plans {
 public:
  sim_plans(const sim_config& cfg, const std::vector<step_gemm>& gemms)
      : cfg_(cfg), gemms_(gemms),
        shards_(static_cast<int>(cfg.shards.size())),
        plans_(gemms.size() * cfg.shards.size()), epochs_(plans_.size(), ~uint64_t{0}) {
    local_.local = true;
  }

  // The shards' plans for product i (shards without a slice get a local plan).
  std::vector<const plan*> for_product(size_t i, const sim_fleet& fleet) {
    std::vector<const plan*> out;
    const gemm_problem& g = gemms_[i].problem;
    for (int s = 0; s < shards_; ++s) {
      if (!has_weight(g.role) && s > 0) {
        out.push_back(&local_);
        continue;
      }
      const size_t at = i * cfg_.shards.size() + static_cast<size_t>(s);
      if (epochs_[at] == ~uint64_t{0}) {
        plans_[at] = make(i, s, fleet);
      } else if (epochs_[at] != fleet.epoch()) {
        // Attention tiles share no blocks: planned afresh on the devices left.
        plans_[at] = gemms_[i].op != tile_op::gemm
                       ? make(i, s, fleet)
                       : replace_plan(plans_[at], members(fleet), config_of(s));
      }
      epochs_[at] = fleet.epoch();
      out.push_back(&plans_[at]);
    }
    return out;
  }

 private:
  planner_config config_of(int s) const {
    // Every shard on a host of its own: fair_share leaves each its whole link.
    planner_config c = cfg_.planner;
    c.ps_links = shards_;
    c.ps_egress = cfg_.shards[static_cast<size_t>(s)].egress;
    c.ps_ingress = cfg_.shards[static_cast<size_t>(s)].ingress;
    c.relays = cfg_.relays.relays;
    return c;
  }

  static std::vector<device_view> members(const sim_fleet& fleet) {
    std::vector<device_view> out;
    for (size_t i = 0; i < fleet.size(); ++i)
      if (fleet.devices()[i].member)
        out.push_back({static_cast<int32_t>(i), fleet.devices()[i].profile, 0, 0,
                       fleet.devices()[i].relay});
    return out;
  }

  plan make(size_t i, int s, const sim_fleet& fleet) {
    const auto& e = gemms_[i];
    const gemm_problem g = slice_of(e.problem, s, shards_);
    const auto views = members(fleet);
    const auto cfg = config_of(s);
    if (e.op != tile_op::gemm) return plan_attention(e.op, g, views, cfg);
    if ((e.problem.role == gemm_role::grad_input || e.problem.role == gemm_role::grad_weight)
        && e.forward >= 0) {
      // The engine asks the planner to mirror the layer's forward plan of
      // the same step; the planner answers with backward_plan, as here. By
      // index, not name: layers of one shape share an entry under the
      // first one's name (gpt's head is "proj forward" when vocab = d).
      const plan& fwd = plans_[static_cast<size_t>(e.forward) * cfg_.shards.size() + static_cast<size_t>(s)];
      return backward_plan(fwd, e.problem.role, g, views, cfg).p;
    }
    return make_plan(g, views, cfg);
  }

  const sim_config& cfg_;
  const std::vector<step_gemm>& gemms_;
  int shards_;
  std::vector<plan> plans_;
  std::vector<uint64_t> epochs_;
  plan local_;
};

// What a run of batch_sim adds, so that identical instances add it again.
struct run_marks {
  std::vector<sim_device> devices;
  batch_totals totals;
  std::vector<relay_counts> relays;
};

void add_scaled(const run_marks& before, const run_marks& after_run, double times, sim_fleet& fleet,
                batch_totals& totals, std::vector<relay_counts>& relays) {
  auto scale = [&](auto b, auto a) { return static_cast<decltype(a)>((a - b) * times); };
  const batch_totals& after = after_run.totals;
  for (size_t i = 0; i < before.devices.size(); ++i) {
    const auto& b = before.devices[i];
    const auto& a = after_run.devices[i];
    auto& d = fleet.devices()[i];
    d.tiles += scale(b.tiles, a.tiles);
    d.bytes_down += scale(b.bytes_down, a.bytes_down);
    d.bytes_up += scale(b.bytes_up, a.bytes_up);
    d.busy_seconds += scale(b.busy_seconds, a.busy_seconds);
    d.flops += scale(b.flops, a.flops);
  }
  for (size_t r = 0; r < relays.size(); ++r) {
    const auto& b = before.relays[r];
    const auto& a = after_run.relays[r];
    relays[r].bytes_in += scale(b.bytes_in, a.bytes_in);
    relays[r].unique_bytes += scale(b.unique_bytes, a.unique_bytes);
    relays[r].bytes_out += scale(b.bytes_out, a.bytes_out);
    relays[r].results += scale(b.results, a.results);
  }
  const auto& b = before.totals;
  totals.tiles += scale(b.tiles, after.tiles);
  totals.tiles_reassigned += scale(b.tiles_reassigned, after.tiles_reassigned);
  totals.speculative_tiles += scale(b.speculative_tiles, after.speculative_tiles);
  totals.tiles_timed_out += scale(b.tiles_timed_out, after.tiles_timed_out);
  totals.tiles_at_ps += scale(b.tiles_at_ps, after.tiles_at_ps);
  totals.ps_tile_seconds += scale(b.ps_tile_seconds, after.ps_tile_seconds);
  totals.ps_op_seconds += scale(b.ps_op_seconds, after.ps_op_seconds);
  for (size_t s = 0; s < totals.shard_bytes_down.size(); ++s) {
    const uint64_t bd = s < b.shard_bytes_down.size() ? b.shard_bytes_down[s] : 0;
    const uint64_t bu = s < b.shard_bytes_up.size() ? b.shard_bytes_up[s] : 0;
    totals.shard_bytes_down[s] += scale(bd, after.shard_bytes_down[s]);
    totals.shard_bytes_up[s] += scale(bu, after.shard_bytes_up[s]);
  }
}

// A plan's operands with each block counted once: what the PS would send
// if every operand left it once (attention tiles' operands are their own).
uint64_t unique_operand_bytes(const plan& p) {
  if (p.op != tile_op::gemm) {
    uint64_t sum = 0;
    for (const auto& a : p.tiles) sum += tile_down_bytes(p, a);
    return sum;
  }
  const auto& g = p.problem;
  return static_cast<uint64_t>(g.m * g.k + g.k * g.n) * g.element_bytes;
}

// Bytes every shard sent and received so far.
std::pair<uint64_t, uint64_t> shard_bytes(const batch_totals& t) {
  uint64_t down = 0, up = 0;
  for (uint64_t b : t.shard_bytes_down) down += b;
  for (uint64_t b : t.shard_bytes_up) up += b;
  return {down, up};
}

}  // namespace

std::vector<shard_links> sim_config::ps_links() const {
  std::vector<shard_links> out = shards;
  if (ps_in_fact.link > 0)
    for (auto& l : out) l = {ps_in_fact.link, ps_in_fact.link};
  return out;
}

caf::expected<sim_result> simulate_cleave(const sim_config& cfg, churn_feed& churn,
                                          const sim_progress& progress) {
  if (cfg.shards.empty()) return fail("simulate: no PS shard");
  if (cfg.fleet.empty()) return fail("simulate: the fleet has no devices");
  auto gemms = step_gemms(cfg.model, cfg.batch);
  for (auto& g : gemms) {
    g.problem.element_bytes = operand_element_bytes(cfg.wire);
    g.problem.result_element_bytes = result_element_bytes(cfg.wire);
  }
  if (cfg.attention_tiles && cfg.model.kind == "gpt") gemms = fuse_attention(gemms, cfg.model, cfg.batch);
  sim_result res;
  planner_config as_is = cfg.planner;
  as_is.ps_flops = cfg.ps_flops();
  res.ps = estimate_ps_work(cfg.model, cfg.batch, as_is, static_cast<int>(cfg.shards.size()));
  res.detection_seconds = detection_seconds(cfg.detector);
  res.total_flops_per_step = step_gemm_flops(gemms);
  sim_fleet fleet(cfg.fleet, cfg.relays.relay_of);
  sim_plans plans(cfg, gemms);
  batch_sim batches(cfg.ps_links(), cfg.schedule, cfg.ps_flops(), res.detection_seconds,
                    cfg.egress_model, cfg.planner.pipelined_devices, cfg.relays.relays, cfg.ps_ops,
                    operand_precision(cfg.wire) == wire_precision::bf16);
  batch_totals& totals = res.totals;
  double now = 0;
  auto drain = [&](double until) {  // churn while no GEMM runs
    while (churn.next_time() <= until) fleet.apply(churn.pop(fleet), res.detection_seconds, churn.queue());
  };
  const int shards = static_cast<int>(cfg.shards.size());
  auto operands = [&](size_t i, int64_t instance) {
    std::vector<product_operands> out;
    for (int s = 0; s < shards; ++s) out.push_back(operands_of(gemms, i, instance, s));
    return out;
  };
  for (int64_t step = 0; step < cfg.steps; ++step) {
    fleet.admit_joined();
    batches.caches().begin_step();
    batches.relays().begin_step();
    churn.begin_step(step + 1, now, fleet);  // churn files count steps from 1, as live runs do
    drain(now);
    step_time st;
    const double step_began = now;
    for (size_t i = 0; i < gemms.size(); ++i) {
      const auto& e = gemms[i];
      product_time pt;
      pt.name = e.name;
      pt.count = e.count;
      const double product_began = now;
      const double predicted_before = st.predicted_device_gemms;
      int64_t left = e.count;
      int64_t instance = 0;
      std::vector<product_operands> ops;
      issued_bytes issued;  // non-empty: the next instance was issued already
      while (left > 0) {
        drain(now);
        const auto shard_plans = plans.for_product(i, fleet);
        const bool all_local = std::all_of(shard_plans.begin(), shard_plans.end(),
                                           [](const plan* p) { return p->local || p->tiles.empty(); });
        if (all_local) {
          // Every instance at once: nothing of it depends on the fleet.
          double slowest = 0;
          for (size_t s = 0; s < shard_plans.size(); ++s) {
            const gemm_problem g = slice_of(e.problem, static_cast<int>(s),
                                            static_cast<int>(cfg.shards.size()));
            const double flops = e.op == tile_op::gemm ? g.flops() : e.flops() / static_cast<double>(e.count);
            if (s == 0 || has_weight(g.role)) slowest = std::max(slowest, flops / cfg.ps_flops());
          }
          st.ps_gemms += slowest * static_cast<double>(left);
          now += slowest * static_cast<double>(left);
          if (step == 0) res.local_products += static_cast<uint64_t>(left);
          left = 0;
          break;
        }
        double predicted = 0;
        for (const plan* p : shard_plans)
          if (!p->local) predicted = std::max(predicted, p->predicted_seconds);
        if (issued.empty()) {
          ops = operands(i, instance);
          issued = batches.issue(shard_plans, ops, fleet);
        }
        const run_marks before{fleet.devices(), totals, batches.relays().counts()};
        const bool first_run = !pt.split;
        const auto [down_before, up_before] = shard_bytes(totals);
        if (first_run) {
          pt.split = true;
          for (const plan* p : shard_plans) {
            if (p->local) continue;
            pt.tiles += p->tiles.size();
            pt.devices = std::max(pt.devices, p->devices_used);
            pt.unique_bytes += unique_operand_bytes(*p);
          }
          if (step == 0) res.unique_operand_bytes_per_step += pt.unique_bytes * static_cast<uint64_t>(e.count);
        }
        const uint64_t epoch = fleet.epoch();
        const double began = now;
        auto end = batches.run(now, shard_plans, ops, issued, fleet, churn, totals);
        if (!end) return end.error();
        now = *end;
        const double took = now - began;
        if (first_run) {
          const auto [down_after, up_after] = shard_bytes(totals);
          pt.bytes_down = down_after - down_before;
          pt.bytes_up = up_after - up_before;
        }
        --left;
        ++instance;
        if (step == 0) ++res.split_products;
        st.device_gemms += took;
        st.predicted_device_gemms += predicted;
        // The next instances are identical while no churn reaches them and
        // the caches send their tiles what they sent this one's (a tile
        // moved or copied would have left other blocks cached).
        const issued_bytes first = std::move(issued);
        issued.clear();
        int64_t same = 0;
        const bool repeatable = fleet.epoch() == epoch && !batches.resent();
        while (repeatable && left > same
               && churn.next_time() > now + took * static_cast<double>(same + 1)) {
          auto next_ops = operands(i, instance + same);
          auto next = batches.issue(shard_plans, next_ops, fleet);
          if (next != first) {  // run it in full, as issued
            ops = std::move(next_ops);
            issued = std::move(next);
            break;
          }
          batches.replay_relays(shard_plans, next_ops, next, fleet);
          ++same;
        }
        if (same > 0) {
          const double times = static_cast<double>(same);
          add_scaled(before, run_marks{fleet.devices(), totals, batches.relays().counts()}, times,
                     fleet, totals, batches.relays().counts());
          now += took * times;
          st.device_gemms += took * times;
          st.predicted_device_gemms += predicted * times;
          if (step == 0) res.split_products += static_cast<uint64_t>(same);
          left -= same;
          instance += same;
        }
      }
      if (step == 0) {
        pt.seconds = now - product_began;
        pt.predicted_seconds = st.predicted_device_gemms - predicted_before;
        res.products.push_back(std::move(pt));
      }
    }
    st.ps_rowwise = res.ps.rowwise_seconds;
    st.ps_optimizer = res.ps.optimizer_seconds;
    now += res.ps.seconds();
    st.seconds = now - step_began;
    res.steps.push_back(st);
    if (progress) progress(step + 1, now);
  }
  res.devices = fleet.devices();
  res.operands = batches.caches().operands();
  res.cache_hits = batches.caches().hits();
  res.cache_misses = batches.caches().misses();
  res.relays = batches.relays().counts();
  res.failures_detected = fleet.failures_detected;
  return res;
}

}  // namespace cleave
