#pragma once
// The actor of a `--role=ps-shard` process: the sink of its bulk listener.
// It moves frames between the channel and a shard_service (all the logic)
// and serves one coordinator: the first connection whose attach it
// accepts. Frames from any other connection are refused and that
// connection closed; a connection the channel drops as hostile (bad header,
// over a cap) ends only itself. The actor quits when its coordinator's
// connection closes.

#include <cstdint>
#include <string>

#include <caf/all.hpp>

#include "actors/ps/shards/shard_service.hpp"
#include "actors/transport/bulk_channel.hpp"

namespace cleave {

struct shard_server_state {
  shard_service service;
  caf::actor channel;
  uint64_t coordinator = 0;  // the attached connection (0: none yet)
  bool has_coordinator = false;
  std::string why_ended;
  static inline const char* name = "cleave.shard_server";
};

// checkpoint_dir: where the shard writes and reads its own checkpoint files
// (--checkpoint-dir; empty: none).
caf::behavior shard_server(caf::stateful_actor<shard_server_state>* self, std::string checkpoint_dir);
// The same for a shard that feeds devices (--edge): its products run on
// `devices`' engine, which blocks the caller while tiles are out, so spawn
// it detached.
caf::behavior shard_server_with_devices(caf::stateful_actor<shard_server_state>* self, shard_devices* devices,
                                        std::string checkpoint_dir);

// The channel options a shard listens with: caps per request kind (small
// requests cannot make it buffer a large frame) and a single coordinator
// plus a few connections to refuse.
transport::bulk_options shard_channel_options(const std::string& bind_address);

}  // namespace cleave
