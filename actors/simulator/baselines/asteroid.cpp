#include "actors/simulator/baselines/asteroid.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace cleave {

namespace {

constexpr double infinity = std::numeric_limits<double>::infinity();
constexpr size_t max_units = 64;

// Prefix sums over the model's layers and the sorted devices, and the
// ranges' minima over units, so a stage's cost is O(1).
struct stage_costs {
  const model_footprint& model;
  std::vector<device_view> order;
  size_t units;
  std::vector<size_t> unit_begin;  // device index where unit u begins (units + 1 entries)
  std::vector<double> params, flops, acts;  // layer prefix sums
  std::vector<double> dev_flops, dev_up, dev_down;  // device prefix sums
  std::vector<std::vector<uint64_t>> min_memory;   // [a][b): units a..b-1
  std::vector<std::vector<double>> min_link;        // slowest min(up, down)
  double wire_bytes;  // per activation and gradient element on the links

  stage_costs(const model_footprint& m, const std::vector<device_view>& devices, uint64_t wire)
      : model(m), order(fastest_first(devices)), units(std::min(max_units, order.size())),
        wire_bytes(static_cast<double>(wire)) {
    const size_t n = order.size();
    for (size_t u = 0; u <= units; ++u) unit_begin.push_back(u * n / units);
    params.assign(1, 0);
    flops.assign(1, 0);
    acts.assign(1, 0);
    for (const auto& l : model.layers) {
      params.push_back(params.back() + static_cast<double>(l.parameters));
      flops.push_back(flops.back() + l.forward_flops_per_sample);
      acts.push_back(acts.back() + l.activation_floats_per_sample);
    }
    dev_flops.assign(1, 0);
    dev_up.assign(1, 0);
    dev_down.assign(1, 0);
    for (const auto& d : order) {
      dev_flops.push_back(dev_flops.back() + d.profile.flops);
      dev_up.push_back(dev_up.back() + d.profile.uplink);
      dev_down.push_back(dev_down.back() + d.profile.downlink);
    }
    min_memory.assign(units + 1, std::vector<uint64_t>(units + 1, 0));
    min_link.assign(units + 1, std::vector<double>(units + 1, 0));
    for (size_t a = 0; a < units; ++a) {
      uint64_t mem = ~uint64_t{0};
      double link = infinity;
      for (size_t b = a + 1; b <= units; ++b) {
        for (size_t i = unit_begin[b - 1]; i < unit_begin[b]; ++i) {
          mem = std::min(mem, order[i].profile.memory_bytes);
          link = std::min({link, order[i].profile.uplink, order[i].profile.downlink});
        }
        min_memory[a][b] = mem;
        min_link[a][b] = link;
      }
    }
  }

  struct stage {
    double per_micro = infinity;  // compute and traffic overlapped, per micro-batch
    double compute = 0, traffic = 0;
    double allreduce_estimate = 0;
    size_t active = 0;
    uint64_t memory = 0;
  };

  // Layers [i, j) on units [a, b) with micro-batch mb and `in_flight`
  // micro-batches' activations held.
  stage cost(size_t i, size_t j, size_t a, size_t b, int64_t mb, double in_flight) const {
    stage s;
    const size_t lo = unit_begin[a], hi = unit_begin[b];
    const size_t g = hi - lo;
    s.active = std::min<size_t>(g, static_cast<size_t>(mb));
    const double per_member = std::ceil(static_cast<double>(mb) / static_cast<double>(s.active));
    const double p = params[j] - params[i];
    s.memory = state_bytes(static_cast<uint64_t>(p))
               + static_cast<uint64_t>(in_flight * (acts[j] - acts[i]) * per_member * 4);
    if (s.memory > min_memory[a][b]) return s;
    const double mbd = static_cast<double>(mb);
    s.compute = 3 * (flops[j] - flops[i]) * mbd / (dev_flops[lo + s.active] - dev_flops[lo]);
    const double in = i > 0 ? model.layers[i - 1].output_floats_per_sample * mbd * wire_bytes : 0;
    const double out = j < model.layers.size() ? model.layers[j - 1].output_floats_per_sample * mbd * wire_bytes : 0;
    // Forward: the input comes in, the output goes out; backward the
    // reverse with the gradients of the same sizes.
    s.traffic = (in + out) / (dev_down[lo + s.active] - dev_down[lo])
                + (in + out) / (dev_up[lo + s.active] - dev_up[lo]);
    s.allreduce_estimate = ring_allreduce_bytes(wire_bytes * p, g) / min_link[a][b];
    s.per_micro = std::max(s.compute, s.traffic);
    return s;
  }
};

struct dp_cell {
  double bottleneck = infinity;
  size_t from_layer = 0, from_unit = 0;
};

}  // namespace

