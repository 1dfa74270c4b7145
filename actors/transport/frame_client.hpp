#pragma once
// A blocking request/answer client over one bulk channel connection, for a
// caller that is a plain thread (a PS shard's thread of sharded_ps): call()
// sends a frame and waits for the peer's next frame. The frames arrive at a
// small sink actor that queues them; a closed connection ends every call,
// now and later, with the channel's reason.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include "actors/transport/bulk_channel.hpp"

namespace cleave::transport {

class frame_client {
 public:
  // Connects to host:port (giving up after opts.connect_timeout).
  static caf::expected<std::unique_ptr<frame_client>> connect(caf::actor_system& sys, const std::string& host,
                                                              uint16_t port, bulk_options opts);
  ~frame_client();
  frame_client(const frame_client&) = delete;
  frame_client& operator=(const frame_client&) = delete;

  // Sends (kind, tag, payload) and returns the next frame from the peer, or
  // why none came within `timeout` (the connection closed, or silence).
  caf::expected<bulk_frame> call(uint16_t kind, uint64_t tag, std::vector<char> payload, caf::timespan timeout);
  // Whether the connection is gone (then every call fails at once).
  bool closed() const;
  // Frame bytes (headers included) each way so far.
  uint64_t bytes_sent() const { return bytes_sent_; }
  uint64_t bytes_received() const { return bytes_received_; }

  // What the sink actor shares with the calling thread.
  struct inbox {
    std::mutex mx;
    std::condition_variable cv;
    std::deque<bulk_frame> frames;
    std::string closed;  // non-empty once the connection is gone
  };

 private:
  frame_client(caf::actor_system& sys, caf::actor sink, caf::actor channel, std::shared_ptr<inbox> box);
  caf::actor_system& sys_;
  caf::actor sink_, channel_;
  std::shared_ptr<inbox> box_;
  uint64_t bytes_sent_ = 0, bytes_received_ = 0;
};

}  // namespace cleave::transport
