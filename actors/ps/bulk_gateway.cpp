#include "actors/ps/bulk_gateway.hpp"

#include <spdlog/spdlog.h>

#include "schema/errors.hpp"
#include "schema/tile_codec.hpp"

namespace cleave {

using namespace transport;

namespace {

// The shard whose engine sent the task (GEMM ids are seq * shards + shard).
const caf::actor* route(const bulk_gateway_state& st, const tile_key& key) {
  if (st.engines.empty()) return nullptr;
  const auto& engine = st.engines[key.gemm % st.engines.size()];
  return engine ? &engine : nullptr;
}

}  // namespace

caf::behavior bulk_gateway(caf::stateful_actor<bulk_gateway_state>* self,
                           transport::admission_key admission) {
  self->state.admission = admission;
  // Closes a connection that did not prove its device.
  auto turn_away = [=](uint64_t conn, const std::string& why) {
    spdlog::warn("bulk: closing connection {}: {}", conn, why);
    if (self->state.channel) self->send(self->state.channel, bulk_closed_atom::value, conn);
  };
  return {
    [=](subscribe_atom, caf::actor engine, uint32_t shard, uint32_t shards) {
      auto& engines = self->state.engines;
      if (shard >= shards) return;
      engines.resize(shards);
      engines[shard] = std::move(engine);
    },
    [=](bulk_opened_atom, caf::actor channel, uint64_t conn, const std::string& peer) {
      self->state.channel = std::move(channel);
      spdlog::debug("bulk: connection {} from {}", conn, peer);
    },
    [=](bulk_closed_atom, uint64_t conn, const std::string& reason) {
      auto& st = self->state;
      if (auto it = st.device_of.find(conn); it != st.device_of.end()) {
        spdlog::info("bulk: device {} disconnected ({})", it->second, reason);
        st.conn_of.erase(it->second);
        st.device_of.erase(it);
      }
    },
    [=](bulk_frame_atom, bulk_frame& f) {
      auto& st = self->state;
      if (f.kind == frame_hello) {
        auto hello = decode_device_hello(f.payload.data(), f.payload.size());
        if (!hello) {
          turn_away(f.conn, describe(hello.error()));
        } else if (!ticket_matches(st.admission, hello->device, hello->ticket)) {
          turn_away(f.conn, "wrong admission ticket for device " + std::to_string(hello->device));
        } else if (auto bound = st.device_of.find(f.conn);
                   bound != st.device_of.end() && bound->second != hello->device) {
          turn_away(f.conn, "a second hello names another device");
        } else {
          // A device that reconnects (its ticket proves it) moves to the new connection.
          if (auto old = st.conn_of.find(hello->device); old != st.conn_of.end() && old->second != f.conn)
            st.device_of.erase(old->second);
          st.conn_of[hello->device] = f.conn;
          st.device_of[f.conn] = hello->device;
        }
      } else if (st.device_of.count(f.conn) == 0) {
        turn_away(f.conn, "frame of kind " + std::to_string(f.kind) + " before a device hello");
      } else if (f.kind == frame_result) {
        auto res = decode_result(f.payload.data(), f.payload.size());
        auto from = st.device_of.find(f.conn);
        if (!res || from == st.device_of.end() || res->device != from->second)
          spdlog::warn("bulk: refusing a result frame from connection {}: {}", f.conn,
                       res ? "device id does not match the connection" : describe(res.error()));
        else if (auto* engine = route(st, res->key))
          self->send(*engine, std::move(*res));
      } else if (f.kind == frame_miss) {
        auto miss = decode_miss(f.payload.data(), f.payload.size());
        auto from = st.device_of.find(f.conn);
        if (miss && from != st.device_of.end() && miss->device == from->second)
          if (auto* engine = route(st, miss->key))
            self->send(*engine, *miss);
      } else {
        spdlog::warn("bulk: unexpected frame kind {} from connection {}", f.kind, f.conn);
      }
      return std::move(f.payload);  // hands the buffer back and returns the credit
    },
    [=](task_atom, int32_t device, const tile_task& task) {
      auto& st = self->state;
      auto it = st.conn_of.find(device);
      if (it == st.conn_of.end() || !st.channel) {
        spdlog::warn("bulk: no connection for device {}; its tile will time out", device);
        return;
      }
      bulk_buffer buf(encoded_size(task));
      encode(task, buf.payload());
      self->request(st.channel, caf::infinite, bulk_send_atom::value, it->second,
                    static_cast<uint16_t>(frame_task), uint64_t{0}, std::move(buf))
        .then([](bulk_buffer&) {},
              [=](caf::error& err) {
                spdlog::warn("bulk: send to device {} failed: {}", device, self->system().render(err));
              });
    },
  };
}

}  // namespace cleave
