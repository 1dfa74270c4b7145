#include "schema/edge_codec.hpp"

#include <algorithm>

#include "schema/edge_relay_codec.hpp"
#include "schema/errors.hpp"
#include "schema/modellet_codec.hpp"
#include "schema/tile_codec.hpp"
#include "schema/wire.hpp"

namespace cleave {

const char* to_string(edge_kind k) {
  switch (k) {
    case edge_join: return "join";
    case edge_welcome: return "welcome";
    case edge_refused: return "refused";
    case edge_heartbeat: return "heartbeat";
    case edge_task: return "task";
    case edge_result: return "result";
    case edge_miss: return "miss";
    case edge_run_over: return "run_over";
    case edge_leave: return "leave";
    case edge_ml_place: return "ml_place";
    case edge_ml_forward: return "ml_forward";
    case edge_ml_scores: return "ml_scores";
    case edge_ml_grads: return "ml_grads";
    case edge_ml_hidden_grad: return "ml_hidden_grad";
    case edge_ml_update: return "ml_update";
    case edge_ml_done: return "ml_done";
    case edge_ml_copy: return "ml_copy";
    case edge_ml_state: return "ml_state";
    case edge_ml_error: return "ml_error";
    case edge_relay_hello: return "relay_hello";
    case edge_routed: return "routed";
    case edge_closed: return "closed";
  }
  return "unknown";
}

template <class M, class Io>
wire::fields_of<M, device_profile> wire_fields(M& p, Io& io) {
  return io(wire::text(p.name, max_profile_name), p.flops, p.memory_bytes, p.downlink, p.uplink, p.latency);
}

template <class M, class Io>
wire::fields_of<M, edge_join_msg> wire_fields(M& m, Io& io) {
  return io(m.schema_version, m.profile, wire::text(m.token, max_token_bytes), wire::text(m.csr, max_request_bytes));
}

// The shard edges and their proof are a tail the v1 welcome has not.
template <class M, class Io>
wire::fields_of<M, edge_welcome_msg> wire_fields(M& m, Io& io) {
  return io(m.device, m.heartbeat_seconds, wire::text(m.certificate, max_certificate_bytes),
            wire::tail([&m] { return !m.shard_edges.empty(); },
                       wire::texts<uint16_t>(m.shard_edges, max_shard_edges, max_edge_address_bytes),
                       wire::text(m.proof, max_proof_bytes)));
}

namespace {

// The largest message of each kind with texts: every text at its cap.
uint64_t largest_join() {
  edge_join_msg m;
  m.profile.name.assign(max_profile_name, 'x');
  m.token.assign(max_token_bytes, 'x');
  m.csr.assign(max_request_bytes, 'x');
  return wire::size_of(m);
}

uint64_t largest_welcome() {
  edge_welcome_msg m;
  m.certificate.assign(max_certificate_bytes, 'x');
  m.shard_edges.assign(max_shard_edges, std::string(max_edge_address_bytes, 'x'));
  m.proof.assign(max_proof_bytes, 'x');
  return wire::size_of(m);
}

uint64_t largest_relay_hello() {
  edge_relay_hello_msg m;
  m.seat.name.assign(max_relay_name, 'x');
  return encode(m).size();
}

}  // namespace

uint64_t edge_payload_cap(uint16_t kind, uint64_t max_tile_bytes) {
  static const uint64_t join_cap = largest_join(), welcome_cap = largest_welcome();
  switch (kind) {
    case edge_join: return join_cap;
    case edge_welcome: return welcome_cap;
    case edge_refused:
    case edge_ml_error: return wire::max_text_bytes(max_reason_bytes);
    case edge_task:
    case edge_result: return max_tile_bytes;
    case edge_miss: return encoded_size(tile_miss{});
    case edge_ml_place:
    case edge_ml_forward:
    case edge_ml_scores:
    case edge_ml_grads:
    case edge_ml_hidden_grad:
    case edge_ml_state: return max_tile_bytes;
    case edge_ml_update: return encode(ml_update_msg{}).size();
    case edge_ml_done: return encode_ml_done(0).size();
    case edge_heartbeat: return heartbeat_payload_bytes;
    case edge_relay_hello: return largest_relay_hello();
    case edge_closed: return wire::max_text_bytes(max_reason_bytes);
    case edge_routed: {
      uint64_t largest = 0;
      for (uint16_t k = edge_join; k <= edge_closed; ++k)
        if (routable(k)) largest = std::max(largest, edge_payload_cap(k, max_tile_bytes));
      return largest + edge_route_bytes;
    }
    default: return 0;  // run_over, leave and unknown kinds
  }
}

bool routable(uint16_t kind) { return (kind >= edge_join && kind <= edge_ml_error) || kind == edge_closed; }

std::vector<char> encode_heartbeat(uint64_t peak_rss_bytes) { return wire::encode(peak_rss_bytes); }

caf::expected<uint64_t> decode_heartbeat(const char* data, size_t size) {
  uint64_t peak = 0;
  if (size == 0) return peak;
  if (!wire::decode_exact(data, size, peak))
    return fail("heartbeat frame: " + std::to_string(size) + " bytes, expected 0 or " +
                std::to_string(heartbeat_payload_bytes));
  return peak;
}

std::vector<char> encode(const edge_join_msg& m) { return wire::encode(m); }

caf::expected<edge_join_msg> decode_join(const char* data, size_t size) {
  return wire::read_whole<edge_join_msg>(data, size, "join frame");
}

std::vector<char> encode(const edge_welcome_msg& m) { return wire::encode(m); }

caf::expected<edge_welcome_msg> decode_welcome(const char* data, size_t size) {
  auto m = wire::read_whole<edge_welcome_msg>(data, size, "welcome frame");
  if (!m) return m;
  for (const auto& e : m->shard_edges)
    if (e.empty()) return fail("welcome frame: an empty shard edge");
  if (!m->shard_edges.empty() && m->proof.empty()) return fail("welcome frame: a bad job proof");
  if (!(m->heartbeat_seconds > 0 && m->heartbeat_seconds <= 60))
    return fail("welcome frame: heartbeat interval out of range");
  return m;
}

std::vector<char> encode_refusal(const std::string& reason) { return wire::encode(wire::text(reason, max_reason_bytes)); }

caf::expected<std::string> decode_refusal(const char* data, size_t size) {
  std::string reason;
  if (!wire::decode_exact(data, size, wire::text(reason, max_reason_bytes))) return fail("refused frame: malformed");
  return reason;
}

}  // namespace cleave
