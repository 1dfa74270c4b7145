#pragma once
// The engine's plans, kept for the whole run by (shape, role, layer): a
// product is planned once, by the planner, and when the fleet changes its
// tiles are re-placed on the devices left (replace_atom), never re-cut, so
// churn does not change the numbers. A backward product mirrors its layer's
// forward plan of the same step.

#include <cstdint>
#include <map>
#include <tuple>

#include <caf/all.hpp>

#include "actors/planner/planner_protocol.hpp"
#include "actors/ps/engine/fleet_client.hpp"
#include "kernels/gemm.hpp"

namespace cleave {

class plan_cache {
 public:
  // Forward plans are mirrored within their step only.
  void begin_step() { forward_plans_.clear(); }

  // The plan for g, asked of the fleet's planner on first sight (a mirror of
  // the layer's forward plan for a backward product) and re-placed when the
  // fleet changed since. A product the planner did not answer for runs
  // locally and is asked about again next time.
  const plan& plan_for(caf::scoped_actor& self, const fleet_client& fleet, gemm_tag tag,
                       const gemm_problem& g);

 private:
  plan replaced(caf::scoped_actor& self, const fleet_client& fleet, const plan& p);

  struct cached_plan {
    plan p;
    uint64_t epoch = 0;  // the fleet's epoch it is placed for
  };
  std::map<std::tuple<int64_t, int64_t, int64_t, int, uint32_t>, cached_plan> plans_;
  plan unplanned_;  // the local plan of a GEMM the planner did not answer for
  std::map<uint32_t, plan> forward_plans_;  // this step's, by layer tag, for mirroring
};

}  // namespace cleave
