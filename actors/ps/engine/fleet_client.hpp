#pragma once
// The engine's view of the fleet and its line to the planner: the members it
// may send tiles to, refreshed from the planner at each step (or when one
// joined), narrowed at once by fleet events (dead, suspected), and a
// restarted planner followed when the engine was told how to find it.

#include <functional>
#include <set>
#include <string>
#include <unordered_map>

#include <caf/all.hpp>

#include "actors/planner/id_ranges.hpp"
#include "actors/planner/planner_protocol.hpp"
#include "actors/ps/engine/accounts.hpp"

namespace cleave {

class fleet_client {
 public:
  // `self` is the engine's own blocking actor; `acc` gets the members'
  // profile names and the failures counted.
  fleet_client(caf::scoped_actor& self, caf::actor planner, std::function<caf::actor()> find_planner,
               bool stop_on_failure, runtime_accounts& acc);

  // Asks the planner for its fleet (once its first quorum joined); with a
  // way to find a restarted planner, waits for it and its devices.
  caf::error refresh();
  // A device joined or came back (usable from the next GEMM: stale()), or
  // failed. True when a failed device left the members just now: its
  // outstanding tiles must move.
  bool on_event(const fleet_event& ev);
  // The planner's down message came: waits for its successor and its fleet;
  // false (and no members left) when there is none.
  bool follow_lost_planner();

  const std::unordered_map<int32_t, fleet_member>& members() const { return fleet_; }
  bool has(int32_t id) const { return fleet_.count(id) != 0; }
  // Bumped whenever the members change: plans made for another epoch are re-placed.
  uint64_t epoch() const { return epoch_; }
  bool stale() const { return stale_; }
  const caf::actor& planner() const { return planner_; }
  bool follows_successors() const { return static_cast<bool>(find_planner_); }
  // With stop_on_failure: the failure that ends the run, once one happened.
  const std::string& stopped_by() const { return stopped_by_; }

 private:
  caf::error ask();
  // Takes the fleet events that queued since the last GEMM that waited on
  // devices (the engine reads them only then): between such GEMMs, and all
  // along a run that keeps every GEMM here, they would pile up in the
  // engine's mailbox for good.
  void take_queued_events();

  caf::scoped_actor& self_;
  caf::actor planner_;
  std::function<caf::actor()> find_planner_;
  bool stop_on_failure_;
  runtime_accounts& acc_;
  bool stale_ = false;
  bool planner_lost_ = false;  // its down message came: ask its successor
  std::string stopped_by_;
  // A failure is counted once per device: when it is first suspected (and
  // again after it came back), or when it dies unsuspected. An event can come
  // twice, from the detector and through the planner, in either order.
  std::set<int32_t> failed_;  // suspected and not back; the dead leave it for dead_
  id_ranges dead_;            // every id dead: grows with the gaps between them only
  uint64_t version_ = ~uint64_t{0};
  uint64_t epoch_ = 0;
  std::unordered_map<int32_t, fleet_member> fleet_;
};

}  // namespace cleave
