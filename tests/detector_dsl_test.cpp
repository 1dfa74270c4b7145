// Deterministic tests of the failure detector actor: CAF 0.17's test
// coordinator runs every actor on one thread and gives them a virtual clock
// (self->clock().now(), delayed_send), so the test decides what time it is.
// Nothing here sleeps or reads the real clock.
//
// Time moves only through fixture::advance(), in 1 ms steps; after each step
// every due delayed message (the detector's tick) is delivered and all
// mailboxes are drained. The detector's ticks fall on a 1 ms grid, so each is
// evaluated exactly at its scheduled virtual time.

#define CAF_SUITE detector_dsl

#include <caf/test/dsl.hpp>
#include <caf/test/unit_test_impl.hpp>  // the test engine's main(): this TU only

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "actors/detector/detector_actor.hpp"
#include "actors/detector/phi_accrual.hpp"
#include "schema/messages.hpp"

namespace {

using namespace cleave;
using namespace std::chrono_literals;
using time_point = caf::actor_clock::time_point;

caf::timespan span_of(double seconds) {
  return std::chrono::duration_cast<caf::timespan>(std::chrono::duration<double>{seconds});
}

double seconds_of(caf::timespan d) { return std::chrono::duration<double>{d}.count(); }

// -- helper actors ------------------------------------------------------------

struct recorded_event {
  fleet_event ev;
  time_point at;  // virtual time of arrival (equal to the time of publication)
};

struct recorder_state {
  std::vector<recorded_event> events;
  static inline const char* name = "test.recorder";
};

// A subscriber that records every fleet event with the virtual time it saw it.
caf::behavior recorder(caf::stateful_actor<recorder_state>* self) {
  return {
    [=](event_atom, const fleet_event& ev) {
      self->state.events.push_back({ev, self->clock().now()});
    },
  };
}

// A watched device: does nothing, only has to be alive (and able to die).
caf::behavior dummy_device(caf::event_based_actor*) {
  return {
    [](int32_t) {},
    [](join_atom) {},
  };
}

struct config : caf::actor_system_config {
  config() { add_cleave_message_types(*this); }
};

// -- fixture -------------------------------------------------------------------

struct fixture : test_coordinator_fixture<config> {
  detector_options opts;
  detector_handle det;

  fixture() { spdlog::set_level(spdlog::level::err); }

  ~fixture() override {
    // The detector re-arms its tick forever; the base class's run() would
    // never run out of timeouts while it lives.
    if (det) {
      caf::anon_send_exit(det, caf::exit_reason::kill);
      sched.run();
    }
  }

  time_point now() { return sched.clock().current_time; }

  void start(detector_options o = {}) {
    opts = o;
    det = sys.spawn(detector_actor, o);
    sched.run();  // initial behavior + first tick, at the current virtual time
  }

  caf::actor subscriber() {
    auto sub = sys.spawn(recorder);
    self->send(det, subscribe_atom::value, sub);
    sched.run();
    return sub;
  }

  caf::actor watch(int32_t id) {
    auto dev = sys.spawn(dummy_device);
    self->send(det, watch_atom::value, id, dev);
    sched.run();
    return dev;
  }

  void heartbeat(int32_t id) {
    self->send(det, heartbeat_atom::value, id);
    sched.run();
  }

  // `n` heartbeats from device `id`, one every heartbeat interval.
  void regular_heartbeats(int32_t id, int n) {
    for (int i = 0; i < n; ++i) {
      advance(span_of(opts.heartbeat_seconds));
      heartbeat(id);
    }
  }

  // Device 1 is watched and heartbeats regularly for 20 intervals, then goes
  // silent for each of `stalls` in turn, recovering from each with
  // `regular_after` regular heartbeats. Returns the subscriber that saw it.
  caf::actor stalling_device(std::initializer_list<caf::timespan> stalls, int regular_after) {
    start();
    auto sub = subscriber();
    watch(1);
    regular_heartbeats(1, 20);
    for (auto stall : stalls) {
      advance(stall);
      heartbeat(1);
      regular_heartbeats(1, regular_after);
    }
    return sub;
  }

