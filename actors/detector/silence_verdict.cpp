#include "actors/detector/silence_verdict.hpp"

#include <algorithm>

namespace cleave {

silence_verdict judge_silence(const phi_accrual& level, double now, const detector_options& opts) {
  const double phi = level.phi(now);
  if (phi < opts.suspect_phi) return silence_verdict::alive;
  const double silence = now - level.last_heartbeat();
  if (phi < opts.dead_phi || silence < opts.dead_min_silence_seconds) return silence_verdict::suspect;
  const double learned_cap = std::max(opts.max_learned_silence_seconds, opts.dead_min_silence_seconds);
  const double learned = std::min(opts.learned_silence_factor * level.longest_interval(), learned_cap);
  return silence >= learned ? silence_verdict::dead : silence_verdict::suspect;
}

}  // namespace cleave
