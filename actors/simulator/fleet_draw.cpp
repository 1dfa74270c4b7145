#include "actors/simulator/fleet_draw.hpp"

#include <cmath>

#include "kernels/random.hpp"
#include "schema/errors.hpp"

namespace cleave {

namespace {

const char* const device_presets[] = {"phone", "edge", "laptop", "vm"};

}  // namespace

std::vector<std::string> fleet_preset_names() { return {"phone", "edge", "laptop", "vm", "mix"}; }

caf::expected<std::vector<device_profile>> draw_fleet(const std::string& preset, int devices,
                                                      uint64_t seed) {
  const bool mix = preset == "mix";
  bool known = mix;
  for (const char* p : device_presets) known = known || preset == p;
  if (!known) return fail("--fleet-preset: unknown preset '" + preset + "' (expected phone, edge, laptop, vm or mix)");
  if (devices < 1) return fail("--devices must be at least 1 with --fleet-preset, got " + std::to_string(devices));
  rng g(seed);
  auto spread = [&] { return std::exp(0.5 * g.normal()); };
  std::vector<device_profile> out;
  out.reserve(static_cast<size_t>(devices));
  for (int i = 0; i < devices; ++i) {
    const std::string name = mix ? device_presets[g.below(4)] : preset;
    device_profile p = *preset_profile(name);
    p.flops *= spread();
    p.downlink *= spread();
    p.uplink *= spread();
    p.latency *= spread();
    static const double memory_factor[] = {0.5, 1.0, 2.0};
    p.memory_bytes = static_cast<uint64_t>(static_cast<double>(p.memory_bytes) * memory_factor[g.below(3)]);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace cleave