  // Moves virtual time forward by `d` in 1 ms steps, delivering due ticks and
  // draining every mailbox after each step.
  void advance(caf::timespan d) {
    while (d > caf::timespan{0}) {
      auto step = std::min<caf::timespan>(d, 1ms);
      sched.clock().advance_time(step);
      sched.run();
      d -= step;
    }
  }

  // Advances in 1 ms steps until `pred` holds or `limit` has passed.
  bool advance_until(const std::function<bool()>& pred, caf::timespan limit) {
    const auto end = now() + limit;
    while (!pred()) {
      if (now() >= end) return false;
      advance(1ms);
    }
    return true;
  }

  std::vector<recorded_event>& events(const caf::actor& sub) {
    return deref<caf::stateful_actor<recorder_state>>(sub).state.events;
  }

  detector_state& det_state() { return deref<detector_handle::stateful_base<detector_state>>(det).state; }

  static size_t count(const std::vector<recorded_event>& evs, fleet_event_kind kind, int32_t dev) {
    return static_cast<size_t>(std::count_if(evs.begin(), evs.end(), [&](const recorded_event& r) {
      return r.ev.kind == kind && r.ev.device == dev;
    }));
  }

  static const recorded_event* find(const std::vector<recorded_event>& evs, fleet_event_kind kind,
                                    int32_t dev) {
    for (auto& r : evs)
      if (r.ev.kind == kind && r.ev.device == dev) return &r;
    return nullptr;
  }

  // First silence (seconds after `model`'s last heartbeat) at which the model
  // reaches `level`, scanned at 0.1 ms resolution. The model is fed the same
  // heartbeats as the detector's, so this is where the threshold is crossed;
  // the detector may only notice it at its next tick.
  static double crossing(const phi_accrual& model, double level) {
    const double last = model.last_heartbeat();
    for (int i = 0; i < 100000; ++i) {
      const double dt = i * 1e-4;
      if (model.phi(last + dt) >= level) return dt;
    }
    return 1e9;
  }
};

}  // namespace

CAF_TEST_FIXTURE_SCOPE(detector_dsl_tests, fixture)

// 1. Regular heartbeats for many intervals: never suspected. A second device
//    heartbeats with a deterministic jitter of up to +-20 ms.
CAF_TEST(regular_heartbeats_are_never_suspected) {
  start();
  auto sub = subscriber();
  watch(1);
  watch(2);
  const auto hb = span_of(opts.heartbeat_seconds);
  uint32_t lcg = 12345;
  auto jitter = [&] {  // in [-20, 20] ms
    lcg = lcg * 1664525u + 1013904223u;
    return std::chrono::milliseconds(static_cast<int>((lcg >> 16) % 41) - 20);
  };
  // Device 1 beats exactly every interval. Device 2's k-th beat is due at
  // k intervals plus a fresh jitter (not cumulative): gaps of 60..140 ms.
  auto next1 = now() + hb;
  auto sched2 = now() + hb;
  auto due2 = sched2 + jitter();
  const auto end = now() + 300 * hb;  // 300 intervals, 30 s of virtual time
  while (now() < end) {
    advance(1ms);
    if (now() >= next1) {
      heartbeat(1);
      next1 += hb;
    }
    if (now() >= due2) {
      heartbeat(2);
      sched2 += hb;
      due2 = sched2 + jitter();
    }
  }
  auto& evs = events(sub);
  CAF_CHECK_EQUAL(evs.size(), 2u);  // the two joins, nothing else
  CAF_CHECK_EQUAL(count(evs, fleet_event_kind::join, 1), 1u);
  CAF_CHECK_EQUAL(count(evs, fleet_event_kind::join, 2), 1u);
  for (auto& r : evs)
    CAF_CHECK(r.ev.kind == fleet_event_kind::join);
  auto& st = det_state();
  CAF_CHECK(!st.devices.at(1).suspected && !st.devices.at(1).dead);
  CAF_CHECK(!st.devices.at(2).suspected && !st.devices.at(2).dead);
  // The detector saw every beat: device 1's last one was at the end, and the
  // mean of its window is the nominal interval.
  auto& d1 = st.devices.at(1).level;
  auto& d2 = st.devices.at(2).level;
  CAF_CHECK_LESS(std::abs(d1.last_heartbeat() - seconds_of(end.time_since_epoch())), 1e-9);
  CAF_CHECK_LESS(std::abs(d1.mean_interval() - opts.heartbeat_seconds), 1e-9);
  CAF_CHECK_LESS(std::abs(d2.mean_interval() - opts.heartbeat_seconds), 0.005);
  // Phi when the next beat is due (device 1) or at the longest jittered gap
  // (device 2, 140 ms) stays far below the suspicion level.
  const double phi1 = d1.phi(d1.last_heartbeat() + opts.heartbeat_seconds);
  const double phi2 = d2.phi(d2.last_heartbeat() + opts.heartbeat_seconds + 0.04);
  CAF_MESSAGE("phi when a beat is due: regular " << phi1 << ", jittered (+40 ms) " << phi2);
  CAF_CHECK_LESS(phi1, 1.0);
  CAF_CHECK_LESS(phi2, opts.suspect_phi);
}

