#include "actors/ps/engine/plan_cache.hpp"

#include <algorithm>
#include <vector>

#include <spdlog/spdlog.h>

namespace cleave {

const plan& plan_cache::plan_for(caf::scoped_actor& self, const fleet_client& fleet, gemm_tag tag,
                                 const gemm_problem& g) {
  const auto key = std::make_tuple(g.m, g.n, g.k, static_cast<int>(g.role),
                                   tag.role == gemm_role::forward ? 0u : tag.layer);
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    plan p;
    p.local = true;
    p.reason = "planner unreachable";
    auto fwd = forward_plans_.find(tag.layer);
    const bool mirror = (g.role == gemm_role::grad_input || g.role == gemm_role::grad_weight)
                        && fwd != forward_plans_.end() && !fwd->second.local;
    bool answered = false;
    auto on_plan = [&](plan& reply) {
      p = std::move(reply);
      answered = true;
    };
    auto on_error = [&](caf::error& e) {
      spdlog::warn("planner did not answer ({}); computing locally", self->system().render(e));
    };
    if (mirror)
      self->request(fleet.planner(), caf::infinite, mirror_atom::value, fwd->second, g.role, g)
        .receive(on_plan, on_error);
    else
      self->request(fleet.planner(), caf::infinite, plan_atom::value, g).receive(on_plan, on_error);
    spdlog::debug("plan {}x{}x{} role {} layer {}: {}", g.m, g.n, g.k, static_cast<int>(g.role),
                  tag.layer, p.reason);
    if (!answered) {  // asked again next time, not kept for the run
      unplanned_ = std::move(p);
      return unplanned_;
    }
    // The planner may already know of a change this engine has yet to hear.
    const bool current = std::all_of(p.tiles.begin(), p.tiles.end(),
                                     [&](const assignment& a) { return fleet.has(a.device); });
    it = plans_.emplace(key, cached_plan{std::move(p), current ? fleet.epoch() : fleet.epoch() - 1})
           .first;
  }
  if (it->second.epoch != fleet.epoch()) {
    it->second.p = replaced(self, fleet, it->second.p);
    it->second.epoch = fleet.epoch();
  }
  if (g.role == gemm_role::forward) forward_plans_[tag.layer] = it->second.p;
  return it->second.p;
}

plan plan_cache::replaced(caf::scoped_actor& self, const fleet_client& fleet, const plan& p) {
  if (p.local) return p;
  std::vector<int32_t> ids;
  for (const auto& [id, m] : fleet.members()) ids.push_back(id);
  plan out = p;
  self->request(fleet.planner(), caf::infinite, replace_atom::value, p, ids)
    .receive([&](plan& reply) { out = std::move(reply); },
             [&](caf::error& e) {
               spdlog::warn("planner did not re-place a plan ({}); its tiles on lost devices "
                            "are computed here", self->system().render(e));
             });
  // Whatever is not on a device this engine knows is computed at the PS.
  for (auto& a : out.tiles)
    if (!fleet.has(a.device)) a.device = -1;
  spdlog::debug("{}", out.reason);
  return out;
}

}  // namespace cleave
