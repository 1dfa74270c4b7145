// What the PS sends each tile of a batch (batch_sim.hpp): which operand
// blocks go with it as the devices' caches stand when it issues the batch,
// or when a tile moves or is copied, and the relays' stores for an instance
// the simulator skips. The decisions are operand_cache's.

#include "actors/simulator/batch_sim.hpp"

#include "actors/planner/cost_model.hpp"

namespace cleave {

issued_tile batch_sim::resend(uint32_t shard, int32_t device, uint32_t tile) {
  resent_ = true;
  const tile_at at = locate(shard, tile);
  const plan& p = *calls_[shard].plans[at.call];
  if (p.op != tile_op::gemm) return {tile_down_bytes(p, p.tiles[at.index]), 3};  // attention: no shared blocks
  const auto& profile = fleet_->devices()[static_cast<size_t>(device)].profile;
  const uint64_t cache = default_cache_bytes(profile.memory_bytes);
  const auto sent = caches_.send(device, cache, cache, p.tiles[at.index].t, *calls_[shard].ops[at.call], true);
  return {sent.bytes, sent.with_data};
}

issued_bytes batch_sim::issue(const gemm_batch_sim& batch, const sim_fleet& fleet) {
  const size_t shards = batch.empty() ? 0 : batch.front().shard_plans.size();
  issued_bytes out(shards);
  struct miss {
    size_t shard, tile;
    const assignment* a;
    const product_operands* ops;
  };
  std::vector<miss> missed;
  for (size_t s = 0; s < shards; ++s) {
    const shard_calls calls = calls_of(batch, s);
    out[s].assign(calls.first.back(), issued_tile{});
    for (size_t c = 0; c < calls.plans.size(); ++c) {
      const plan& p = *calls.plans[c];
      if (p.local) continue;
      for (size_t i = 0; i < p.tiles.size(); ++i) {
        const size_t u = calls.first[c] + i;
        const int32_t dev = p.tiles[i].device;
        // As run() below: a tile whose device is no member stays on the PS.
        if (dev < 0 || static_cast<size_t>(dev) >= fleet.size()
            || !fleet.devices()[static_cast<size_t>(dev)].member)
          continue;
        if (p.op != tile_op::gemm) {  // attention: every operand, no shared blocks
          out[s][u] = {tile_down_bytes(p, p.tiles[i]), 3};
          continue;
        }
        const auto& profile = fleet.devices()[static_cast<size_t>(dev)].profile;
        const uint64_t cache = default_cache_bytes(profile.memory_bytes);
        const auto sent = caches_.send(dev, cache, cache, p.tiles[i].t, *calls.ops[c], false);
        out[s][u] = {sent.bytes, sent.with_data};
        if (sent.missed) missed.push_back({s, u, &p.tiles[i], calls.ops[c]});
      }
    }
  }
  // The engine resends a missed tile in full when the miss comes back,
  // after it issued the batch; its bytes count with the tile's.
  for (const miss& m : missed) {
    const auto& profile = fleet.devices()[static_cast<size_t>(m.a->device)].profile;
    const uint64_t cache = default_cache_bytes(profile.memory_bytes);
    out[m.shard][m.tile] = {
      out[m.shard][m.tile].bytes + caches_.resend_missed(m.a->device, cache, cache, m.a->t, *m.ops), 3};
  }
  return out;
}

void batch_sim::replay_relays(const gemm_batch_sim& batch, const issued_bytes& issued, const sim_fleet& fleet) {
  if (relays_.size() == 0) return;
  for (size_t s = 0; s < issued.size(); ++s) {
    const shard_calls calls = calls_of(batch, s);
    for (size_t c = 0; c < calls.plans.size(); ++c) {
      const plan& p = *calls.plans[c];
      if (p.local || p.op != tile_op::gemm) continue;
      for (size_t i = 0; i < p.tiles.size(); ++i) {
        const int32_t dev = p.tiles[i].device;
        if (dev < 0 || static_cast<size_t>(dev) >= fleet.size()) continue;
        const int32_t r = fleet.devices()[static_cast<size_t>(dev)].relay;
        if (r < 0) continue;
        tile_block blocks[2];
        tile_blocks(p.tiles[i].t, *calls.ops[c], blocks);
        for (int b = 0; b < 2; ++b)
          if (issued[s][calls.first[c] + i].blocks & (1u << b))
            relays_.store(static_cast<uint32_t>(r), {blocks[b].key, blocks[b].bytes});
      }
    }
  }
}

}  // namespace cleave
