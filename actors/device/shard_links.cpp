#include "actors/device/shard_links.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "actors/device/edge_link.hpp"
#include "schema/endpoint.hpp"
#include "schema/errors.hpp"
#include "schema/job_proof.hpp"

namespace cleave {

void shard_edges_slot::put(const edge_welcome_msg& w) {
  if (w.shard_edges.empty()) return;
  std::lock_guard<std::mutex> guard{mu_};
  ready_ = true;
  edges_ = w.shard_edges;
  id_ = w.device;
  proof_ = w.proof;
}

bool shard_edges_slot::take(std::vector<std::string>& edges, int32_t& id, std::string& proof) {
  std::lock_guard<std::mutex> guard{mu_};
  if (!ready_) return false;
  ready_ = false;
  edges = std::move(edges_);
  id = id_;
  proof = std::move(proof_);
  return true;
}

void shard_links::open(const std::vector<std::string>& edges, int32_t id, const std::string& proof) {
  close();
  token_ = job_token(id, proof);
  // The main device serves the ps, whose own products stay on the ps: the
  // shards' devices hold the tiles, and share the declared cache.
  if (!edges.empty() && dopt_.cache_bytes == 0)
    dopt_.cache_bytes = std::max<uint64_t>(1, default_cache_bytes(dopt_.profile.memory_bytes) / edges.size());
  for (size_t s = 0; s < edges.size(); ++s) {
    const auto& at = edges[s];
    const auto endpoint = parse_endpoint(at, "the welcome's edge of PS shard " + std::to_string(s), false);
    if (!endpoint || endpoint->second == 0) {
      spdlog::warn("device: {}; serving the other shards",
                   endpoint ? "the welcome names PS shard " + std::to_string(s) + "'s edge at port 0"
                            : describe(endpoint.error()));
      continue;
    }
    link_slot slot;
    slot.shard = s;
    slot.host = endpoint->first;
    slot.port = endpoint->second;
    links_.push_back(std::move(slot));
    dial(links_.back());
  }
}

void shard_links::dial(link_slot& slot) {
  const auto at = slot.host + ":" + std::to_string(slot.port);
  slot.next_dial = clock::now() + redial_;
  edge_link_options lopt;
  lopt.host = slot.host;
  lopt.port = slot.port;
  lopt.token = token_;
  lopt.channel = channel_;
  auto link = connect_edge(sys_, lopt);
  if (!link) {
    if (!slot.warned)
      spdlog::warn("device: cannot reach PS shard {}'s edge at {} ({}); serving the others, dialling it again "
                   "every {} ms", slot.shard, at, describe(link.error()), redial_.count());
    slot.warned = true;
    return;
  }
  slot.down = std::make_shared<std::atomic<bool>>(false);
  (*link)->attach_functor([down = slot.down] { down->store(true); });
  slot.link = *link;
  slot.device = sys_.spawn(device_actor, dopt_, *link);
  slot.warned = false;
  spdlog::info("device: connected to PS shard {}'s edge at {}", slot.shard, at);
}

void shard_links::tend() {
  for (auto& slot : links_) {
    if (slot.link && slot.down->load()) {
      spdlog::warn("device: the connection to PS shard {}'s edge at {}:{} closed; dialling it again every {} ms",
                   slot.shard, slot.host, slot.port, redial_.count());
      caf::anon_send_exit(slot.device, caf::exit_reason::user_shutdown);
      slot.link = nullptr;
      slot.device = nullptr;
      slot.warned = true;
    }
    if (!slot.link && clock::now() >= slot.next_dial) dial(slot);
  }
}

size_t shard_links::connected() const {
  size_t n = 0;
  for (const auto& slot : links_) n += slot.link && !slot.down->load() ? 1 : 0;
  return n;
}

void shard_links::close() {
  for (auto& slot : links_) {
    if (!slot.link) continue;
    caf::anon_send_exit(slot.device, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(slot.link, caf::exit_reason::user_shutdown);
  }
  links_.clear();
}

}  // namespace cleave
