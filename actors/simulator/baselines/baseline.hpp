#pragma once
// What the baselines share: a step as each one plans it on the devices
// alive, the memory limit every one of them obeys, and ring all-reduce over
// device links. Each baseline (data_parallel, megatron, asteroid) is a pure
// function of the model's footprint, the batch and the devices; a plan that
// cannot fit the model says so (fits = false, reason) instead of a time.

#include <cstdint>
#include <string>
#include <vector>

#include "actors/planner/cost_model.hpp"
#include "actors/simulator/model_footprint.hpp"

namespace cleave {

struct baseline_step {
  bool fits = false;
  std::string reason;  // why it does not fit; or how it is laid out
  double seconds = 0;  // one step without failures
  double compute = 0, communication = 0, bubble = 0, optimizer = 0;  // its parts
  int64_t micro_batch = 0;
  std::vector<int32_t> used;            // devices taking part
  std::vector<uint64_t> memory_bytes;   // by used device: what it holds at its peak
  std::vector<uint64_t> state_held;     // ... of which the model's state (a restart reloads it)
  std::vector<uint64_t> bytes_sent;     // by used device, per step
  std::vector<uint64_t> bytes_received;
  // For recovery: the group (stage) of each used device, its size, the
  // stage's parameters, and the micro-batches a stage has in flight.
  std::vector<int32_t> group;
  std::vector<uint64_t> group_parameters;
  std::vector<int32_t> group_size;
  double stage_seconds = 0;  // asteroid: the bottleneck stage per micro-batch
  int32_t stages = 1;

  // Device `id` takes part in `group`, holding `memory` bytes at its peak
  // (`state` of them the model's state) and sending and receiving
  // `traffic` bytes per step.
  void add_member(int32_t id, int32_t in_group, uint64_t memory, uint64_t state, uint64_t traffic) {
    used.push_back(id);
    group.push_back(in_group);
    memory_bytes.push_back(memory);
    state_held.push_back(state);
    bytes_sent.push_back(traffic);
    bytes_received.push_back(traffic);
  }
};

// A ring's slowest hop (min(uplink, next downlink)) and largest latency.
struct ring_link {
  double bytes_per_second = 0;
  double latency = 0;
};
ring_link slowest_ring_link(const std::vector<const device_profile*>& ring);

// Ring all-reduce of `bytes` among `ring` (in ring order): 2 (n - 1) rounds,
// each moving bytes / n from every device to the next, as fast as the
// slowest hop (min(uplink, next downlink)) plus the largest latency.
double ring_allreduce_seconds(double bytes, const std::vector<const device_profile*>& ring);
// The bytes each member sends (and receives) in it: 2 (n - 1) / n x bytes.
double ring_allreduce_bytes(double bytes, size_t members);

// Devices fastest first (FLOP/s, then id): the order every baseline picks in.
std::vector<device_view> fastest_first(std::vector<device_view> devices);

// The bytes of the model's state a trainer keeps per parameter it owns.
inline uint64_t state_bytes(uint64_t parameters) { return training_bytes_per_parameter * parameters; }

// The largest micro-batch (batch, batch/2, ... 1, halving) for which
// fits(micro) holds; 0 when even 1 does not fit.
template <class Fits>
int64_t largest_micro_batch(int64_t batch, Fits fits) {
  for (int64_t mb = batch; mb >= 1; mb = mb == 1 ? 0 : (mb + 1) / 2)
    if (fits(mb)) return mb;
  return 0;
}

}  // namespace cleave
