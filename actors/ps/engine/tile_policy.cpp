#include "actors/ps/engine/tile_policy.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace cleave {

tile_policy::tile_policy(std::vector<policy_device> devices) : devices_(std::move(devices)) {
  std::sort(devices_.begin(), devices_.end(),
            [](const policy_device& a, const policy_device& b) { return a.id < b.id; });
}

int32_t tile_policy::take_over(const std::vector<policy_tile>& tiles, size_t t) const {
  std::map<int32_t, size_t> load;
  for (const auto& pt : tiles)
    if (!pt.done)
      for (int32_t d : pt.holders) ++load[d];
  const auto& tile = tiles[t];
  int32_t best = -1;
  size_t best_load = 0;
  for (const auto& d : devices_) {
    if (d.memory_bytes < tile.working_set) continue;
    if (std::find(tile.holders.begin(), tile.holders.end(), d.id) != tile.holders.end()) continue;
    if (std::find(tile.excluded.begin(), tile.excluded.end(), d.id) != tile.excluded.end()) continue;
    const auto it = load.find(d.id);
    const size_t l = it == load.end() ? 0 : it->second;
    if (best < 0 || l < best_load) {
      best = d.id;
      best_load = l;
    }
  }
  return best;
}

std::vector<std::pair<size_t, int32_t>> tile_policy::speculate(
  const std::vector<policy_tile>& tiles) const {
  std::vector<std::pair<size_t, int32_t>> copies;
  const auto first_undone =
    std::find_if(tiles.begin(), tiles.end(), [](const policy_tile& pt) { return !pt.done; });
  if (first_undone == tiles.end()) return copies;
  std::set<int32_t> busy;
  for (const auto& pt : tiles)
    if (!pt.done) busy.insert(pt.holders.begin(), pt.holders.end());
  std::vector<const policy_device*> idle;
  for (const auto& d : devices_)
    if (busy.count(d.id) == 0 && d.memory_bytes >= first_undone->working_set) idle.push_back(&d);
  auto next_idle = idle.begin();
  for (size_t i = 0; i < tiles.size() && next_idle != idle.end(); ++i) {
    const auto& pt = tiles[i];
    if (pt.done || pt.speculated || pt.holders.empty()) continue;
    if ((*next_idle)->memory_bytes < pt.working_set) continue;
    if (std::find(pt.excluded.begin(), pt.excluded.end(), (*next_idle)->id) != pt.excluded.end())
      continue;
    copies.emplace_back(i, (*next_idle++)->id);
  }
  return copies;
}

}  // namespace cleave
