#include "actors/simulator/operand_cache.hpp"

#include <utility>

namespace cleave {

namespace {

uint64_t mix(uint64_t h, uint64_t v) {  // splitmix64's finalizer over h ^ v
  uint64_t z = h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t tensor_id(uint64_t kind, uint64_t product, uint64_t instance, uint64_t shard) {
  return mix(mix(mix(mix(0x243f6a8885a308d3ULL, kind), product), instance), shard);
}

enum tensor_kind : uint64_t { input, weight, output_grad, first, second };

struct named_block {
  uint64_t key;
  int64_t rows, cols;
};

// (r0, r1, c0, c1) are ranges of op(tensor); the block is named as stored.
named_block block_of(const tensor_ref& t, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  if (t.transposed) {
    std::swap(r0, c0);
    std::swap(r1, c1);
  }
  const uint64_t key = mix(mix(mix(mix(t.id, static_cast<uint64_t>(r0)), static_cast<uint64_t>(r1)),
                               static_cast<uint64_t>(c0)),
                           static_cast<uint64_t>(c1));
  return {key, r1 - r0, c1 - c0};
}

product_operands tensors_of(const std::vector<step_gemm>& gemms, size_t index, int64_t instance,
                            int shard) {
  const step_gemm& g = gemms[index];
  const auto s = static_cast<uint64_t>(shard);
  const auto i = static_cast<uint64_t>(instance);
  const bool backward = g.problem.role == gemm_role::grad_input || g.problem.role == gemm_role::grad_weight;
  if (backward && g.forward >= 0) {
    const auto layer = static_cast<uint64_t>(g.forward);
    // The backward pass meets the forward product's runs last first.
    const auto run = static_cast<uint64_t>(gemms[static_cast<size_t>(g.forward)].count - 1 - instance);
    const tensor_ref x{tensor_id(input, layer, run, s), false};
    const tensor_ref w{tensor_id(weight, layer, run, s), false};
    const tensor_ref dy{tensor_id(output_grad, layer, run, s), false};
    if (g.problem.role == gemm_role::grad_input) return {dy, {w.id, true}};  // dY W^T
    return {{x.id, true}, dy};                                                 // X^T dY
  }
  if (g.problem.role == gemm_role::forward)
    return {{tensor_id(input, index, i, s), false}, {tensor_id(weight, index, i, s), false}};
  return {{tensor_id(first, index, i, s), false}, {tensor_id(second, index, i, s), false}};
}

}  // namespace

void tile_blocks(const tile& t, const product_operands& ops, tile_block out[2]) {
  const named_block blocks[2] = {block_of(ops.a, t.m0, t.m1, t.k0, t.k1),
                                 block_of(ops.b, t.k0, t.k1, t.n0, t.n1)};
  for (int i = 0; i < 2; ++i)
    out[i] = {blocks[i].key, static_cast<uint64_t>(blocks[i].rows * blocks[i].cols) * ops.element_bytes};
}

product_operands operands_of(const std::vector<step_gemm>& gemms, size_t index, int64_t instance,
                             int shard) {
  product_operands out = tensors_of(gemms, index, instance, shard);
  out.element_bytes = gemms[index].problem.element_bytes;
  return out;
}

void operand_cache::begin_step() {
  for (auto& d : devices_)
    if (d) {
      d->cache.clear();
      d->sent.clear();
    }
}

void operand_cache::forget(int32_t device) {
  if (device >= 0 && static_cast<size_t>(device) < devices_.size())
    devices_[static_cast<size_t>(device)].reset();
}

operand_cache::device_state& operand_cache::state_of(int32_t device, uint64_t capacity,
                                                    uint64_t assumed) {
  const auto at = static_cast<size_t>(device);
  if (at >= devices_.size()) devices_.resize(at + 1);
  if (!devices_[at]) devices_[at] = std::make_unique<device_state>(capacity, assumed);
  return *devices_[at];
}

operand_cache::sent_task operand_cache::send(int32_t device, uint64_t capacity, uint64_t assumed,
                                             const tile& t, const product_operands& ops,
                                             bool all_operands) {
  auto& st = state_of(device, capacity, assumed);
  const named_block blocks[2] = {block_of(ops.a, t.m0, t.m1, t.k0, t.k1),
                                 block_of(ops.b, t.k0, t.k1, t.n0, t.n1)};
  // The PS's side, at issue.
  bool with_data[2];
  uint64_t bytes = 0;
  for (int i = 0; i < 2; ++i) {
    ++operands_;
    with_data[i] = all_operands || st.sent.get(blocks[i].key) == nullptr;
    if (!with_data[i]) continue;
    bytes += static_cast<uint64_t>(blocks[i].rows * blocks[i].cols) * ops.element_bytes;
    st.sent.put(blocks[i].key, cached_block{blocks[i].rows, blocks[i].cols, nullptr, 0, 0, {}});
  }
  // The device's side, A then B: it caches what came with data and looks up
  // what was only named. Its tasks run in the order sent, so doing this now
  // sees the cache as the device will.
  bool missed = false;
  uint64_t found = 0;
  for (int i = 0; i < 2; ++i) {
    if (with_data[i]) {
      st.cache.put(blocks[i].key, cached_block{blocks[i].rows, blocks[i].cols, nullptr, 0, 0, {}});
    } else if (st.cache.get(blocks[i].key) == nullptr) {
      missed = true;
    } else {
      ++found;
    }
  }
  const uint8_t mask = static_cast<uint8_t>((with_data[0] ? 1 : 0) | (with_data[1] ? 2 : 0));
  if (missed) return {bytes, true, mask};
  hits_ += found;
  return {bytes, false, mask};
}

uint64_t operand_cache::resend_missed(int32_t device, uint64_t capacity, uint64_t assumed,
                                      const tile& t, const product_operands& ops) {
  ++misses_;
  state_of(device, capacity, assumed).sent.clear();  // as the engine: its cache is not what we thought
  return send(device, capacity, assumed, t, ops, true).bytes;
}

}  // namespace cleave
