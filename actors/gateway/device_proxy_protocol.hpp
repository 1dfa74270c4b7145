#pragma once
// What a device's proxy is told. To the planner, the detector and the PS
// engines it is the device (actors/device/device_protocol.hpp); to the edge
// gateway it is the handler of its connection's frames.
//
// The proxy stays a dynamically typed actor, for the device's reasons: its
// handle is a fleet_member's, where a device's could be too.
//
// Messages:
//   (bulk_frame_atom, bulk_frame) request  a result or miss frame from the device;
//                                          replies with the payload buffer
//   (heartbeat_atom, int64_t received_ns, uint64_t peak_rss_bytes)
//       the device heartbeated; the edge read it then (steady ns); its process's peak memory (0: unsaid)
//   tile_task                              from an engine: sent to the device
//   (modellet_atom, slot, kind, payload, sent_at_ns)   a model-let frame to the device; answered with
//     -> (kind, payload)                   the device's answer frame (tagged like the request)
//   (run_over_atom) -> ok                  tells the device the run is over
//   (quarantine_atom, std::string why)     from the planner: the device is refused with why
//   (join_atom)                            from the detector: join again under a new id
// A planner that goes away is looked for again (opts.planner) for 5 s and
// joined under a new id; past that the proxy exits and the device is dropped.

#include "actors/device/device_protocol.hpp"
#include "actors/transport/bulk_channel.hpp"
#include "schema/messages.hpp"
