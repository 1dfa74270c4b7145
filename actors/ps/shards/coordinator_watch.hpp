#pragma once
// A `--role=ps-shard` process's view of its coordinator (docs/PS_SHARDS.md,
// *A lost coordinator*): which connection it serves, and what the end of
// that connection means. A coordinator that ends the job says so first (a
// `finish` request), and the shard ends with exit 0. One whose connection
// closes without that word (killed, its host gone) leaves the shard
// orphaned: it keeps its slices and waits up to --coordinator-timeout for a
// coordinator to attach again (one restarted with --resume, which then
// makes it load its own file of the set it resumes from); past that it
// expires and the process exits 1 with the reason.
// Pure: the server actor (shard_server.hpp) feeds it events and the time.
//
//   waiting --claim--> serving --finish, close--> finished
//                        |  ^
//                  close |  | claim (any connection)
//                        v  |
//                      orphaned --deadline--> expired

#include <chrono>
#include <cstdint>
#include <string>

namespace cleave {

enum class coordinator_state { waiting, serving, orphaned, finished, expired };
const char* to_string(coordinator_state s);

// Whether an accepted request of `kind` makes its connection the
// coordinator: an attach, a restore (a coordinator that resumes) or a
// fleet request. Others (stats, has_checkpoint_dir) claim nothing, so a
// stray connection that only asks cannot take a shard.
bool claims_coordinator(uint16_t kind);

class coordinator_watch {
 public:
  using clock = std::chrono::steady_clock;
  // timeout_seconds: how long an orphan waits (0: it expires at once).
  explicit coordinator_watch(double timeout_seconds) : timeout_seconds_(timeout_seconds) {}

  coordinator_state state() const { return state_; }
  // Whether a request on `conn` may be served: `conn` is the coordinator,
  // or there is none (waiting, orphaned: any connection may attach).
  bool admits(uint64_t conn) const;
  // A request on `conn` was accepted, one that `claims` the shard
  // (claims_coordinator, or the last part of an attach); true when that
  // made `conn` the coordinator (there was none).
  bool accepted(uint64_t conn, bool claims);
  // The coordinator on `conn` said the job is over.
  void finish(uint64_t conn);
  // `conn` closed at `now` because of `reason`; the state it leaves.
  coordinator_state closed(uint64_t conn, const std::string& reason, clock::time_point now);
  // At `now`: an orphan past its deadline expires. The state.
  coordinator_state tick(clock::time_point now);

  uint64_t coordinator() const { return coordinator_; }
  // When an orphan expires (meaningful while orphaned).
  clock::time_point deadline() const { return deadline_; }
  double timeout_seconds() const { return timeout_seconds_; }
  // How many coordinators this shard has served (a restarted one counts again).
  int coordinators() const { return coordinators_; }
  // Why the coordinator is gone (orphaned, expired), or why the job ended (finished).
  const std::string& why() const { return why_; }

 private:
  double timeout_seconds_;
  coordinator_state state_ = coordinator_state::waiting;
  uint64_t coordinator_ = 0;
  bool finishing_ = false;  // the coordinator said `finish`; its close ends the job
  int coordinators_ = 0;
  clock::time_point deadline_{};
  std::string why_;
};

}  // namespace cleave
