#include "actors/transport/crypto_pool.hpp"

#include <algorithm>
#include <exception>

#include <spdlog/spdlog.h>

namespace cleave::transport {

bool crypto_strand::post(job j) {
  auto pool = pool_.lock();
  if (!pool) return false;
  std::unique_lock<std::mutex> lk(mu_);
  if (cancelled_ || !error_.empty()) return false;
  jobs_.push_back(std::move(j));
  if (scheduled_) return true;  // the thread running us picks it up next
  scheduled_ = true;
  lk.unlock();
  pool->schedule(shared_from_this());
  return true;
}

void crypto_strand::cancel() {
  std::deque<job> dropped;  // destroyed outside the lock: closures may own big buffers
  std::lock_guard<std::mutex> lk(mu_);
  cancelled_ = true;
  dropped.swap(jobs_);
}

size_t crypto_strand::pending() const {
  std::lock_guard<std::mutex> lk(mu_);
  return jobs_.size() + (running_ ? 1 : 0);
}

std::string crypto_strand::error() const {
  std::lock_guard<std::mutex> lk(mu_);
  return error_;
}

std::shared_ptr<crypto_pool> crypto_pool::make(size_t threads) {
  if (threads == 0) threads = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 2);
  std::shared_ptr<crypto_pool> p(new crypto_pool());
  p->start(threads);
  return p;
}

std::shared_ptr<crypto_pool> crypto_pool::shared() {
  static std::shared_ptr<crypto_pool> pool = make(0);
  return pool;
}

void crypto_pool::start(size_t threads) {
  for (size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { run(); });
}

crypto_pool::~crypto_pool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

std::shared_ptr<crypto_strand> crypto_pool::make_strand() {
  return std::shared_ptr<crypto_strand>(new crypto_strand(shared_from_this()));
}

void crypto_pool::schedule(std::shared_ptr<crypto_strand> s) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    ready_.push_back(std::move(s));
  }
  cv_.notify_one();
}

void crypto_pool::run() {
  for (;;) {
    std::shared_ptr<crypto_strand> s;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return stopping_ || !ready_.empty(); });
      if (ready_.empty()) return;  // stopping, nothing left
      s = std::move(ready_.front());
      ready_.pop_front();
    }
    run_one(s);
  }
}

// One job of the strand, then the strand goes to the back of the ready queue
// if it has more: a connection streaming big frames does not starve others.
void crypto_pool::run_one(const std::shared_ptr<crypto_strand>& s) {
  crypto_strand::job j;
  {
    std::lock_guard<std::mutex> lk(s->mu_);
    if (s->jobs_.empty()) {
      s->scheduled_ = false;  // cancelled since it was scheduled
      return;
    }
    j = std::move(s->jobs_.front());
    s->jobs_.pop_front();
    s->running_ = true;
  }
  std::string error;
  try {
    j();
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "unknown exception";
  }
  j = nullptr;  // release what the job owned before the strand moves on
  bool again = false;
  std::deque<crypto_strand::job> dropped;
  {
    std::lock_guard<std::mutex> lk(s->mu_);
    s->running_ = false;
    if (!error.empty()) {
      s->error_ = error;
      dropped.swap(s->jobs_);
    }
    again = !s->jobs_.empty();
    if (!again) s->scheduled_ = false;
  }
  if (!error.empty())
    spdlog::error("crypto pool: a job failed: {}; its connection's later jobs are dropped", error);
  if (again) schedule(s);
}

}  // namespace cleave::transport
