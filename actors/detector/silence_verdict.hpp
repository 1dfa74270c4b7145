#pragma once
// What a device's silence says at one instant: the detector's whole judgement
// of one device, as plain arithmetic on its phi level and the options, so
// tests drive it without an actor.
//
// Dead needs three things: phi past dead_phi, a silence of at least
// dead_min_silence_seconds, and a silence of learned_silence_factor times the
// longest the device's link has shown in phi's window (and recovered from),
// that last bound capped at max_learned_silence_seconds (or at
// dead_min_silence_seconds, if longer). A lossy link stalls TCP for its
// retransmission timeout, doubled at each loss in a row (0.2, 0.6, 1.4 s of
// silence): phi's normal model calls such a stall certain death, and every
// false death rejoins the device and redoes its tiles. A clean link's longest
// interval is about one heartbeat, so its deaths come as early as phi says;
// on a lossy one a hung device is declared dead later, by at most the cap.
// Suspicion needs phi past suspect_phi only: a suspected device's tiles are
// copied to others meanwhile.

#include "actors/detector/detector_options.hpp"
#include "actors/detector/phi_accrual.hpp"

namespace cleave {

enum class silence_verdict { alive, suspect, dead };

silence_verdict judge_silence(const phi_accrual& level, double now, const detector_options& opts);

}  // namespace cleave
