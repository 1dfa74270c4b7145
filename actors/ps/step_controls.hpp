#pragma once
// What an operator asked of the training loop, as the loop obeys it between
// steps: stay paused until resumed, and write one checkpoint per request
// (requests that arrive before the loop gets to them make one checkpoint).

#include <utility>

namespace cleave {

class step_controls {
 public:
  void pause() { paused_ = true; }
  void resume() { paused_ = false; }
  void request_checkpoint() { checkpoint_due_ = true; }
  bool paused() const { return paused_; }
  // True once after a request: the caller writes the checkpoint.
  bool take_checkpoint() { return std::exchange(checkpoint_due_, false); }

 private:
  bool paused_ = false;
  bool checkpoint_due_ = false;
};

}  // namespace cleave
