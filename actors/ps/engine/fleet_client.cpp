#include "actors/ps/engine/fleet_client.hpp"

#include <chrono>
#include <thread>

#include <spdlog/spdlog.h>

#include "schema/errors.hpp"

namespace cleave {

fleet_client::fleet_client(caf::scoped_actor& self, caf::actor planner,
                           std::function<caf::actor()> find_planner, bool stop_on_failure,
                           runtime_accounts& acc)
    : self_(self), planner_(std::move(planner)), find_planner_(std::move(find_planner)),
      stop_on_failure_(stop_on_failure), acc_(acc) {
  self_->monitor(planner_);
}

caf::error fleet_client::refresh() {
  for (int attempt = 0;; ++attempt) {
    auto err = ask();
    if (!err || !find_planner_ || attempt == 100) return err;
    // A restarted planner starts with an empty fleet: wait for it and for
    // the devices to join it again; the plans keep their tiles.
    auto next = find_planner_();
    if (next && next != planner_) {
      spdlog::warn("{}; following the restarted planner", describe(err));
      planner_ = next;
      planner_lost_ = false;
      // Its ids start afresh: an old id may name a new device.
      dead_ = id_ranges{};
      failed_.clear();
      self_->monitor(planner_);
      self_->send(planner_, subscribe_atom::value, caf::actor_cast<caf::actor>(self_));
      version_ = ~uint64_t{0};
      continue;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void fleet_client::take_queued_events() {
  for (bool more = true; more;)
    self_->receive([&](event_atom, const fleet_event& ev) { on_event(ev); },
                   caf::after(std::chrono::seconds(0)) >> [&] { more = false; });
}

caf::error fleet_client::ask() {
  take_queued_events();
  stale_ = false;
  // The planner answers once its first quorum of devices has joined. One in
  // another process that died answers nothing, so ask in rounds and look for
  // its down message in between.
  for (;;) {
    if (planner_lost_) return fail("the planner is gone");
    caf::error err;
    bool answered = false;
    // A blocking actor keeps the timeout of a request answered in time in
    // its mailbox for good (nothing it receives later matches it): one per
    // step would grow the PS without bound. This actor's mailbox goes with it.
    caf::scoped_actor asker{self_->system()};
    asker->request(planner_, std::chrono::seconds(1), fleet_atom::value)
      .receive(
        [&](uint64_t version, std::vector<fleet_member>& members) {
          answered = true;
          if (version == version_) return;
          version_ = version;
          ++epoch_;
          fleet_.clear();
          for (auto& m : members) {
            acc_.devices[m.id].profile = m.profile.name;
            fleet_.emplace(m.id, std::move(m));
          }
        },
        [&](caf::error& e) { err = std::move(e); });
    if (answered) return caf::none;
    if (err != caf::make_error(caf::sec::request_timeout))
      return fail("cannot reach the planner: " + self_->system().render(err));
    self_->receive(
      [&](const caf::down_msg& down) {
        if (down.source == planner_.address()) planner_lost_ = true;
      },
      caf::after(std::chrono::seconds(0)) >> [] {});
    take_queued_events();  // devices that come and go while the quorum is awaited
  }
}

bool fleet_client::on_event(const fleet_event& ev) {
  const int32_t dev = ev.device;
  if (dead_.contains(dev)) return false;  // a late copy of an earlier event: ids are never given twice
  if (ev.kind == fleet_event_kind::join || ev.kind == fleet_event_kind::rejoin) {
    failed_.erase(dev);
    stale_ = true;  // usable from the next GEMM
    return false;
  }
  // Quarantine is not a failure: the device is alive, its results are wrong.
  if (ev.kind == fleet_event_kind::dead) {
    dead_.insert(dev);
    if (failed_.erase(dev) == 0) ++acc_.churn.failures_detected;
  } else if (ev.kind != fleet_event_kind::quarantined && failed_.insert(dev).second) {
    ++acc_.churn.failures_detected;
  }
  if (stop_on_failure_ && ev.kind == fleet_event_kind::dead && stopped_by_.empty())
    stopped_by_ = "device " + std::to_string(dev) + " failed";
  // Dead, suspected or quarantined: plan around it from now on.
  if (fleet_.erase(dev) == 0) return false;
  spdlog::info("device {} is {}; its outstanding tiles go to other devices", dev, to_string(ev.kind));
  ++epoch_;
  return true;
}

bool fleet_client::follow_lost_planner() {
  planner_lost_ = true;
  if (auto err = refresh()) {
    spdlog::warn("{}; the tiles left are computed here", describe(err));
    fleet_.clear();
    return false;
  }
  return true;
}

}  // namespace cleave