// 2. A silent device is suspected, then declared dead, at the first tick after
//    phi crosses each threshold, and within 0.5 s of silence. Checked for a
//    fresh device (silent right after its join) and for one that heartbeat
//    regularly for 5 s first.
CAF_TEST(silent_device_is_suspected_then_dead_in_time) {
  start();
  auto sub = subscriber();
  const double check = opts.check_seconds;
  auto verify = [&](int32_t id, time_point silent_since, const phi_accrual& model) {
    CAF_REQUIRE(advance_until([&] { return find(events(sub), fleet_event_kind::dead, id); }, 2s));
    auto& evs = events(sub);
    auto* sus = find(evs, fleet_event_kind::suspect, id);
    auto* dead = find(evs, fleet_event_kind::dead, id);
    CAF_REQUIRE(sus != nullptr);
    CAF_REQUIRE(dead != nullptr);
    const double sus_lat = seconds_of(sus->at - silent_since);
    const double dead_lat = seconds_of(dead->at - silent_since);
    const double sus_cross = crossing(model, opts.suspect_phi);
    // Dead needs both phi past its threshold and the minimum silence.
    const double dead_cross = std::max(crossing(model, opts.dead_phi), opts.dead_min_silence_seconds);
    CAF_MESSAGE("device " << id << ": suspect after " << sus_lat * 1e3 << " ms (phi "
                          << sus->ev.phi << ", model crossing " << sus_cross * 1e3
                          << " ms), dead after " << dead_lat * 1e3 << " ms (phi " << dead->ev.phi
                          << ", model crossing " << dead_cross * 1e3 << " ms)");
    // Never before a heartbeat is even due, and suspect strictly before dead.
    CAF_CHECK_GREATER(sus_lat, opts.heartbeat_seconds);
    CAF_CHECK_LESS(sus_lat, dead_lat);
    // At the first tick at or after the crossing (ticks come every check_seconds).
    CAF_CHECK_GREATER_OR_EQUAL(sus_lat, sus_cross);
    CAF_CHECK_LESS_OR_EQUAL(sus_lat, sus_cross + check + 1e-9);
    CAF_CHECK_GREATER_OR_EQUAL(dead_lat, dead_cross);
    CAF_CHECK_LESS_OR_EQUAL(dead_lat, dead_cross + check + 1e-9);
    // Detection latency bound.
    CAF_CHECK_LESS(dead_lat, 0.5);
    // The phi carried by the events matches the thresholds.
    CAF_CHECK_GREATER_OR_EQUAL(sus->ev.phi, opts.suspect_phi);
    CAF_CHECK_LESS(sus->ev.phi, opts.dead_phi);
    CAF_CHECK_GREATER_OR_EQUAL(dead->ev.phi, opts.dead_phi);
    CAF_CHECK_GREATER_OR_EQUAL(dead_lat, opts.dead_min_silence_seconds);
    // Exactly one of each, and nothing more later (dead is final).
    advance(2s);
    CAF_CHECK_EQUAL(count(events(sub), fleet_event_kind::suspect, id), 1u);
    CAF_CHECK_EQUAL(count(events(sub), fleet_event_kind::dead, id), 1u);
    CAF_CHECK_EQUAL(count(events(sub), fleet_event_kind::rejoin, id), 0u);
  };

  // Fresh device: watched, then never heard from again.
  {
    const auto t0 = now();
    watch(1);
    phi_accrual model{opts.heartbeat_seconds, opts.min_stddev};
    model.heartbeat(seconds_of(t0.time_since_epoch()));
    verify(1, t0, model);
  }
  // Established device: 50 regular heartbeats, then silence.
  {
    const auto hb = span_of(opts.heartbeat_seconds);
    watch(2);
    phi_accrual model{opts.heartbeat_seconds, opts.min_stddev};
    model.heartbeat(seconds_of(now().time_since_epoch()));
    for (int i = 0; i < 50; ++i) {
      advance(hb);
      heartbeat(2);
      model.heartbeat(seconds_of(now().time_since_epoch()));
    }
    CAF_CHECK_EQUAL(count(events(sub), fleet_event_kind::suspect, 2), 0u);
    verify(2, now(), model);
  }
}

