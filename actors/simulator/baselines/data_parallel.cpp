#include "actors/simulator/baselines/data_parallel.hpp"

#include <algorithm>

namespace cleave {

baseline_step plan_data_parallel(const model_footprint& model, int64_t batch,
                                 const std::vector<device_view>& devices,
                            uint64_t wire_bytes) {
  baseline_step out;
  double forward_flops = 0, activations = 0;
  for (const auto& l : model.layers) {
    forward_flops += l.forward_flops_per_sample;
    activations += l.activation_floats_per_sample;
  }
  const uint64_t state = state_bytes(model.parameters);
  auto needs = [&](int64_t micro) {
    return state + static_cast<uint64_t>(activations * 4 * static_cast<double>(micro));
  };
  const auto order = fastest_first(devices);
  std::vector<const device_view*> able;
  for (const auto& d : order)
    if (d.profile.memory_bytes >= needs(1) && able.size() < static_cast<size_t>(batch)) able.push_back(&d);
  // Every device must hold the whole model: fit it where it fits, or say
  // how far it is from fitting.
  if (able.empty()) {
    uint64_t most = 0;
    for (const auto& d : devices) most = std::max(most, d.profile.memory_bytes);
    out.reason = format_numbers("every device must hold the whole model: %.3g GB with one sample's "
                                "activations, the largest device has %.3g GB",
                                static_cast<double>(needs(1)) / 1e9, static_cast<double>(most) / 1e9);
    return out;
  }
  const size_t n = able.size();
  const int64_t share = (batch + static_cast<int64_t>(n) - 1) / static_cast<int64_t>(n);
  uint64_t smallest = ~uint64_t{0};
  double slowest = 0;
  std::vector<const device_profile*> ring;
  for (const auto* d : able) {
    smallest = std::min(smallest, d->profile.memory_bytes);
    slowest = std::max(slowest, 1.0 / d->profile.flops);
    ring.push_back(&d->profile);
  }
  out.micro_batch = largest_micro_batch(share, [&](int64_t mb) { return needs(mb) <= smallest; });
  const double forward = forward_flops * static_cast<double>(share) * slowest;
  const double backward = 2 * forward;
  const double grad_bytes = static_cast<double>(wire_bytes) * static_cast<double>(model.parameters);
  out.communication = ring_allreduce_seconds(grad_bytes, ring);
  out.compute = forward + backward;
  out.optimizer = 12.0 * static_cast<double>(model.parameters) * slowest;
  out.seconds = forward + std::max(backward, out.communication) + out.optimizer;
  const auto moved = static_cast<uint64_t>(ring_allreduce_bytes(grad_bytes, n));
  for (const auto* d : able) out.add_member(d->id, 0, needs(out.micro_batch), state, moved);
  out.group_parameters = {model.parameters};
  out.group_size = {static_cast<int32_t>(n)};
  out.fits = true;
  out.reason = format_numbers("%.0f replicas, %.0f samples each, micro-batch %.0f",
                              static_cast<double>(n), static_cast<double>(share),
                              static_cast<double>(out.micro_batch));
  return out;
}

}  // namespace cleave
