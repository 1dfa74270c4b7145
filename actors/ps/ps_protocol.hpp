#pragma once
// What the parameter server's mailboxes are told. Both are blocking actors
// (caf::scoped_actor) in the threads that own the data, the training loop's
// and each shard's engine's, which take their messages between the steps of
// their own work; CAF 0.17 has no typed blocking actor, so they stay
// dynamically typed and their vocabulary is listed here.
//
// A shard's engine (actors/ps/engine/distributed_gemm.hpp):
//   tile_result                 from a device or its proxy: a tile it was sent
//   tile_miss                   ... or the key of an operand it no longer holds
//   (event_atom, fleet_event)   from the planner it subscribed to, with
//                               (subscribe_atom, caf::actor): a device joined,
//                               is suspected, dead, back, or quarantined
//   a down message              a monitored device or the planner is gone
//
// The training loop's control inbox (actors/ps/control_inbox.hpp), from the
// admin console:
//   (pause_atom), (resume_atom), (checkpoint_atom)
// and it tells the console (actors/console/console_protocol.hpp)
// (control_atom, inbox, has_checkpoint_dir) once, then
// (loop_event_atom, "paused" | "resumed" | "checkpoint", step).
//
// A --role=ps-shard process's server (shard_server.hpp) is the sink of its
// bulk listener, speaking the channel's vocabulary
// (actors/transport/bulk_channel.hpp) and schema/shard_codec.hpp's frames.

#include "schema/messages.hpp"