// 3. A device that heartbeats regularly but 3x slower than nominal from the
//    start should end up not dead: phi adapts to the observed intervals.
//
//    The window starts with intervals around heartbeat_seconds, so the first
//    0.3 s gap pushes phi past dead_phi at ~0.23 s; only the minimum silence
//    for dead (dead_min_silence_seconds) keeps it merely suspected until the
//    heartbeat arrives and the window adapts.
CAF_TEST(slow_regular_device_adapts) {
  start();
  auto sub = subscriber();
  const auto t0 = now();
  watch(1);
  const auto slow = 3 * span_of(opts.heartbeat_seconds);
  for (int i = 0; i < 200; ++i) {  // 60 s of virtual time
    advance(slow);
    heartbeat(1);
  }
  auto& evs = events(sub);
  if (auto* d = find(evs, fleet_event_kind::dead, 1))
    CAF_MESSAGE("slow device declared dead " << seconds_of(d->at - t0) * 1e3
                                             << " ms after its join, at phi " << d->ev.phi);
  CAF_CHECK_EQUAL(count(evs, fleet_event_kind::dead, 1), 0u);
  CAF_CHECK(!det_state().devices.at(1).dead);
  // Suspected early on, then back: suspicion is how slowness shows.
  CAF_CHECK_GREATER_OR_EQUAL(count(evs, fleet_event_kind::suspect, 1), 1u);
  CAF_CHECK_EQUAL(count(evs, fleet_event_kind::rejoin, 1), count(evs, fleet_event_kind::suspect, 1));
}

