#include "actors/planner/fleet_roster.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include <spdlog/spdlog.h>

#include "schema/errors.hpp"

namespace cleave {

namespace {

using roster_clock = std::chrono::steady_clock;

}  // namespace

caf::expected<std::vector<fleet_member>> wait_for_members(caf::actor_system& sys, const caf::actor& planner,
                                                          int devices) {
  caf::scoped_actor self{sys};
  const auto until = roster_clock::now() + std::chrono::seconds(30);
  std::vector<fleet_member> members;
  while (roster_clock::now() < until) {
    self->request(planner, std::chrono::seconds(2), caf::get_atom::value)
      .receive([&](uint64_t, bool, std::vector<fleet_member>& all, const std::vector<int32_t>&,
                   const std::vector<int32_t>&) { members = std::move(all); },
               [&](caf::error&) { members.clear(); });
    if (static_cast<int>(members.size()) >= devices) {
      std::sort(members.begin(), members.end(),
                [](const fleet_member& a, const fleet_member& b) { return a.id < b.id; });
      return members;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return fail(std::to_string(members.size()) + " of " + std::to_string(devices)
              + " devices joined within 30 s: no model-lets placed");
}

// The devices the planner knows (alive or suspected) leave once told; the
// answers show the word got out before this process closes its connections.
void tell_devices_run_over(caf::actor_system& sys, const caf::actor& planner) {
  if (!planner) return;
  caf::scoped_actor self{sys};
  self->request(planner, std::chrono::seconds(2), run_over_atom::value)
    .receive([](caf::ok_atom) {}, [](caf::error&) {});  // unanswered: the leaving shows as deaths
  std::vector<fleet_member> members;
  self->request(planner, std::chrono::seconds(2), caf::get_atom::value)
    .receive([&](uint64_t, bool, std::vector<fleet_member>& all, const std::vector<int32_t>&,
                 const std::vector<int32_t>&) { members = std::move(all); },
             [&](caf::error& err) {
               spdlog::warn("cannot tell the devices the run is over: {}", sys.render(err));
             });
  for (const auto& m : members) self->send(m.handle, run_over_atom::value);
  const auto until = roster_clock::now() + std::chrono::seconds(2);
  size_t answered = 0;
  for (bool waiting = true; waiting && answered < members.size();)
    self->receive([&](caf::ok_atom) { ++answered; },
                  caf::after(std::chrono::duration_cast<caf::timespan>(until - roster_clock::now()))
                    >> [&] { waiting = false; });
  spdlog::info("told {} of {} device(s) that the run is over", answered, members.size());
}

}  // namespace cleave
