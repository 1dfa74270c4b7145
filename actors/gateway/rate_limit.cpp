#include "actors/gateway/rate_limit.hpp"

#include <algorithm>

namespace cleave {

rate_limiter::rate_limiter(rate_limit_options opts, double now_seconds)
    : opts_(opts), tokens_(opts.burst_frames), last_(now_seconds) {}

rate_decision rate_limiter::admit(double now_seconds) {
  if (now_seconds > last_) {
    tokens_ = std::min(opts_.burst_frames, tokens_ + (now_seconds - last_) * opts_.frames_per_second);
    last_ = now_seconds;
  }
  tokens_ -= 1;
  if (tokens_ >= 0) return {rate_verdict::pass, 0};
  const double delay = -tokens_ / opts_.frames_per_second;
  if (delay > opts_.max_throttle_seconds) return {rate_verdict::drop, delay};
  return {rate_verdict::throttle, delay};
}

}  // namespace cleave