baseline_step plan_asteroid(const model_footprint& model, int64_t batch,
                            const std::vector<device_view>& devices,
                            uint64_t wire_bytes) {
  baseline_step best;
  if (devices.empty()) {
    best.reason = "no device";
    return best;
  }
  const stage_costs sc(model, devices, wire_bytes);
  const size_t layers = model.layers.size(), units = sc.units;
  for (int64_t mb = batch; mb >= 1; mb = mb == 1 ? 0 : (mb + 1) / 2) {
    const double micro_batches = std::ceil(static_cast<double>(batch) / static_cast<double>(mb));
    const double in_flight = std::min(micro_batches, static_cast<double>(units));
    std::vector<std::vector<dp_cell>> dp(layers + 1, std::vector<dp_cell>(units + 1));
    dp[0][0].bottleneck = 0;
    for (size_t j = 1; j <= layers; ++j)
      for (size_t b = 1; b <= units; ++b) {
        auto& cell = dp[j][b];
        for (size_t i = 0; i < j; ++i)
          for (size_t a = 0; a < b; ++a) {
            if (dp[i][a].bottleneck == infinity) continue;
            const auto s = sc.cost(i, j, a, b, mb, in_flight);
            const double c = std::max(dp[i][a].bottleneck, s.per_micro + s.allreduce_estimate / micro_batches);
            if (c < cell.bottleneck) cell = {c, i, a};
          }
      }
    size_t used_units = 0;
    for (size_t b = 1; b <= units; ++b)
      if (dp[layers][b].bottleneck < dp[layers][used_units].bottleneck) used_units = b;
    if (used_units == 0) continue;
    // The stages, last first, then the exact step.
    std::vector<std::pair<std::pair<size_t, size_t>, std::pair<size_t, size_t>>> stages;
    for (size_t j = layers, b = used_units; j > 0;) {
      const auto& c = dp[j][b];
      stages.push_back({{c.from_layer, j}, {c.from_unit, b}});
      j = c.from_layer;
      b = c.from_unit;
    }
    std::reverse(stages.begin(), stages.end());
    baseline_step s;
    s.fits = true;
    s.micro_batch = mb;
    s.stages = static_cast<int32_t>(stages.size());
    double bottleneck = 0, allreduce = 0, optimizer = 0, compute = 0;
    std::vector<double> stage_allreduce;
    for (size_t k = 0; k < stages.size(); ++k) {
      const auto [layer_range, unit_range] = stages[k];
      const auto st = sc.cost(layer_range.first, layer_range.second, unit_range.first,
                              unit_range.second, mb, in_flight);
      bottleneck = std::max(bottleneck, st.per_micro);
      compute = std::max(compute, st.compute);
      const size_t lo = sc.unit_begin[unit_range.first], hi = sc.unit_begin[unit_range.second];
      const double p = sc.params[layer_range.second] - sc.params[layer_range.first];
      std::vector<const device_profile*> ring;
      double slowest = 0;
      for (size_t i = lo; i < hi; ++i) {
        ring.push_back(&sc.order[i].profile);
        slowest = std::max(slowest, 1.0 / sc.order[i].profile.flops);
      }
      stage_allreduce.push_back(ring_allreduce_seconds(sc.wire_bytes * p, ring));
      allreduce = std::max(allreduce, stage_allreduce.back());
      optimizer = std::max(optimizer, 12 * p * slowest);
      const double in = layer_range.first > 0 ? model.layers[layer_range.first - 1].output_floats_per_sample : 0;
      const double out = layer_range.second < layers ? model.layers[layer_range.second - 1].output_floats_per_sample : 0;
      const auto traffic = static_cast<uint64_t>(micro_batches * (in + out) * sc.wire_bytes * static_cast<double>(mb)
                                                 / static_cast<double>(st.active)
                                                 + ring_allreduce_bytes(sc.wire_bytes * p, hi - lo));
      for (size_t i = lo; i < hi; ++i)
        s.add_member(sc.order[i].id, static_cast<int32_t>(k), st.memory,
                     state_bytes(static_cast<uint64_t>(p)), traffic);
      s.group_parameters.push_back(static_cast<uint64_t>(p));
      s.group_size.push_back(static_cast<int32_t>(hi - lo));
    }
    s.stage_seconds = bottleneck;
    s.compute = micro_batches * compute;
    s.bubble = (static_cast<double>(stages.size()) - 1) * bottleneck;
    // Each stage all-reduces its gradients as its last backward ends (1F1B:
    // the last stage first, one bottleneck apart), overlapped with that
    // backward as PyTorch DDP's buckets are (about 2/3 of a micro-batch's
    // time is its backward); the step ends with the last of them.
    const double pipeline = (micro_batches + static_cast<double>(stages.size()) - 1) * bottleneck;
    double tail = 0;
    for (size_t k = 0; k < stages.size(); ++k) {
      const double ends_before = static_cast<double>(k) * bottleneck;  // stage k's last backward
      tail = std::max(tail, stage_allreduce[k] - 2.0 / 3.0 * bottleneck - ends_before);
    }
    s.communication = micro_batches * bottleneck - s.compute + allreduce;
    s.optimizer = optimizer;
    s.seconds = pipeline + std::max(0.0, tail) + optimizer;
    s.reason = format_numbers("%.0f stages over %.0f devices, micro-batch %.0f",
                              static_cast<double>(stages.size()), static_cast<double>(s.used.size()),
                              static_cast<double>(mb));
    if (!best.fits || s.seconds < best.seconds) best = std::move(s);
  }
  if (!best.fits) {
    uint64_t total = 0;
    for (const auto& d : devices) total += d.profile.memory_bytes;
    best.reason = format_numbers("no stage split fits: the model's state alone is %.3g GB and the "
                                 "devices hold %.3g GB together (each stage's group keeps a full "
                                 "replica of its layers)",
                                 static_cast<double>(state_bytes(model.parameters)) / 1e9,
                                 static_cast<double>(total) / 1e9);
  }
  return best;
}

}  // namespace cleave
