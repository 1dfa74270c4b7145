#pragma once
// How fast one device may send frames: a token bucket, pure arithmetic on the
// caller's clock. Within its rate a device passes; past its burst it is
// throttled (the gateway holds back the channel's credit, so the device's
// sends block); a device still ahead of its rate by more than
// max_throttle_seconds of frames is dropped.

#include <cstdint>

namespace cleave {

struct rate_limit_options {
  double frames_per_second = 500;  // sustained: heartbeats and other unsolicited frames
  double burst_frames = 1000;
  double max_throttle_seconds = 5;
};

enum class rate_verdict : uint8_t { pass, throttle, drop };

struct rate_decision {
  rate_verdict verdict = rate_verdict::pass;
  double delay_seconds = 0;  // for throttle: how long to hold the credit back
};

class rate_limiter {
 public:
  rate_limiter() = default;
  rate_limiter(rate_limit_options opts, double now_seconds);
  // One frame arrived at `now_seconds` (never earlier than the last call's).
  rate_decision admit(double now_seconds);

 private:
  rate_limit_options opts_;
  double tokens_ = 0;  // negative: the frames the device is ahead of its rate
  double last_ = 0;
};

}  // namespace cleave
