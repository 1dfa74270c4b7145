#pragma once
// The actor of a `--role=ps-shard` process: the sink of its bulk listener.
// It moves frames between the channel and a shard_service (all the logic)
// and serves one coordinator at a time: the first connection whose attach,
// restore or fleet request it accepts. Frames from any other connection are
// refused and that connection closed; a connection the channel drops as
// hostile (bad header, over a cap) ends only itself. What the end of the
// coordinator's connection means is coordinator_watch's: the actor quits
// normally when the coordinator had ended the job, waits for another
// coordinator when it had not, and quits with the reason (an error) when
// none attached within the timeout.

#include <cstdint>
#include <string>

#include <caf/all.hpp>

#include "actors/ps/shards/coordinator_watch.hpp"
#include "actors/ps/shards/shard_service.hpp"
#include "actors/transport/bulk_channel.hpp"

namespace cleave {

struct shard_server_state {
  shard_service service;
  caf::actor channel;
  coordinator_watch watch{0};
  uint64_t orphaned = 0;  // counts orphanings: a timer set for an earlier one is stale
  static inline const char* name = "cleave.shard_server";
};

// checkpoint_dir: where the shard writes and reads its own checkpoint files
// (--checkpoint-dir; empty: none); coordinator_timeout: how long it waits
// for a coordinator after its own vanished (--coordinator-timeout).
caf::behavior shard_server(caf::stateful_actor<shard_server_state>* self, std::string checkpoint_dir,
                           double coordinator_timeout);
// The same for a shard that feeds devices (--edge): its products run on
// `devices`' engine, which blocks the caller while tiles are out, so spawn
// it detached.
caf::behavior shard_server_with_devices(caf::stateful_actor<shard_server_state>* self, shard_devices* devices,
                                        std::string checkpoint_dir, double coordinator_timeout);

// The channel options a shard listens with: caps per request kind (small
// requests cannot make it buffer a large frame) and a single coordinator
// plus a few connections to refuse.
transport::bulk_options shard_channel_options(const std::string& bind_address);

}  // namespace cleave
