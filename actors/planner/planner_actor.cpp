#include "actors/planner/planner_actor.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "actors/planner/grid_search.hpp"
#include "actors/planner/live_relays.hpp"
#include "actors/planner/placement.hpp"
#include "schema/errors.hpp"

namespace cleave {

namespace {

// Alive, not suspected, not draining: may be given work.
bool usable(const planner_state& st, int32_t id) {
  return st.suspected.count(id) == 0 && st.draining.count(id) == 0;
}

// What a plan is made of: each usable device as the cost model sees it, and
// the cost model, both with the relays the fleet's devices joined through.
struct planning_input {
  std::vector<device_view> devices;
  planner_config cost;
};

planning_input planning(const planner_state& st) {
  planning_input in{{}, st.opts.cost};
  const auto tier = live_relays(st.alive);
  for (const auto& [id, m] : st.alive)
    if (usable(st, id)) in.devices.push_back(device_view{id, m.profile, 0, 0, tier.relay_of(m)});
  if (in.cost.relays.empty()) in.cost.relays = tier.relays;
  return in;
}

// members(st).size() without copying the members: asked on every join and
// every wait for the fleet, so a fleet of thousands joining costs O(N) each.
size_t usable_count(const planner_state& st) {
  if (st.suspected.empty() && st.draining.empty()) return st.alive.size();
  size_t n = 0;
  for (const auto& [id, m] : st.alive) n += usable(st, id);
  return n;
}

std::vector<fleet_member> members(const planner_state& st) {
  std::vector<fleet_member> out;
  for (const auto& [id, m] : st.alive)
    if (usable(st, id)) out.push_back(m);
  return out;
}

// Keeps `p` as the current plan of its shape and hands it out.
plan remembered(planner_state& st, const planning_input& in, plan p) {
  const auto& g = p.problem;
  if (st.opts.cost.paced_ps_link && !p.local && !p.tiles.empty()) {
    const auto share = fair_share(in.devices, in.cost, g.sharers);
    p.predicted_seconds =
      std::max(p.predicted_seconds, ps_link_seconds(p, share.devices, share.cfg));
  }
  st.recent_plans[std::make_tuple(g.m, g.n, g.k, static_cast<int>(g.role))] = p;
  return p;
}

// Applies a detector event to the registry; true when the usable fleet changed.
bool apply(planner_state& st, const fleet_event& ev) {
  switch (ev.kind) {
    case fleet_event_kind::dead:
      st.suspected.erase(ev.device);
      st.draining.erase(ev.device);
      return st.alive.erase(ev.device) > 0;
    case fleet_event_kind::suspect:
      return st.alive.count(ev.device) > 0 && st.suspected.insert(ev.device).second;
    case fleet_event_kind::rejoin:
      return st.suspected.erase(ev.device) > 0;
    case fleet_event_kind::join:
    case fleet_event_kind::quarantined:
      return false;  // the planner itself admitted or quarantined it
  }
  return false;
}

void answer_waiters(caf::stateful_actor<planner_state>* self) {
  auto& st = self->state;
  // min_devices gates the first step only: a fleet that shrinks later must
  // not stall training (the PS computes what no device can take).
  if (!st.quorum_reached && static_cast<int>(usable_count(st)) < st.opts.min_devices) return;
  st.quorum_reached = true;
  if (st.waiting_for_fleet.empty()) return;
  const auto fleet = members(st);
  for (auto& rp : st.waiting_for_fleet) rp.deliver(st.version, fleet);
  st.waiting_for_fleet.clear();
}

}  // namespace

caf::behavior planner_actor(caf::stateful_actor<planner_state>* self, planner_options opts,
                            detector_handle detector) {
  self->state.opts = opts;
  self->state.detector = detector;
  // An error a member sends back (it did not understand a message, say)
  // is its own problem: CAF's default would end the planner with it.
  self->set_error_handler([=](caf::error& err) {
    spdlog::debug("planner: a member answered with {}", self->system().render(err));
  });
  self->send(detector, subscribe_atom::value, caf::actor{self});
  // Devices heartbeat to the detector the planner names: a planner whose
  // detector is gone fails too, and its restart finds the new detector.
  self->monitor(detector);
  self->set_down_handler([=](const caf::down_msg& msg) {
    if (msg.source == self->state.detector.address())
      self->quit(caf::make_error(caf::sec::runtime_error, "the planner's detector is gone"));
  });
  return {
    [=](join_atom, const join_request& req)
      -> caf::result<welcome_atom, int32_t, caf::actor> {
      auto& st = self->state;
      if (req.schema_version != message_schema_version)
        return fail("schema version " + std::to_string(req.schema_version) + " is not "
                    + std::to_string(message_schema_version));
      if (auto err = validate(req.profile)) return err;
      auto device = caf::actor_cast<caf::actor>(self->current_sender());
      if (!device) return fail("join without a sender");
      const int32_t id = st.ids.take(req.preferred_id);
      st.alive[id] = fleet_member{id, device, req.profile, req.relay};
      ++st.version;
      self->send(st.detector, watch_atom::value, id, device);
      spdlog::debug("planner: device {} ({}) joined; {} alive", id, req.profile.name,
                    st.alive.size());
      answer_waiters(self);
      // Subscribers hear of the join from here, not from the detector's
      // echo of it: a subscriber that came meanwhile was already told.
      const fleet_event joined{fleet_event_kind::join, id, 0};
      for (auto& sub : st.subscribers) self->send(sub, event_atom::value, joined);
      // Untyped on the wire: a remote device's detector is its edge link.
      return {welcome_atom::value, id, caf::actor_cast<caf::actor>(st.detector)};
    },
    [=](event_atom, const fleet_event& ev) {
      auto& st = self->state;
      if (apply(st, ev)) {
        ++st.version;
        if (st.run_over)
          spdlog::debug("planner: device {} left at the end of the run; {} alive", ev.device,
                        st.alive.size());
        else
          spdlog::info("planner: device {} is {}; {} alive, {} suspected", ev.device,
                       to_string(ev.kind), st.alive.size(), st.suspected.size());
        answer_waiters(self);
      }
      if (ev.kind == fleet_event_kind::join) return;  // announced at admission
      for (auto& sub : st.subscribers) self->send(sub, event_atom::value, ev);
    },
    [=](quarantine_atom, int32_t device, const std::string& why) {
      auto& st = self->state;
      auto it = st.alive.find(device);
      if (it == st.alive.end()) return;  // gone, or another shard's engine asked first
      const caf::actor handle = it->second.handle;
      spdlog::warn("planner: device {} ({}) is quarantined: a result {}", device,
                   it->second.profile.name, why);
      st.alive.erase(it);
      st.suspected.erase(device);
      st.draining.erase(device);
      ++st.version;
      self->send(st.detector, quarantine_atom::value, device);
      self->send(handle, quarantine_atom::value, why);
      const fleet_event ev{fleet_event_kind::quarantined, device, 0};
      for (auto& sub : st.subscribers) self->send(sub, event_atom::value, ev);
    },
    [=](subscribe_atom, caf::actor sub) {
      // Members that joined before it subscribed are news to it too (a
      // console started after an in-process fleet joined).
      for (const auto& [id, m] : self->state.alive)
        self->send(sub, event_atom::value, fleet_event{fleet_event_kind::join, id, 0});
      self->state.subscribers.push_back(std::move(sub));
    },
    [=](drain_atom, int32_t device) -> caf::result<uint64_t> {
      auto& st = self->state;
      if (st.alive.count(device) == 0)
        return fail("device " + std::to_string(device) + " is not in the fleet");
      if (st.draining.insert(device).second) {
        ++st.version;
        spdlog::info("planner: device {} is draining: no new work for it", device);
      }
      return st.version;
    },
    [=](run_over_atom) {
      self->state.run_over = true;
      return caf::ok_atom::value;
    },
    [=](plans_atom) {
      std::vector<plan> out;
      for (const auto& [shape, p] : self->state.recent_plans) out.push_back(p);
      return out;
    },
    [=](detector_atom) { return caf::actor_cast<caf::actor>(self->state.detector); },
    [=](fleet_atom) {
      auto rp = self->make_response_promise();
      self->state.waiting_for_fleet.push_back(rp);
      answer_waiters(self);
      return rp;
    },
    [=](caf::get_atom)
      -> caf::result<uint64_t, bool, std::vector<fleet_member>, std::vector<int32_t>,
                     std::vector<int32_t>> {
      const auto& st = self->state;
      std::vector<fleet_member> all;
      for (const auto& [id, m] : st.alive) all.push_back(m);
      return {st.version, st.quorum_reached, std::move(all),
              std::vector<int32_t>(st.suspected.begin(), st.suspected.end()),
              std::vector<int32_t>(st.draining.begin(), st.draining.end())};
    },
    [=](plan_atom, const gemm_problem& g) {
      auto in = planning(self->state);
      return remembered(self->state, in, make_plan(g, in.devices, in.cost));
    },
    [=](replace_atom, const plan& p, const std::vector<int32_t>& ids) {
      const auto in = planning(self->state);
      auto alive = in.devices;
      alive.erase(std::remove_if(alive.begin(), alive.end(),
                                 [&](const device_view& v) {
                                   return std::find(ids.begin(), ids.end(), v.id) == ids.end();
                                 }),
                  alive.end());
      return remembered(self->state, in, replace_plan(p, alive, in.cost));
    },
    [=](mirror_atom, const plan& forward, gemm_role role, const gemm_problem& g) {
      auto in = planning(self->state);
      return remembered(self->state, in, backward_plan(forward, role, g, in.devices, in.cost).p);
    },
  };
}

}  // namespace cleave