// 4. A suspected device that heartbeats again is published as rejoined and is
//    not declared dead while it keeps heartbeating.
CAF_TEST(suspected_device_rejoins_and_stays_alive) {
  start();
  auto sub = subscriber();
  watch(1);
  regular_heartbeats(1, 20);
  CAF_REQUIRE(advance_until([&] { return find(events(sub), fleet_event_kind::suspect, 1); }, 2s));
  CAF_REQUIRE_EQUAL(count(events(sub), fleet_event_kind::dead, 1), 0u);
  CAF_CHECK(det_state().devices.at(1).suspected);
  // The late heartbeat arrives at the very tick that raised suspicion.
  self->send(det, heartbeat_atom::value, int32_t{1});
  expect((heartbeat_atom, int32_t), from(self).to(det).with(_, 1));
  expect((event_atom, fleet_event), from(det).to(sub).with(_, _));
  CAF_CHECK(!sched.has_job());
  auto& evs = events(sub);
  CAF_REQUIRE_EQUAL(evs.size(), 3u);
  CAF_CHECK(evs[2].ev.kind == fleet_event_kind::rejoin);
  CAF_CHECK_EQUAL(evs[2].ev.device, 1);
  CAF_CHECK(!det_state().devices.at(1).suspected);
  regular_heartbeats(1, 100);  // 10 s more
  CAF_CHECK_EQUAL(evs.size(), 3u);  // join, suspect, rejoin: nothing after
  CAF_CHECK_EQUAL(count(evs, fleet_event_kind::dead, 1), 0u);
  CAF_CHECK_EQUAL(count(evs, fleet_event_kind::suspect, 1), 1u);
  CAF_CHECK(!det_state().devices.at(1).dead);
  CAF_CHECK(!det_state().devices.at(1).suspected);
}

// 4b. Stalls that each last nearly twice the one before (as TCP's
//     retransmission timeout doubles) are each survived, but what they teach
//     is capped: a hang after them is death within
//     opts.max_learned_silence_seconds, however long the stalls grew.
CAF_TEST(learned_silence_is_capped) {
  auto sub = stalling_device({300ms, 550ms, 1000ms, 1900ms}, 5);
  auto& evs = events(sub);
  CAF_CHECK_EQUAL(count(evs, fleet_event_kind::dead, 1), 0u);
  CAF_CHECK_GREATER_OR_EQUAL(count(evs, fleet_event_kind::suspect, 1), 4u);
  const auto hang = now();
  CAF_REQUIRE(advance_until([&] { return find(evs, fleet_event_kind::dead, 1) != nullptr; }, 10s));
  const double dead_after = seconds_of(now() - hang);
  CAF_MESSAGE("after stalls up to 1.9 s, a hang declared dead after " << dead_after << " s");
  CAF_CHECK_GREATER_OR_EQUAL(dead_after, opts.max_learned_silence_seconds);
  CAF_CHECK_LESS_OR_EQUAL(dead_after, opts.max_learned_silence_seconds + opts.check_seconds + 0.002);
}

// 4c. Death waits twice the longest stall the link has shown: after stalls
//     of 0.3 s and 0.55 s (each survived, suspected only), a hang is death
//     at 1.1 s, not at dead_min_silence_seconds (0.35 s); suspicion comes as
//     early as ever.
CAF_TEST(death_waits_twice_the_longest_stall) {
  auto sub = stalling_device({300ms, 550ms}, 20);
  auto& evs = events(sub);
  CAF_REQUIRE_EQUAL(count(evs, fleet_event_kind::dead, 1), 0u);
  const size_t suspected_before = count(evs, fleet_event_kind::suspect, 1);
  const auto hang = now();
  CAF_REQUIRE(advance_until([&] { return find(evs, fleet_event_kind::dead, 1) != nullptr; }, 5s));
  const double dead_after = seconds_of(now() - hang);
  CAF_MESSAGE("after stalls of 0.3 s and 0.55 s, a hang declared dead after " << dead_after << " s");
  CAF_CHECK_GREATER_OR_EQUAL(dead_after, 1.1);
  CAF_CHECK_LESS_OR_EQUAL(dead_after, 1.1 + opts.check_seconds + 0.002);
  CAF_REQUIRE_EQUAL(count(evs, fleet_event_kind::suspect, 1), suspected_before + 1);
  const recorded_event* last_suspect = nullptr;
  for (auto& r : evs)
    if (r.ev.kind == fleet_event_kind::suspect && r.ev.device == 1) last_suspect = &r;
  CAF_CHECK_LESS(seconds_of(last_suspect->at - hang), 0.5);
}

