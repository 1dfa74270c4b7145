#include "actors/simulator/baselines/megatron.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace cleave {

baseline_step plan_megatron(const model_config& cfg, const model_footprint& model, int64_t batch,
                            const std::vector<device_view>& devices,
                            uint64_t wire_bytes) {
  baseline_step best;
  const auto order = fastest_first(devices);
  double forward_flops = 0, activations = 0;
  for (const auto& l : model.layers) {
    forward_flops += l.forward_flops_per_sample;
    activations += l.activation_floats_per_sample;
  }
  const int64_t blocks = cfg.kind == "gpt" ? cfg.layers : static_cast<int64_t>(model.layers.size());
  const int64_t max_t = std::min<int64_t>(static_cast<int64_t>(order.size()),
                                          cfg.kind == "gpt" ? cfg.heads : static_cast<int64_t>(order.size()));
  const double hidden_bytes = static_cast<double>(wire_bytes) * model.hidden_floats_per_sample;
  uint64_t closest_need = std::numeric_limits<uint64_t>::max();
  for (int64_t t = 1; t <= max_t; ++t) {
    if (cfg.kind == "gpt" && cfg.heads % t != 0) continue;
    const double td = static_cast<double>(t);
    const uint64_t state = state_bytes(model.parameters / static_cast<uint64_t>(t));
    // Inputs of each block (x, its norm, x_mid) are whole on every member;
    // the rest of the activations are split.
    const double per_sample = activations / td + static_cast<double>(blocks) * 3
                              * model.hidden_floats_per_sample * (1 - 1 / td);
    auto needs = [&](int64_t mb) { return state + static_cast<uint64_t>(4 * per_sample * static_cast<double>(mb)); };
    uint64_t smallest = ~uint64_t{0};
    double slowest = 0;
    std::vector<const device_profile*> ring;
    for (int64_t i = 0; i < t; ++i) {
      smallest = std::min(smallest, order[static_cast<size_t>(i)].profile.memory_bytes);
      slowest = std::max(slowest, 1.0 / order[static_cast<size_t>(i)].profile.flops);
      ring.push_back(&order[static_cast<size_t>(i)].profile);
    }
    const int64_t mb = largest_micro_batch(batch, [&](int64_t m) { return needs(m) <= smallest; });
    if (mb == 0) {
      closest_need = std::min(closest_need, needs(1));
      continue;
    }
    baseline_step s;
    s.fits = true;
    s.micro_batch = mb;
    const double micro_batches = std::ceil(static_cast<double>(batch) / static_cast<double>(mb));
    const double allreduces = micro_batches * static_cast<double>(4 * blocks + 2);
    const double act_bytes = hidden_bytes * static_cast<double>(mb);
    s.compute = 3 * forward_flops * static_cast<double>(batch) / td * slowest;
    s.communication = allreduces * ring_allreduce_seconds(act_bytes, ring);
    s.optimizer = 12.0 * static_cast<double>(model.parameters) / td * slowest;
    s.seconds = s.compute + s.communication + s.optimizer;
    if (best.fits && best.seconds <= s.seconds) continue;
    const auto moved = static_cast<uint64_t>(allreduces * ring_allreduce_bytes(act_bytes, static_cast<size_t>(t)));
    for (int64_t i = 0; i < t; ++i) s.add_member(order[static_cast<size_t>(i)].id, 0, needs(mb), state, moved);
    s.group_parameters = {model.parameters};
    s.group_size = {static_cast<int32_t>(t)};
    s.reason = format_numbers("tensor parallel over %.0f devices, micro-batch %.0f", td,
                              static_cast<double>(mb));
    best = std::move(s);
  }
  if (!best.fits) {
    best.reason = format_numbers("no tensor-parallel degree up to %.0f fits: at best a member needs "
                                 "%.3g GB (1/t of the model's state and one sample's activations)",
                                 static_cast<double>(max_t), static_cast<double>(closest_need) / 1e9);
  }
  return best;
}

}  // namespace cleave
