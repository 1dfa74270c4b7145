#pragma once
// How often a fleet's devices heartbeat. Every heartbeat costs the ps a
// socket read and a few actor messages (tens of microseconds), so at fleet
// scale the interval follows the fleet's size: the edge's device cap over a
// heartbeat budget the ps can afford, never shorter than the job's base
// interval nor longer than max_heartbeat_seconds (the edge drops a device
// silent for 30 s: a few missed beats must stay far from that).
//
// The rule uses the cap, not the devices joined so far: every device is told
// the same interval at its welcome, so the detector judges all of them by
// one rhythm, and the ps's heartbeat rate stays within budget however the
// fleet fills up (devices are not told of a new interval after their welcome).

#include <cstddef>

#include "actors/detector/detector_options.hpp"

namespace cleave {

inline constexpr double max_heartbeat_seconds = 5;
// What the default edge already cost the ps (256 devices at 0.1 s), so the
// default interval stays 0.1 s up to 256 devices. 4,000/s (0.25 s at 1,000
// devices) left a swarm's heartbeats 0.15 s of slack, which a loaded host's
// scheduling stalls ate: thousands of false suspicions a minute (bench/swarm).
inline constexpr double default_heartbeat_rate = 2560;  // heartbeats/s the ps takes at most

// max(base, max_devices / rate), at most max_heartbeat_seconds (and never
// below base). rate <= 0 means no budget: base.
double fleet_heartbeat_seconds(double base_seconds, size_t max_devices, double rate);

// Heartbeats per second the ps takes from a full fleet at that interval.
double fleet_heartbeat_rate(double interval_seconds, size_t max_devices);

// The detector's spread floor follows the interval: a 20 ms floor at 0.1 s
// heartbeats, and the same fraction of a longer one, so a heartbeat late by
// the same share of its interval is judged alike, and suspicion still comes
// within detection_seconds() (a few intervals) of a device falling silent.
inline constexpr double min_stddev_fraction = 0.2;
detector_options detector_for_interval(detector_options base, double interval_seconds);

}  // namespace cleave
