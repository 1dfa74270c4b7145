#pragma once
// A device process's links to the shard processes' device edges that its
// welcome named (docs/PS_SHARDS.md). Each is an edge_link of
// its own carrying a device actor of its own (same profile, same GEMM), so a
// shard's tasks are answered on that shard's connection and the shard's
// detector hears the device there. The join carries the welcome's proof
// (schema/job_proof.hpp) in place of a token. A shard that cannot be
// reached, or whose connection closes, costs one warn line: the device
// serves the others and dials that edge again every redial interval (a shard
// process started in place of a lost one listens at the same edge). The
// shards' devices share the operand cache the device declares, evenly.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <caf/all.hpp>

#include "actors/device/block_cache.hpp"
#include "actors/device/device_actor.hpp"
#include "actors/transport/bulk_channel.hpp"
#include "schema/edge_codec.hpp"

namespace cleave {

// Where a welcome hands the shards' edges to the process's main thread
// (the link's actor fills it; the thread that serves the device polls it).
class shard_edges_slot {
 public:
  void put(const edge_welcome_msg& w);
  // The welcome's edges, id and proof once, then nothing until the next put.
  bool take(std::vector<std::string>& edges, int32_t& id, std::string& proof);

 private:
  std::mutex mu_;
  bool ready_ = false;
  std::vector<std::string> edges_;
  int32_t id_ = -1;
  std::string proof_;
};

class shard_links {
 public:
  shard_links(caf::actor_system& sys, device_options dopt, transport::bulk_options channel,
              std::chrono::milliseconds redial = std::chrono::seconds(1))
      : sys_(sys), dopt_(std::move(dopt)), channel_(std::move(channel)), redial_(redial) {}
  ~shard_links() { close(); }
  shard_links(const shard_links&) = delete;
  shard_links& operator=(const shard_links&) = delete;

  // The TLS context of the links dialled from now on (a device that traded
  // its join token for a certificate shows the shards that certificate).
  void use_tls(std::shared_ptr<const transport::tls_context> tls) { channel_.tls = std::move(tls); }
  // Connects to every edge (blocking for each TCP connect, 10 s at most).
  void open(const std::vector<std::string>& edges, int32_t id, const std::string& proof);
  // Dials again the edges whose connection closed or was never made, once
  // per redial interval each; call it from the thread that serves the device.
  void tend();
  // Ends every link and its device actor (the shards hear a leave).
  void close();
  // Edges the welcome named, and how many are connected now.
  size_t size() const { return links_.size(); }
  size_t connected() const;

 private:
  using clock = std::chrono::steady_clock;
  struct link_slot {
    size_t shard = 0;
    std::string host;
    uint16_t port = 0;
    caf::actor link, device;
    std::shared_ptr<std::atomic<bool>> down;  // set when the link's actor ends
    clock::time_point next_dial{};
    bool warned = false;  // one warn line per loss
  };
  void dial(link_slot& slot);

  caf::actor_system& sys_;
  device_options dopt_;
  transport::bulk_options channel_;
  std::chrono::milliseconds redial_;
  std::string token_;
  std::vector<link_slot> links_;
};

}  // namespace cleave