// 5. A watched device that exits is published dead at once through the
//    monitor's down message: no tick, no clock movement.
CAF_TEST(exited_device_is_dead_without_time_passing) {
  start();
  auto sub = subscriber();
  auto dev1 = watch(1);
  watch(2);
  advance(30ms);  // between ticks
  const auto t = now();
  caf::anon_send_exit(dev1, caf::exit_reason::kill);
  expect((caf::exit_msg), from(_).to(dev1));
  expect((caf::down_msg), from(dev1).to(det));
  expect((event_atom, fleet_event), from(det).to(sub).with(_, _));
  CAF_CHECK(!sched.has_job());
  CAF_CHECK(now() == t);
  auto& evs = events(sub);
  CAF_REQUIRE_EQUAL(evs.size(), 3u);  // join 1, join 2, dead 1
  CAF_CHECK(evs[2].ev.kind == fleet_event_kind::dead);
  CAF_CHECK_EQUAL(evs[2].ev.device, 1);
  CAF_CHECK_EQUAL(evs[2].ev.phi, 0.0);  // the monitor path, not a tick (phi >= 8)
  CAF_CHECK(evs[2].at == t);
  CAF_CHECK_EQUAL(det_state().devices.count(1), 0u);  // nothing left to judge: forgotten
  CAF_CHECK(!det_state().devices.at(2).dead);
  // It stays dead exactly once; a late heartbeat does not revive it.
  heartbeat(1);
  advance(1s);
  CAF_CHECK_EQUAL(count(evs, fleet_event_kind::dead, 1), 1u);
  CAF_CHECK_EQUAL(count(evs, fleet_event_kind::rejoin, 1), 0u);
}

// 6. A heartbeat from an unknown device id is ignored: no event, no new entry,
//    and the detector keeps working.
CAF_TEST(unknown_heartbeat_is_ignored) {
  start();
  auto sub = subscriber();
  watch(1);
  self->send(det, heartbeat_atom::value, int32_t{999});
  expect((heartbeat_atom, int32_t), from(self).to(det).with(_, 999));
  CAF_CHECK(!sched.has_job());  // nothing was published
  CAF_CHECK_EQUAL(events(sub).size(), 1u);
  CAF_CHECK_EQUAL(det_state().devices.count(999), 0u);
  CAF_CHECK_EQUAL(det_state().devices.size(), 1u);
  // Unknown heartbeats interleaved with a regular device change nothing.
  const auto hb = span_of(opts.heartbeat_seconds);
  for (int i = 0; i < 20; ++i) {
    advance(hb);
    heartbeat(1);
    heartbeat(-1);
    heartbeat(999);
  }
  CAF_CHECK_EQUAL(events(sub).size(), 1u);
  CAF_CHECK_EQUAL(det_state().devices.size(), 1u);
  // Still alive and answering.
  watch(2);
  CAF_REQUIRE_EQUAL(events(sub).size(), 2u);
  CAF_CHECK(events(sub)[1].ev.kind == fleet_event_kind::join);
  CAF_CHECK_EQUAL(events(sub)[1].ev.device, 2);
}

