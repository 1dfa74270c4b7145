#pragma once
// The report's device processes' memory: each one's peak resident bytes, as
// its heartbeats told the detector, beside the ps's own (peak_rss_bytes) and
// each shard process's (per_shard). Emulated devices share the ps's process
// and say nothing here.

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

namespace cleave {

// Asks `detector` (waiting at most 5 s). {"device_peak_rss_bytes": the
// largest, "device_processes": [{"id", "peak_rss_bytes"}, ...]}, the devices
// that said; an empty object if none did, or the detector does not answer.
nlohmann::json device_memory_report(caf::actor_system& sys, const caf::actor& detector);

}  // namespace cleave
