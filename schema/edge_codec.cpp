#include "schema/edge_codec.hpp"

#include <algorithm>

#include "schema/byte_io.hpp"
#include "schema/errors.hpp"

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
  }
  return "unknown";
}

namespace {

constexpr size_t profile_fixed_bytes = 8 + 8 + 8 + 8 + 8;
constexpr size_t join_fixed_bytes = 4 + 2 + profile_fixed_bytes + 2 + 2;
constexpr size_t welcome_fixed_bytes = 4 + 8 + 2;

}  // namespace

uint64_t edge_payload_cap(uint16_t kind, uint64_t max_tile_bytes) {
  switch (kind) {
    case edge_join: return join_fixed_bytes + max_profile_name + max_token_bytes + max_request_bytes;
    case edge_welcome:
      return welcome_fixed_bytes + max_certificate_bytes + 2 + max_shard_edges * (2 + max_edge_address_bytes) + 2
             + max_proof_bytes;
    case edge_refused: return 2 + max_reason_bytes;
    case edge_task:
    case edge_result: return max_tile_bytes;
    case edge_miss: return 8 + 4 + 4 + 4 + 8;
    case edge_ml_place:
    case edge_ml_forward:
    case edge_ml_scores:
    case edge_ml_grads:
    case edge_ml_hidden_grad:
    case edge_ml_state: return max_tile_bytes;
    case edge_ml_update: return ml_update_bytes;
    case edge_ml_done: return 8;
    case edge_ml_error: return 2 + max_reason_bytes;
    default: return 0;  // heartbeat, run_over, leave and unknown kinds
  }
}

std::vector<char> encode(const edge_join_msg& m) {
  const std::string name = m.profile.name.substr(0, max_profile_name);
  const std::string token = m.token.substr(0, max_token_bytes);
  const std::string csr = m.csr.substr(0, max_request_bytes);
  std::vector<char> out(join_fixed_bytes + name.size() + token.size() + csr.size());
  byte_writer w(out.data());
  w.put(m.schema_version);
  w.text(name);
  w.put(m.profile.flops);
  w.put(m.profile.memory_bytes);
  w.put(m.profile.downlink);
  w.put(m.profile.uplink);
  w.put(m.profile.latency);
  w.text(token);
  w.text(csr);
  return out;
}

caf::expected<edge_join_msg> decode_join(const char* data, size_t size) {
  byte_reader r(data, size);
  edge_join_msg m;
  auto& p = m.profile;
  if (!(r.get(m.schema_version) && r.text(p.name, max_profile_name) && r.get(p.flops)
        && r.get(p.memory_bytes) && r.get(p.downlink) && r.get(p.uplink) && r.get(p.latency)
        && r.text(m.token, max_token_bytes) && r.text(m.csr, max_request_bytes)))
    return fail("join frame: truncated, or a name, token or request over its cap");
  if (r.left() != 0) return fail("join frame: " + std::to_string(r.left()) + " trailing bytes");
  return m;
}

std::vector<char> encode(const edge_welcome_msg& m) {
  const std::string cert = m.certificate.substr(0, max_certificate_bytes);
  const size_t edges = std::min(m.shard_edges.size(), max_shard_edges);
  size_t bytes = welcome_fixed_bytes + cert.size();
  std::vector<std::string> cut;
  for (size_t i = 0; i < edges; ++i) cut.push_back(m.shard_edges[i].substr(0, max_edge_address_bytes));
  const std::string proof = m.proof.substr(0, max_proof_bytes);
  if (edges > 0) {
    bytes += 2 + 2 + proof.size();
    for (const auto& e : cut) bytes += 2 + e.size();
  }
  std::vector<char> out(bytes);
  byte_writer w(out.data());
  w.put(m.device);
  w.put(m.heartbeat_seconds);
  w.text(cert);
  if (edges > 0) {
    w.put(static_cast<uint16_t>(edges));
    for (const auto& e : cut) w.text(e);
    w.text(proof);
  }
  return out;
}

caf::expected<edge_welcome_msg> decode_welcome(const char* data, size_t size) {
  byte_reader r(data, size);
  edge_welcome_msg m;
  if (!(r.get(m.device) && r.get(m.heartbeat_seconds) && r.text(m.certificate, max_certificate_bytes)))
    return fail("welcome frame: malformed");
  if (r.left() > 0) {
    uint16_t edges = 0;
    if (!r.get(edges) || edges == 0 || edges > max_shard_edges) return fail("welcome frame: a bad count of shard edges");
    m.shard_edges.resize(edges);
    for (auto& e : m.shard_edges)
      if (!r.text(e, max_edge_address_bytes) || e.empty()) return fail("welcome frame: a shard edge over its cap");
    if (!r.text(m.proof, max_proof_bytes) || m.proof.empty()) return fail("welcome frame: a bad job proof");
  }
  if (r.left() != 0) return fail("welcome frame: malformed");
  if (!(m.heartbeat_seconds > 0 && m.heartbeat_seconds <= 60))
    return fail("welcome frame: heartbeat interval out of range");
  return m;
}

std::vector<char> encode_refusal(const std::string& reason) {
  const std::string cut = reason.substr(0, max_reason_bytes);
  std::vector<char> out(2 + cut.size());
  byte_writer w(out.data());
  w.text(cut);
  return out;
}

caf::expected<std::string> decode_refusal(const char* data, size_t size) {
  byte_reader r(data, size);
  std::string reason;
  if (!r.text(reason, max_reason_bytes) || r.left() != 0) return fail("refused frame: malformed");
  return reason;
}

}  // namespace cleave
