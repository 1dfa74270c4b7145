#pragma once
// How long after a device falls silent the detector reports it, from its
// own options and its own phi arithmetic: what the simulator waits before
// the engine reacts to a death or a hang.

#include "actors/detector/detector_options.hpp"

namespace cleave {

// Seconds from a device's death to the detector's first report (suspect):
// heartbeats every heartbeat_seconds until then, so the phi window is
// regular; phi is evaluated every check_seconds. On average a device dies
// half a heartbeat after its last one and is noticed half a check after
// phi crosses suspect_phi: the result is the silence at which phi reaches
// suspect_phi, minus half a heartbeat interval, plus half a check interval.
double detection_seconds(const detector_options& opts);

}  // namespace cleave
