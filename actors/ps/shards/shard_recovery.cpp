#include "actors/ps/shards/shard_recovery.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include <spdlog/spdlog.h>

#include "actors/ps/shards/remote_shard.hpp"
#include "actors/ps/shards/shard_checkpoints.hpp"
#include "schema/errors.hpp"
#include "training/elapsed.hpp"

namespace cleave {

namespace {

// Waits for shard `s` until `deadline`.
caf::error wait_for_shard(const shard_recovery& how, size_t s, const std::string& why,
                          clock_type::time_point deadline) {
  auto& shard = *how.remotes[s];
  spdlog::warn("ps: PS shard {} at {} is lost ({}); waiting up to {:.0f} s for a shard process to listen there "
               "again (--shard-wait-seconds), then rolling back to the newest checkpoint",
               s, shard.address(), why, how.wait_seconds);
  // Why a process that answered there cannot take the shard's place
  // (shard_back's invalid_argument), kept for the final error: the next
  // attempt drops that connection, so a process started right can take
  // its place. Other failures (a process still dying can take a
  // connection and drop it) are waited through.
  caf::error refused;
  for (;;) {
    auto err = shard.reconnect(how.connect_timeout);
    if (!err && how.shard_back) {
      if (auto back = how.shard_back(s, shard)) {
        if (back == caf::sec::invalid_argument) {
          // Told the job is over, it exits instead of waiting for a coordinator of its own.
          (void) shard.finish();
          if (!refused) {
            spdlog::warn("ps: PS shard {}: {}; still waiting", s, describe(back));
            refused = back;
          }
        }
        err = std::move(back);
      }
    }
    if (!err) break;
    if (clock_type::now() >= deadline)
      return fail("PS shard " + std::to_string(s) + " at " + shard.address() + " did not come back within "
                  + fmt::format("{:.0f}", how.wait_seconds) + " s (--shard-wait-seconds): "
                  + describe(refused ? refused : err) + "; it was lost: " + why);
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  spdlog::warn("ps: PS shard {} at {} is back", s, shard.address());
  return caf::none;
}

}  // namespace

bool any_shard_lost(const shard_recovery& how) {
  return std::any_of(how.remotes.begin(), how.remotes.end(), [](remote_shard* r) { return r->lost(); });
}

caf::error wait_for_lost_shards(const shard_recovery& how, const std::string& why) {
  std::vector<size_t> lost;
  for (size_t s = 0; s < how.remotes.size(); ++s)
    if (how.remotes[s]->lost()) lost.push_back(s);
  if (lost.empty() || !(how.wait_seconds > 0)) return fail(why);
  const auto deadline = clock_type::now()
                        + std::chrono::duration_cast<clock_type::duration>(
                          std::chrono::duration<double>(how.wait_seconds));
  for (size_t s : lost)
    if (auto err = wait_for_shard(how, s, why, deadline)) return err;
  return caf::none;
}

caf::error restore_shard_set(shard_checkpoints& own, const shard_recovery& how, checkpoint& ck,
                             std::deque<parameter>& params, const std::string& dir) {
  auto err = own.restore(ck, params, dir);
  for (int again = 0; err && again < 3 && any_shard_lost(how); ++again) {
    if (auto gone = wait_for_lost_shards(how, describe(err))) return gone;
    err = own.restore(ck, params, dir);
  }
  if (!err)
    spdlog::info("ps: checkpoint set of step {}: {}", ck.step,
                 ck.shards.count == how.remotes.size()
                   ? "every PS shard loaded its own file"
                   : "the moments put together from its " + std::to_string(ck.shards.count) + " shard files");
  return err;
}

}  // namespace cleave
