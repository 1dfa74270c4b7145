#pragma once
// A small pool of threads for the bulk channel's TLS work, so one process's
// encryption and decryption do not all run on CAF's single multiplexer thread
// (where the broker lives). Plain threads and queues: no CAF, no OpenSSL.
//
// Work is posted to a strand (one per connection). A strand's jobs run one at
// a time, in the order posted, each on whichever pool thread is free; jobs of
// different strands run in parallel. That is what an OpenSSL SSL object
// needs: never two calls at once, and records sealed in sequence order.
//
// A strand can be cancelled (its connection closed): jobs not yet started are
// discarded unrun; a job already running finishes, so a job must own (share)
// everything it touches. A job that throws fails its strand: the exception's
// text is logged and kept (error()), and later jobs of that strand are
// discarded, since a half-done TLS operation leaves the session unusable.
// A job must not own the pool (its last owner would join its own thread).

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cleave::transport {

class crypto_pool;

class crypto_strand : public std::enable_shared_from_this<crypto_strand> {
 public:
  using job = std::function<void()>;

  // Queues a job behind this strand's earlier ones. False if the strand was
  // cancelled or failed (the job is dropped unrun) or the pool is stopping.
  bool post(job j);
  // Discards queued jobs; a running one finishes. Later posts are refused.
  void cancel();
  // Jobs posted and not yet finished or discarded (running included).
  size_t pending() const;
  // Empty unless a job threw: its exception's text.
  std::string error() const;

 private:
  friend class crypto_pool;
  explicit crypto_strand(std::shared_ptr<crypto_pool> pool) : pool_(std::move(pool)) {}
  std::weak_ptr<crypto_pool> pool_;  // weak: the pool's queue holds strands
  mutable std::mutex mu_;
  std::deque<job> jobs_;
  bool scheduled_ = false;  // in the pool's ready queue or running
  bool running_ = false;
  bool cancelled_ = false;
  std::string error_;
};

class crypto_pool : public std::enable_shared_from_this<crypto_pool> {
 public:
  // threads == 0: one per hardware thread, at most 2 (small nodes).
  static std::shared_ptr<crypto_pool> make(size_t threads = 0);
  // One pool per process, made on first use with make(0): every channel's
  // connections share it, so many channels do not mean many threads.
  static std::shared_ptr<crypto_pool> shared();
  ~crypto_pool();  // finishes the jobs already queued, then joins
  crypto_pool(const crypto_pool&) = delete;
  crypto_pool& operator=(const crypto_pool&) = delete;

  std::shared_ptr<crypto_strand> make_strand();
  size_t threads() const { return workers_.size(); }

 private:
  friend class crypto_strand;
  crypto_pool() = default;
  void start(size_t threads);
  void schedule(std::shared_ptr<crypto_strand> s);
  void run();
  void run_one(const std::shared_ptr<crypto_strand>& s);

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<crypto_strand>> ready_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace cleave::transport
