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

namespace {

using orphan_check_atom = caf::atom_constant<caf::atom("sh_orphan")>;

// The coordinator's connection closed: the job is over, or the shard waits
// for another coordinator until the watch's deadline.
void coordinator_closed(caf::stateful_actor<shard_server_state>* self, uint64_t conn, const std::string& reason) {
  auto& st = self->state;
  switch (st.watch.closed(conn, reason, coordinator_watch::clock::now())) {
    case coordinator_state::finished:
      spdlog::info("ps-shard: the coordinator ended the job");
      self->quit();
      return;
    case coordinator_state::orphaned: {
      st.service.coordinator_lost();
      spdlog::warn("ps-shard: {}; keeping its slices and waiting up to {:g} s for a coordinator to attach "
                   "again (--coordinator-timeout)",
                   st.watch.why(), st.watch.timeout_seconds());
      const auto wait = st.watch.deadline() - coordinator_watch::clock::now();
      self->delayed_send(self, std::chrono::duration_cast<caf::timespan>(wait), orphan_check_atom::value,
                         ++st.orphaned);
      return;
    }
    case coordinator_state::expired:
      spdlog::error("ps-shard: {}", st.watch.why());
      self->quit(fail(st.watch.why()));
      return;
    default:
      return;
  }
}

}  // namespace

caf::behavior shard_server(caf::stateful_actor<shard_server_state>* self, std::string checkpoint_dir,
                           double coordinator_timeout) {
  self->state.service.set_checkpoint_dir(std::move(checkpoint_dir));
  self->state.watch = coordinator_watch{coordinator_timeout};
  return {
    [=](bulk_opened_atom, const caf::actor& channel, uint64_t conn, const std::string& peer) {
      self->state.channel = channel;
      spdlog::info("ps-shard: connection {} from {}", conn, peer);
    },
    [=](bulk_peer_atom, uint64_t, const std::string&, bool) {},
    [=](bulk_frame_atom, bulk_frame& f) -> std::vector<char> {
      auto& st = self->state;
      if (!st.watch.admits(f.conn)) {
        spdlog::warn("ps-shard: connection {} refused: this shard serves the coordinator on connection {}",
                     f.conn, st.watch.coordinator());
        answer(self, f.conn, f.tag,
               {shard_kind::refused, encode_shard_refusal("this shard serves another coordinator")});
        self->send(st.channel, bulk_closed_atom::value, f.conn);
        return std::move(f.payload);
      }
      const bool was_attached = st.service.attached();
      auto a = st.service.handle(f.kind, f.payload.data(), f.payload.size());
      if (a.kind == shard_kind::refused) {
        auto why = decode_shard_refusal(a.payload.data(), a.payload.size());
        spdlog::warn("ps-shard: refused a request (kind {:#x}) from connection {}: {}", f.kind, f.conn,
                     why ? *why : "?");
      } else {
        // An attach (whole, or its last part), a restore or a fleet request makes its connection the coordinator.
        const bool claims = claims_coordinator(f.kind) || (!was_attached && st.service.attached());
        if (claims && st.watch.accepted(f.conn, true))
          spdlog::info(st.watch.coordinators() > 1 ? "ps-shard: a coordinator attached again on connection {}: serving it"
                                                  : "ps-shard: serving the coordinator on connection {}",
                       f.conn);
        if (f.kind == static_cast<uint16_t>(shard_kind::finish)) st.watch.finish(f.conn);
      }
      answer(self, f.conn, f.tag, std::move(a));
      return std::move(f.payload);  // the buffer goes back to the channel for the next read
    },
    [=](bulk_closed_atom, uint64_t conn, const std::string& reason) {
      if (conn == self->state.watch.coordinator() && self->state.watch.state() == coordinator_state::serving) {
        coordinator_closed(self, conn, reason);
        return;
      }
      spdlog::info("ps-shard: connection {} closed: {}", conn, reason);
    },
    [=](orphan_check_atom, uint64_t orphaning) {
      auto& st = self->state;
      if (orphaning != st.orphaned) return;  // a coordinator attached since, and maybe left again
      if (st.watch.tick(coordinator_watch::clock::now()) == coordinator_state::expired) {
        spdlog::error("ps-shard: {}", st.watch.why());
        self->quit(fail(st.watch.why()));
      } else if (st.watch.state() == coordinator_state::orphaned) {  // woken early: wait for the rest
        self->delayed_send(self, std::chrono::milliseconds(100), orphan_check_atom::value, orphaning);
      }
    },
  };
}

caf::behavior shard_server_with_devices(caf::stateful_actor<shard_server_state>* self, shard_devices* devices,
                                        std::string checkpoint_dir, double coordinator_timeout) {
  self->state.service.use_devices(devices);
  return shard_server(self, std::move(checkpoint_dir), coordinator_timeout);
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
