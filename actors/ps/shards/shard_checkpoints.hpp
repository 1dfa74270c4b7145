#pragma once
// Checkpoints of a coordinator over `--role=ps-shard` processes that write
// their own slices (docs/PS_SHARDS.md). A set is the shards'
// files, each written atomically by its shard, and the coordinator's file,
// written last and naming them with their checksums: the set is complete
// iff the coordinator's file exists and every file it names does with that
// checksum. The coordinator no longer gathers the moments: they stay in the
// shards' files, and its own file holds the values (for its row-wise ops),
// the data position and the manifest.

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "actors/ps/shards/remote_shard.hpp"
#include "actors/ps/shards/sharded_ps.hpp"
#include "schema/checkpoint_file.hpp"

namespace cleave {

class shard_checkpoints {
 public:
  // remotes[s] is ps's shard s; both outlive this object.
  shard_checkpoints(sharded_ps& ps, std::vector<remote_shard*> remotes) : ps_(ps), remotes_(std::move(remotes)) {}

  // Refuses shards without a --checkpoint-dir, naming the first one.
  caf::error check_dirs();
  // Every shard writes its slices as of `step`, all at once; the manifest
  // for the coordinator's file once every shard has answered. `kept_steps`:
  // the steps of the coordinator's files on disk, whose shard files the
  // shards keep (and no other of theirs: a set that failed must not push
  // an older complete one out).
  caf::expected<shard_set> write(int64_t step, const std::vector<uint64_t>& kept_steps);
  // Makes `ck` (a set) loadable: with the set's shard count every shard
  // loads its own file (the next attach then sends nothing); with another
  // count the moments come whole from the set's files in `dir`
  // (read_set_moments). An error says why the set cannot be taken.
  caf::error restore(checkpoint& ck, std::deque<parameter>& params, const std::string& dir);

 private:
  sharded_ps& ps_;
  std::vector<remote_shard*> remotes_;
};

// The whole AdamW moments of `ck`'s parameters from its set's shard files
// in `dir` (the coordinator's --checkpoint-dir: with another shard count, or
// in one process, the coordinator reads the old set itself, so the shards'
// directory must be shared with it or copied there). Each file must carry
// the checksum and size the set names, belong to the set (step, set id,
// index, count), and the slices must tile every tensor exactly.
caf::error read_set_moments(const std::string& dir, checkpoint& ck);

}  // namespace cleave
