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
  const auto step_batches = issue_batches(gemms);
  for (int64_t step = 0; step < cfg.steps; ++step) {
    fleet.admit_joined();
    batches.caches().begin_step();
    batches.relays().begin_step();
    churn.begin_step(step + 1, now, fleet);  // churn files count steps from 1, as live runs do
    drain(now);
    step_time st;
    const double step_began = now;
    std::vector<product_time> pts(gemms.size());
    for (size_t i = 0; i < gemms.size(); ++i) {
      pts[i].name = gemms[i].name;
      pts[i].count = gemms[i].count;
    }
    // Instances [instance, instance + left) of the products `idx` (one, or
    // a layer's dX and dW, of the same count), a batch of them at a time as
    // the engine issues them. A batch's time and bytes are its first
    // product's.
    std::function<caf::error(const std::vector<size_t>&, int64_t, int64_t)> run_batch =
      [&](const std::vector<size_t>& idx, int64_t left, int64_t instance) -> caf::error {
      product_time& head = pts[idx.front()];
      gemm_batch_sim batch(idx.size());
      issued_bytes issued;  // non-empty: the next instance was issued already
      while (left > 0) {
        drain(now);
        bool any_local = false;
        for (size_t j = 0; j < idx.size(); ++j) {
          batch[j].shard_plans = plans.for_product(idx[j], fleet);
          any_local = any_local || std::all_of(batch[j].shard_plans.begin(), batch[j].shard_plans.end(),
                                               [](const plan* p) { return p->local || p->tiles.empty(); });
        }
        if (any_local && idx.size() > 1) {
          // The engine computes a product it keeps local where it meets it
          // in the batch: the two run one after the other.
          for (size_t j : idx)
            if (auto err = run_batch({j}, left, instance)) return err;
          return {};
        }
        if (any_local) {
          // Every instance at once: nothing of it depends on the fleet.
          const auto& e = gemms[idx.front()];
          double slowest = 0;
          for (size_t s = 0; s < batch[0].shard_plans.size(); ++s) {
            const gemm_problem g = slice_of(e.problem, static_cast<int>(s), shards);
            const double flops = e.op == tile_op::gemm ? g.flops() : e.flops() / static_cast<double>(e.count);
            if (s == 0 || has_weight(g.role)) slowest = std::max(slowest, flops / cfg.ps_flops());
          }
          const double took = slowest * static_cast<double>(left);
          st.ps_gemms += took;
          head.seconds += took;
          now += took;
          if (step == 0) res.local_products += static_cast<uint64_t>(left);
          return {};
        }
        // The engine waits for the sum of its products' predictions, on
        // each shard (gemm_batch); the step, for its slowest shard.
        double predicted = 0;
        for (size_t s = 0; s < batch[0].shard_plans.size(); ++s) {
          double on_shard = 0;
          for (const auto& product : batch)
            if (!product.shard_plans[s]->local) on_shard += product.shard_plans[s]->predicted_seconds;
          predicted = std::max(predicted, on_shard);
        }
        if (issued.empty()) {
          for (size_t j = 0; j < idx.size(); ++j) batch[j].ops = operands(idx[j], instance);
          issued = batches.issue(batch, fleet);
        }
        const run_marks before{fleet.devices(), totals, batches.relays().counts()};
        const bool first_run = !head.split;
        const auto [down_before, up_before] = shard_bytes(totals);
        if (first_run) {
          for (size_t j = 0; j < idx.size(); ++j) {
            product_time& pt = pts[idx[j]];
            pt.split = true;
            if (j > 0) pt.batch_head = head.name;
            for (const plan* p : batch[j].shard_plans) {
              if (p->local) continue;
              pt.tiles += p->tiles.size();
              pt.devices = std::max(pt.devices, p->devices_used);
              pt.unique_bytes += unique_operand_bytes(*p);
            }
            if (step == 0)
              res.unique_operand_bytes_per_step += pt.unique_bytes * static_cast<uint64_t>(gemms[idx[j]].count);
          }
        }
        const uint64_t epoch = fleet.epoch();
        const double began = now;
        auto end = batches.run(now, batch, issued, fleet, churn, totals);
        if (!end) return end.error();
        now = *end;
        const double took = now - began;
        if (first_run) {
          const auto [down_after, up_after] = shard_bytes(totals);
          head.bytes_down = down_after - down_before;
          head.bytes_up = up_after - up_before;
        }
        --left;
        ++instance;
        if (step == 0) res.split_products += idx.size();
        st.device_gemms += took;
        st.predicted_device_gemms += predicted;
        head.seconds += took;
        head.predicted_seconds += predicted;
        // The next instances are identical while no churn reaches them and
        // the caches send their tiles what they sent this one's (a tile
        // moved or copied would have left other blocks cached).
        const issued_bytes first = std::move(issued);
        issued.clear();
        int64_t same = 0;
        const bool repeatable = fleet.epoch() == epoch && !batches.resent();
        while (repeatable && left > same
               && churn.next_time() > now + took * static_cast<double>(same + 1)) {
          gemm_batch_sim next_batch = batch;
          for (size_t j = 0; j < idx.size(); ++j) next_batch[j].ops = operands(idx[j], instance + same);
          auto next = batches.issue(next_batch, fleet);
          if (next != first) {  // run it in full, as issued
            batch = std::move(next_batch);
            issued = std::move(next);
            break;
          }
          batches.replay_relays(next_batch, next, fleet);
          ++same;
        }
        if (same > 0) {
          const double times = static_cast<double>(same);
          add_scaled(before, run_marks{fleet.devices(), totals, batches.relays().counts()}, times,
                     fleet, totals, batches.relays().counts());
          now += took * times;
          st.device_gemms += took * times;
          st.predicted_device_gemms += predicted * times;
          head.seconds += took * times;
          head.predicted_seconds += predicted * times;
          if (step == 0) res.split_products += static_cast<uint64_t>(same) * idx.size();
          left -= same;
          instance += same;
        }
      }
      return {};
    };
    for (const product_batch& b : step_batches) {
      std::vector<size_t> idx;
      for (size_t i = b.first; i < b.last; ++i) idx.push_back(i);
      if (auto err = run_batch(idx, gemms[b.first].count, 0)) return err;
    }
    if (step == 0) res.products = std::move(pts);
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
