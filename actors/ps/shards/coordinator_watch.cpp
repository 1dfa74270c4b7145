#include "actors/ps/shards/coordinator_watch.hpp"

#include <fmt/format.h>

#include "schema/shard_codec.hpp"

namespace cleave {

const char* to_string(coordinator_state s) {
  switch (s) {
    case coordinator_state::waiting: return "waiting";
    case coordinator_state::serving: return "serving";
    case coordinator_state::orphaned: return "orphaned";
    case coordinator_state::finished: return "finished";
    case coordinator_state::expired: return "expired";
  }
  return "?";
}

bool claims_coordinator(uint16_t kind) {
  const auto k = static_cast<shard_kind>(kind);
  return k == shard_kind::attach || k == shard_kind::restore || k == shard_kind::fleet;
}

bool coordinator_watch::admits(uint64_t conn) const {
  switch (state_) {
    case coordinator_state::waiting:
    case coordinator_state::orphaned: return true;
    case coordinator_state::serving: return conn == coordinator_;
    default: return false;
  }
}

bool coordinator_watch::accepted(uint64_t conn, bool claims) {
  if (state_ != coordinator_state::waiting && state_ != coordinator_state::orphaned) return false;
  if (!claims) return false;
  state_ = coordinator_state::serving;
  coordinator_ = conn;
  finishing_ = false;
  ++coordinators_;
  why_.clear();
  return true;
}

void coordinator_watch::finish(uint64_t conn) {
  if (state_ == coordinator_state::serving && conn == coordinator_) finishing_ = true;
}

coordinator_state coordinator_watch::closed(uint64_t conn, const std::string& reason, clock::time_point now) {
  if (state_ != coordinator_state::serving || conn != coordinator_) return state_;
  if (finishing_) {
    state_ = coordinator_state::finished;
    why_ = "the coordinator ended the job";
    return state_;
  }
  why_ = "the coordinator's connection closed without ending the job (" + reason + ")";
  state_ = coordinator_state::orphaned;
  deadline_ = now + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(timeout_seconds_));
  return tick(now);
}

coordinator_state coordinator_watch::tick(clock::time_point now) {
  if (state_ == coordinator_state::orphaned && now >= deadline_) {
    state_ = coordinator_state::expired;
    why_ = fmt::format("no coordinator attached within {:g} s (--coordinator-timeout) after {}", timeout_seconds_, why_);
  }
  return state_;
}

}  // namespace cleave
