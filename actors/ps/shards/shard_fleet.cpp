#include "actors/ps/shards/shard_fleet.hpp"

#include <spdlog/spdlog.h>

#include "actors/ps/shards/remote_shard.hpp"
#include "actors/ps/runtime_report.hpp"
#include "schema/endpoint.hpp"
#include "schema/errors.hpp"

namespace cleave {

shard_fleet::~shard_fleet() {
  // The engine's tiles are out on the edge's devices: it goes first.
  site_.engine.reset();
  if (site_.close) site_.close();
}

caf::expected<std::vector<char>> shard_fleet::configure(const char* data, size_t size) {
  auto m = decode_shard_fleet(data, size);
  if (!m) return m.error();
  if (job_) {
    // A coordinator that rolled back re-sends its request: the same job is no change.
    if (job_->secret == m->secret && job_->shard == m->shard && job_->shards == m->shards)
      return encode_shard_edge(site_.address);
    return fail("this shard already serves another job's devices");
  }
  auto site = open_(*m);
  if (!site) return site.error();
  site_ = std::move(*site);
  job_ = std::move(*m);
  return encode_shard_edge(site_.address);
}

caf::error shard_fleet::begin_step() {
  if (!site_.engine) return caf::none;
  return site_.engine->begin_step(step_++);
}

void shard_fleet::add_stats(shard_stats& s) {
  if (!site_.engine) return;
  const auto acc = site_.engine->accounts();
  const auto t = traffic_of(acc);
  s.devices = true;
  s.tiles = t.tiles;
  s.bytes_down = t.bytes_down;
  s.bytes_up = t.bytes_up;
  s.local_gemms = acc.local_gemms;
  s.issue_seconds = acc.totals.issue_seconds;
  s.wait_seconds = acc.totals.wait_seconds;
  s.egress_seconds = acc.egress_seconds;
  s.ingress_seconds = acc.ingress_seconds;
}

caf::expected<std::string> configure_shard(shard_fleet_msg job, remote_shard& shard, size_t s, size_t count) {
  job.shard = static_cast<uint32_t>(s);
  job.shards = static_cast<uint32_t>(count);
  const auto who = "PS shard " + std::to_string(s) + " at " + shard.address();
  auto frame = shard.request(shard_kind::fleet, encode(job), shard_kind::fleet_answer);
  if (!frame) return fail(who + ": " + describe(frame.error()));
  auto edge = decode_shard_edge(frame->payload.data(), frame->payload.size());
  if (!edge) return fail(who + ": " + describe(edge.error()));
  auto at = parse_endpoint(*edge, "--edge", true);
  if (!at) return fail(who + " names its edge '" + *edge + "': " + describe(at.error()));
  const auto& host = at->first;
  const bool anywhere = host.empty() || host == "0.0.0.0" || host == "::";
  return (anywhere ? shard.host() : host) + ":" + std::to_string(at->second);
}

caf::expected<std::vector<std::string>> configure_shard_fleet(const shard_fleet_msg& job,
                                                              const std::vector<remote_shard*>& shards) {
  std::vector<std::string> edges;
  for (size_t s = 0; s < shards.size(); ++s) {
    auto edge = configure_shard(job, *shards[s], s, shards.size());
    if (!edge) return edge.error();
    edges.push_back(std::move(*edge));
    spdlog::info("ps: PS shard {} feeds devices at {}", s, edges.back());
  }
  return edges;
}

}  // namespace cleave
