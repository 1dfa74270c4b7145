#pragma once
// A run over `--role=ps-shard` processes that loses one need not end: a
// process started again at the lost shard's address takes its place, and
// the trainer rolls back to the newest complete checkpoint set, whose shard
// files the shards load themselves (actors/ps/shards/shard_checkpoints.hpp).

#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/timespan.hpp>

#include "schema/checkpoint_file.hpp"
#include "training/models/parameter.hpp"

namespace cleave {

class remote_shard;
class shard_checkpoints;

struct shard_recovery {
  std::vector<remote_shard*> remotes;  // remotes[s] is shard s; they outlive this
  double wait_seconds = 0;             // --shard-wait-seconds; 0: a lost shard ends the run
  caf::timespan connect_timeout{};
  // A lost shard that listens again (`shard`: its index), before the
  // rollback attaches it. caf::sec::invalid_argument: that process cannot
  // take the shard's place (it is waited for again until the wait is over).
  std::function<caf::error(size_t shard, remote_shard&)> shard_back;
};

// After the run lost some shards (`why`): waits up to `how.wait_seconds`
// for a shard process to listen again at each lost one's address and
// connects to it. Shards that answered wrongly but are still connected are
// no loss to wait for: their error (`why`) stands.
caf::error wait_for_lost_shards(const shard_recovery& how, const std::string& why);

// Whether a shard's connection is gone now (a shard that answered with an
// error, such as a failed write, is not lost).
bool any_shard_lost(const shard_recovery& how);

// `own.restore`, with a shard lost while it loads its file waited for and
// the same set tried again, a few times at most: such a loss says nothing
// about the set.
caf::error restore_shard_set(shard_checkpoints& own, const shard_recovery& how, checkpoint& ck,
                             std::deque<parameter>& params, const std::string& dir);

}  // namespace cleave
