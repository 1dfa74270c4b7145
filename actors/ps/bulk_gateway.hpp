#pragma once
// The PS's end of the bulk tensor channel: remote devices that joined with
// `bulk` take their tiles here as raw frames (schema/tile_codec.hpp) instead
// of CAF messages. The gateway owns the listener, maps connections to device
// ids (a device says hello with its id first), turns task messages from the
// engine into frames and result frames back into tile_result messages.

#include <map>
#include <vector>

#include <caf/all.hpp>

#include "actors/transport/admission.hpp"
#include "actors/transport/bulk_channel.hpp"
#include "schema/messages.hpp"

namespace cleave {

struct bulk_gateway_state {
  transport::admission_key admission;  // the planner's: checks device tickets
  caf::actor channel;  // the listener's broker
  std::vector<caf::actor> engines;  // one per PS shard: where results go
  std::map<int32_t, uint64_t> conn_of;
  std::map<uint64_t, int32_t> device_of;
  static inline const char* name = "cleave.bulk_gateway";
};

// Messages: (subscribe_atom, engine, shard, shards), (task_atom, device id,
// tile_task); and
// the bulk channel's sink messages.
// A connection's first frame must be a device hello (id and the ticket the
// planner gave that id); any other first frame, or a wrong ticket, closes it.
caf::behavior bulk_gateway(caf::stateful_actor<bulk_gateway_state>* self,
                           transport::admission_key admission);

}  // namespace cleave