// 7. Two subscribers each receive every event exactly once, in the same order.
CAF_TEST(every_subscriber_gets_every_event_once) {
  start();
  auto a = subscriber();
  auto b = subscriber();
  // A publication reaches both subscribers, one message each.
  self->send(det, watch_atom::value, int32_t{1}, sys.spawn(dummy_device));
  expect((watch_atom, int32_t, caf::actor), from(self).to(det).with(_, 1, _));
  expect((event_atom, fleet_event), from(det).to(a).with(_, _));
  expect((event_atom, fleet_event), from(det).to(b).with(_, _));
  sched.run();
  auto dev2 = watch(2);
  const auto hb = span_of(opts.heartbeat_seconds);
  // Device 1 heartbeats every interval, device 2 is silent until dead.
  auto next1 = now() + hb;
  CAF_REQUIRE(advance_until(
    [&] {
      if (now() >= next1) {
        heartbeat(1);
        next1 += hb;
      }
      return find(events(a), fleet_event_kind::dead, 2) != nullptr;
    },
    2s));
  // Device 1 goes silent until suspected, then heartbeats again.
  CAF_REQUIRE(advance_until([&] { return find(events(a), fleet_event_kind::suspect, 1); }, 2s));
  heartbeat(1);
  // Device 2's actor exits after it was declared dead: no second event.
  caf::anon_send_exit(dev2, caf::exit_reason::kill);
  sched.run();
  // Then device 1's actor exits: dead through the monitor.
  auto dev1 = det_state().devices.at(1).handle;
  caf::anon_send_exit(dev1, caf::exit_reason::kill);
  sched.run();
  advance(1s);
  using k = fleet_event_kind;
  const std::vector<std::pair<k, int32_t>> want{{k::join, 1},    {k::join, 2},   {k::suspect, 2},
                                                {k::dead, 2},    {k::suspect, 1}, {k::rejoin, 1},
                                                {k::dead, 1}};
  for (auto* sub : {&a, &b}) {
    auto& evs = events(*sub);
    CAF_REQUIRE_EQUAL(evs.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      CAF_CHECK(evs[i].ev.kind == want[i].first);
      CAF_CHECK_EQUAL(evs[i].ev.device, want[i].second);
    }
  }
  // Same events at the same virtual times with the same phi.
  auto& ea = events(a);
  auto& eb = events(b);
  for (size_t i = 0; i < ea.size(); ++i) {
    CAF_CHECK(ea[i].at == eb[i].at);
    CAF_CHECK_EQUAL(ea[i].ev.phi, eb[i].ev.phi);
  }
}

// 5b. Devices whose actors exit leave only their verdict behind, and only
//     the newest departed_kept of those.
CAF_TEST(departed_devices_leave_their_verdict_and_only_the_newest_are_kept) {
  detector_options o;
  o.departed_kept = 2;
  start(o);
  std::vector<caf::actor> devs;
  for (int32_t id = 1; id <= 3; ++id) devs.push_back(watch(id));
  self->send(det, quarantine_atom::value, int32_t{3});
  sched.run();
  for (auto& d : devs) {
    caf::anon_send_exit(d, caf::exit_reason::kill);
    sched.run();
  }
  CAF_CHECK(det_state().devices.empty());
  const auto& gone = det_state().departed;
  CAF_REQUIRE_EQUAL(gone.size(), 2u);
  CAF_CHECK_EQUAL(gone[0].id, 2);
  CAF_CHECK(gone[0].dead && !gone[0].quarantined);
  CAF_CHECK_EQUAL(gone[1].id, 3);
  CAF_CHECK(gone[1].quarantined && !gone[1].dead);
}

// 8. A device declared dead on silence that heartbeats again (it was only
//    stalled) is asked, once, to join again; it stays dead to the detector
//    until its actor exits.
CAF_TEST(a_device_declared_dead_but_alive_is_asked_to_join_again) {
  start();
  auto sub = subscriber();
  auto dev = watch(1);
  CAF_REQUIRE(advance_until([&] { return find(events(sub), fleet_event_kind::dead, 1); }, 2s));
  self->send(det, heartbeat_atom::value, int32_t{1});
  expect((heartbeat_atom, int32_t), from(self).to(det).with(_, 1));
  expect((join_atom), from(det).to(dev).with(_));
  heartbeat(1);  // asked once only
  CAF_CHECK(!sched.has_job());
  CAF_CHECK_EQUAL(count(events(sub), fleet_event_kind::rejoin, 1), 0u);
  CAF_CHECK(det_state().devices.at(1).dead);
  // Once its actor exits (the connection closed), its record goes, and its
  // death is not published twice.
  caf::anon_send_exit(dev, caf::exit_reason::kill);
  sched.run();
  CAF_CHECK_EQUAL(det_state().devices.count(1), 0u);
  CAF_CHECK_EQUAL(count(events(sub), fleet_event_kind::dead, 1), 1u);
}

CAF_TEST_FIXTURE_SCOPE_END()
