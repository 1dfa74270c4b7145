#pragma once
// What the PS thinks of each device's results. A refused result (failed its
// check, wrong shape, NaN) is a strike; past `quarantine_after` strikes the
// device is quarantined: it gets no more tiles for the rest of the run. A
// run of verified results forgives a strike, so a device whose memory
// flipped a bit once in a long run stays, while a liar at any steady rate
// above 1 in `forgive_after` does not. Pure: the engine feeds it verdicts.

#include <cstdint>
#include <map>

namespace cleave {

struct reputation_options {
  int quarantine_after = 3;      // strikes
  uint64_t forgive_after = 1000;  // verified results in a row that take one strike away
};

class reputation {
 public:
  explicit reputation(reputation_options opts = {}) : opts_(opts) {}

  void passed(int32_t device);
  // True exactly once per device: when this strike quarantines it.
  bool failed(int32_t device);

  bool quarantined(int32_t device) const;
  int strikes(int32_t device) const;

 private:
  struct record {
    int strikes = 0;
    uint64_t good_in_a_row = 0;
    bool quarantined = false;
  };
  reputation_options opts_;
  std::map<int32_t, record> devices_;
};

}  // namespace cleave
