#pragma once
// One thread per parameter-server shard: run(job) calls job(s) for every
// shard s at the same time (shard 0 on the caller's thread) and returns when
// all are done, rethrowing the first exception a shard raised.

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace cleave {

class shard_pool {
 public:
  explicit shard_pool(int shards);
  ~shard_pool();
  shard_pool(const shard_pool&) = delete;
  shard_pool& operator=(const shard_pool&) = delete;

  int size() const { return static_cast<int>(threads_.size()) + 1; }
  void run(const std::function<void(int)>& job);

 private:
  void work(int shard);

  std::mutex mu_;
  std::condition_variable start_, finished_;
  const std::function<void(int)>* job_ = nullptr;
  uint64_t generation_ = 0;
  int running_ = 0;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::vector<std::thread> threads_;
};

}  // namespace cleave
