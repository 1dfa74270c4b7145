#include "actors/device/edge_link.hpp"

#include <atomic>
#include <chrono>

#include <spdlog/spdlog.h>

#include "schema/edge_codec.hpp"
#include "schema/errors.hpp"
#include "schema/messages.hpp"
#include "schema/tile_codec.hpp"
#include "training/process_memory.hpp"

namespace cleave {

using namespace transport;

namespace {

using link_ptr = caf::stateful_actor<edge_link_state>*;
using channel_atom = caf::atom_constant<caf::atom("channel")>;

constexpr const char* refusal_prefix = "the ps refused this device: ";

// The process's peak memory as its heartbeats carry it, read from /proc at
// most once a second however many devices the process runs (a swarm runs
// thousands, each heartbeating).
uint64_t heartbeat_peak_rss() {
  static std::atomic<int64_t> read_at_ns{0};
  static std::atomic<uint64_t> peak{0};
  const int64_t now =
    std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
  int64_t last = read_at_ns.load(std::memory_order_relaxed);
  if ((last == 0 || now - last >= 1'000'000'000) && read_at_ns.compare_exchange_strong(last, now))
    peak.store(peak_rss_bytes(), std::memory_order_relaxed);
  return peak.load(std::memory_order_relaxed);
}

template <class Payload>
void send_frame(link_ptr self, edge_kind kind, Payload payload, uint64_t tag = 0) {
  self->request(self->state.channel, caf::infinite, bulk_send_atom::value, static_cast<uint16_t>(kind),
                tag, std::move(payload))
    .then([](Payload&) {},
          [=](caf::error& err) { spdlog::debug("edge link: send failed: {}", describe(err)); });
}

template <class T>
void send_encoded(link_ptr self, edge_kind kind, const T& msg) {
  bulk_buffer buf(encoded_size(msg));
  encode(msg, buf.payload());
  send_frame(self, kind, std::move(buf));
}

void on_frame(link_ptr self, bulk_frame& f) {
  auto& st = self->state;
  switch (f.kind) {
    case edge_welcome: {
      auto w = decode_welcome(f.payload.data(), f.payload.size());
      if (!w || st.welcomed || !st.joining.pending()) {
        spdlog::warn("edge link: ignoring a welcome: {}", w ? "not asked for" : describe(w.error()));
        return;
      }
      st.welcomed = true;
      spdlog::info("device: joined the fleet as device {}", w->device);
      if (st.opts.welcomed) st.opts.welcomed->store(true);
      if (!w->certificate.empty() && st.opts.on_certificate) st.opts.on_certificate(w->certificate);
      if (st.opts.on_welcome) st.opts.on_welcome(*w);
      // The job's detector expects its own interval, whatever the device was started with.
      self->send(st.device, heartbeat_atom::value, w->heartbeat_seconds);
      st.joining.deliver(welcome_atom::value, w->device, caf::actor{self});
      return;
    }
    case edge_refused: {
      auto reason = decode_refusal(f.payload.data(), f.payload.size());
      const auto why = edge_refusal(reason ? *reason : describe(reason.error()));
      if (st.joining.pending()) st.joining.deliver(why);
      self->quit(why);
      return;
    }
    case edge_task: {
      auto task = decode_task(f.payload.data(), f.payload.size());
      if (!task) {
        spdlog::warn("edge link: refusing a task frame: {}", describe(task.error()));
        return;
      }
      if (st.device) self->send(st.device, std::move(*task));
      return;
    }
    case edge_ml_place:
    case edge_ml_forward:
    case edge_ml_grads:
    case edge_ml_update:
    case edge_ml_copy: {
      // To the device's model-let service; the answer goes back under the
      // request's tag, whose low half names the model-let (its slot).
      if (!st.device) return;
      const uint64_t tag = f.tag;
      self->request(st.device, caf::infinite, modellet_atom::value, static_cast<int32_t>(tag & 0xffffffffu),
                    f.kind, std::move(f.payload), int64_t{0})
        .then([=](uint16_t kind, std::vector<char>& payload) {
                send_frame(self, static_cast<edge_kind>(kind), std::move(payload), tag);
              },
              [=](caf::error& err) { send_frame(self, edge_ml_error, encode_refusal(describe(err)), tag); });
      return;
    }
    case edge_run_over:
      if (!st.device) return self->quit();
      self->request(st.device, std::chrono::seconds(5), run_over_atom::value)
        .then([=](caf::ok_atom) { self->quit(); }, [=](caf::error&) { self->quit(); });
      return;
    default:
      spdlog::warn("edge link: ignoring a frame of kind {}", f.kind);
  }
}

caf::behavior edge_link(link_ptr self, edge_link_options opts) {
  self->state.opts = std::move(opts);
  // Told to stop (the device process is leaving): say so, so the ps knows a
  // departure from a crash, then go once the frame is in the socket.
  self->set_exit_handler([=](const caf::exit_msg& msg) {
    if (!self->state.channel || !self->state.welcomed) return self->quit(msg.reason);
    self->request(self->state.channel, std::chrono::seconds(1), bulk_send_atom::value,
                  static_cast<uint16_t>(edge_leave), uint64_t{0}, std::vector<char>{})
      .then([=](std::vector<char>&) { self->quit(msg.reason); }, [=](caf::error&) { self->quit(msg.reason); });
  });
  return {
    [=](channel_atom, caf::actor channel) {
      self->state.channel = std::move(channel);
      self->link_to(self->state.channel);
    },
    [=](join_atom, const join_request& req) {
      auto& st = self->state;
      st.device = caf::actor_cast<caf::actor>(self->current_sender());
      st.joining = self->make_response_promise();
      st.welcomed = false;
      send_frame(self, edge_join,
                 encode(edge_join_msg{req.schema_version, req.profile, st.opts.token, st.opts.csr}));
      return st.joining;
    },
    [=](heartbeat_atom, int32_t) { send_frame(self, edge_heartbeat, encode_heartbeat(heartbeat_peak_rss())); },
    [=](const tile_result& res) { send_encoded(self, edge_result, res); },
    [=](const tile_miss& miss) { send_encoded(self, edge_miss, miss); },
    [=](bulk_frame_atom, bulk_frame& f) {
      on_frame(self, f);
      return std::move(f.payload);
    },
    [=](bulk_opened_atom, caf::actor, uint64_t, const std::string&) {},
    [=](bulk_peer_atom, uint64_t, const std::string& name, bool) {
      spdlog::debug("edge link: the ps presented the certificate '{}'", name);
    },
    [=](bulk_closed_atom, uint64_t, const std::string& reason) {
      // The channel's TLS refusals name themselves (transport/bulk_io).
      auto why = reason.rfind("TLS", 0) == 0 ? edge_refusal(reason)
                                             : fail("the connection to the ps closed: " + reason);
      if (self->state.joining.pending()) self->state.joining.deliver(why);
      self->quit(why);
    },
  };
}

}  // namespace

caf::error edge_refusal(const std::string& why) { return fail(refusal_prefix + why); }

bool is_edge_refusal(const caf::error& err) { return describe(err).rfind(refusal_prefix, 0) == 0; }

caf::expected<caf::actor> connect_edge(caf::actor_system& sys, edge_link_options opts) {
  const auto host = opts.host;
  const auto port = opts.port;
  auto channel_opts = opts.channel;
  auto link = sys.spawn(edge_link, std::move(opts));
  auto channel = connect_bulk(sys, host, port, link, channel_opts);
  if (!channel) {
    caf::anon_send_exit(link, caf::exit_reason::user_shutdown);
    return channel.error();
  }
  caf::anon_send(link, channel_atom::value, *channel);
  return link;
}

}  // namespace cleave
