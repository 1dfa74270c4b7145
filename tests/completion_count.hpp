#pragma once
// Counts jobs finished on other threads (a crypto pool's, a TLS pipe's) and
// waits until a number of them have.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>

namespace cleave::testing {

class completion_count {
 public:
  void add() {
    std::lock_guard<std::mutex> lk(mu_);
    ++n_;
    cv_.notify_all();
  }
  // add() as a callback, for code that takes a notify function.
  std::function<void()> callback() {
    return [this] { add(); };
  }
  size_t count() {
    std::lock_guard<std::mutex> lk(mu_);
    return n_;
  }
  bool wait_for(size_t want, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    std::unique_lock<std::mutex> lk(mu_);
    return cv_.wait_for(lk, limit, [&] { return n_ >= want; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  size_t n_ = 0;
};

}  // namespace cleave::testing
