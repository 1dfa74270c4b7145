#include "actors/ps/shards/shard_server.hpp"

#include <spdlog/spdlog.h>

#include "schema/errors.hpp"

namespace cleave {

using namespace transport;

namespace {

void answer(caf::stateful_actor<shard_server_state>* self, uint64_t conn, uint64_t tag, shard_answer a) {
  const bool refusal = a.kind == shard_kind::refused;
  self->request(self->state.channel, caf::infinite, bulk_send_atom::value, conn,
                static_cast<uint16_t>(a.kind), tag, std::move(a.payload))
    .then([](std::vector<char>&) {},
          [=](caf::error& err) {
            const std::string why = "cannot send the answer: " + describe(err);
            spdlog::warn("ps-shard: connection {}: {}", conn, why);
            // An answer over the coordinator's cap: it hears why instead of waiting.
            if (!refusal) answer(self, conn, tag, {shard_kind::refused, encode_shard_refusal(why)});
          });
}

}  // namespace

caf::behavior shard_server(caf::stateful_actor<shard_server_state>* self, std::string checkpoint_dir) {
  self->state.service.set_checkpoint_dir(std::move(checkpoint_dir));
  return {
    [=](bulk_opened_atom, const caf::actor& channel, uint64_t conn, const std::string& peer) {
      self->state.channel = channel;
      spdlog::info("ps-shard: connection {} from {}", conn, peer);
    },
    [=](bulk_peer_atom, uint64_t, const std::string&) {},
    [=](bulk_frame_atom, bulk_frame& f) -> std::vector<char> {
      auto& st = self->state;
      if (st.has_coordinator && f.conn != st.coordinator) {
        spdlog::warn("ps-shard: connection {} refused: this shard serves the coordinator on connection {}",
                     f.conn, st.coordinator);
        answer(self, f.conn, f.tag,
               {shard_kind::refused, encode_shard_refusal("this shard serves another coordinator")});
        self->send(st.channel, bulk_closed_atom::value, f.conn);
        return std::move(f.payload);
      }
      auto a = st.service.handle(f.kind, f.payload.data(), f.payload.size());
      // The first connection whose attach (or fleet request) is accepted is the coordinator.
      if (!st.has_coordinator && (st.service.attached() || st.service.fleet_configured())) {
        st.has_coordinator = true;
        st.coordinator = f.conn;
      }
      if (a.kind == shard_kind::refused) {
        auto why = decode_shard_refusal(a.payload.data(), a.payload.size());
        spdlog::warn("ps-shard: refused a request (kind {:#x}) from connection {}: {}", f.kind, f.conn,
                     why ? *why : "?");
      }
      answer(self, f.conn, f.tag, std::move(a));
      return std::move(f.payload);  // the buffer goes back to the channel for the next read
    },
    [=](bulk_closed_atom, uint64_t conn, const std::string& reason) {
      auto& st = self->state;
      if (st.has_coordinator && conn == st.coordinator) {
        spdlog::info("ps-shard: the coordinator left ({})", reason);
        self->quit();
        return;
      }
      spdlog::info("ps-shard: connection {} closed: {}", conn, reason);
    },
  };
}

caf::behavior shard_server_with_devices(caf::stateful_actor<shard_server_state>* self, shard_devices* devices,
                                        std::string checkpoint_dir) {
  self->state.service.use_devices(devices);
  return shard_server(self, std::move(checkpoint_dir));
}

bulk_options shard_channel_options(const std::string& bind_address) {
  bulk_options opts;
  opts.bind_address = bind_address;
  opts.max_connections = 8;
  opts.max_payload_for_kind = [max = opts.max_payload](uint16_t kind) { return shard_frame_cap(kind, max); };
  // A coordinator is silent while it runs the row-wise ops, not inside a frame.
  opts.stall_timeout = std::chrono::seconds(60);
  return opts;
}

}  // namespace cleave
