// What the PS sends each tile of a batch (batch_sim.hpp): which operand
// blocks go with it as the devices' caches stand when it issues the batch,
// or when a tile moves or is copied, and the relays' stores for an instance
// the simulator skips. The decisions are operand_cache's.

#include "actors/simulator/batch_sim.hpp"

#include "actors/planner/cost_model.hpp"

namespace cleave {

issued_tile batch_sim::resend(uint32_t shard, int32_t device, uint32_t tile) {
  resent_ = true;
  const plan& p = *plans_[shard];
  if (p.op != tile_op::gemm) return {tile_down_bytes(p, p.tiles[tile]), 3};  // attention: no shared blocks
  const auto& profile = fleet_->devices()[static_cast<size_t>(device)].profile;
  const uint64_t cache = default_cache_bytes(profile.memory_bytes);
  const auto sent = caches_.send(device, cache, cache, plans_[shard]->tiles[tile].t, ops_[shard], true);
  return {sent.bytes, sent.with_data};
}

issued_bytes batch_sim::issue(const std::vector<const plan*>& shard_plans,
                              const std::vector<product_operands>& ops, const sim_fleet& fleet) {
  issued_bytes out(shard_plans.size());
  std::vector<std::pair<size_t, size_t>> missed;  // (shard, tile)
  for (size_t s = 0; s < shard_plans.size(); ++s) {
    const plan& p = *shard_plans[s];
    if (p.local) continue;
    out[s].assign(p.tiles.size(), issued_tile{});
    for (size_t i = 0; i < p.tiles.size(); ++i) {
      const int32_t dev = p.tiles[i].device;
      // As run() below: a tile whose device is no member stays on the PS.
      if (dev < 0 || static_cast<size_t>(dev) >= fleet.size()
          || !fleet.devices()[static_cast<size_t>(dev)].member)
        continue;
      if (p.op != tile_op::gemm) {  // attention: every operand, no shared blocks
        out[s][i] = {tile_down_bytes(p, p.tiles[i]), 3};
        continue;
      }
      const auto& profile = fleet.devices()[static_cast<size_t>(dev)].profile;
      const uint64_t cache = default_cache_bytes(profile.memory_bytes);
      const auto sent = caches_.send(dev, cache, cache, p.tiles[i].t, ops[s], false);
      out[s][i] = {sent.bytes, sent.with_data};
      if (sent.missed) missed.emplace_back(s, i);
    }
  }
  // The engine resends a missed tile in full when the miss comes back,
  // after it issued the batch; its bytes count with the tile's.
  for (auto [s, i] : missed) {
    const auto& a = shard_plans[s]->tiles[i];
    const auto& profile = fleet.devices()[static_cast<size_t>(a.device)].profile;
    const uint64_t cache = default_cache_bytes(profile.memory_bytes);
    out[s][i] = {out[s][i].bytes + caches_.resend_missed(a.device, cache, cache, a.t, ops[s]), 3};
  }
  return out;
}

void batch_sim::replay_relays(const std::vector<const plan*>& shard_plans,
                              const std::vector<product_operands>& ops, const issued_bytes& issued,
                              const sim_fleet& fleet) {
  if (relays_.size() == 0) return;
  for (size_t s = 0; s < shard_plans.size(); ++s) {
    const plan& p = *shard_plans[s];
    if (p.local || p.op != tile_op::gemm) continue;
    for (size_t i = 0; i < p.tiles.size(); ++i) {
      const int32_t dev = p.tiles[i].device;
      if (dev < 0 || static_cast<size_t>(dev) >= fleet.size()) continue;
      const int32_t r = fleet.devices()[static_cast<size_t>(dev)].relay;
      if (r < 0) continue;
      tile_block blocks[2];
      tile_blocks(p.tiles[i].t, ops[s], blocks);
      for (int b = 0; b < 2; ++b)
        if (issued[s][i].blocks & (1u << b))
          relays_.store(static_cast<uint32_t>(r), {blocks[b].key, blocks[b].bytes});
    }
  }
}

}  // namespace cleave
