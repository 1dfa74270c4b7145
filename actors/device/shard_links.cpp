#include "actors/device/shard_links.hpp"

#include <spdlog/spdlog.h>

#include "actors/device/edge_link.hpp"
#include "actors/gateway/job_proof.hpp"
#include "schema/errors.hpp"

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
  for (size_t s = 0; s < edges.size(); ++s) {
    const auto& at = edges[s];
    const auto colon = at.rfind(':');
    int port = -1;
    if (colon != std::string::npos && colon + 1 < at.size() && at.size() - colon <= 6) {
      port = 0;
      for (size_t i = colon + 1; i < at.size() && port >= 0; ++i)
        port = at[i] >= '0' && at[i] <= '9' ? port * 10 + (at[i] - '0') : -1;
    }
    if (colon == std::string::npos || colon == 0 || port <= 0 || port > 65535) {
      spdlog::warn("device: the welcome names PS shard {}'s edge as '{}', not host:port; serving the others", s, at);
      continue;
    }
    edge_link_options lopt;
    lopt.host = at.substr(0, colon);
    lopt.port = static_cast<uint16_t>(port);
    lopt.token = job_token(id, proof);
    lopt.channel = channel_;
    auto link = connect_edge(sys_, lopt);
    if (!link) {
      spdlog::warn("device: cannot reach PS shard {}'s edge at {} ({}); serving the others", s, at,
                   describe(link.error()));
      continue;
    }
    auto device = sys_.spawn(device_actor, dopt_, *link);
    links_.emplace_back(*link, device);
    spdlog::info("device: connected to PS shard {}'s edge at {}", s, at);
  }
}

void shard_links::close() {
  for (auto& [link, device] : links_) {
    caf::anon_send_exit(device, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(link, caf::exit_reason::user_shutdown);
  }
  links_.clear();
}

}  // namespace cleave
