#pragma once
// The device edge's protocol: every message a device and the ps exchange, as
// frames of the project's channel (actors/transport/frame.hpp). Devices never
// speak CAF's BASP; these frames are all they can send, and each kind has a
// payload cap the channel enforces before it allocates anything
// (edge_payload_cap). Payloads are fixed little-endian fields
// (schema/wire.hpp); decoding checks every length against the frame.
//
//   device -> ps                         ps -> device
//   join       version, profile,         welcome   id, heartbeat interval,
//              token, certificate request          certificate (for a token),
//                                                  [shard edges, job proof]
//   heartbeat  [peak resident bytes]     refused   reason
//   result     tile_codec                task      tile_codec
//   miss       tile_codec                run_over  (empty)
//   leave      (empty)
//
// Model-lets (sparse mode, schema/modellet_codec.hpp), ps -> device and the
// device's answer:
//   ml_place    a range's values, moments, sampling  -> ml_done
//   ml_forward  step, hidden activations, labels     -> ml_scores
//   ml_grads    the logits' gradients                -> ml_hidden_grad
//   ml_update   AdamW step, config, clip scale       -> ml_done
//   ml_copy     (empty)                              -> ml_state
// A device that cannot answer says why in ml_error.
//
// A connection's first frame must be a join; the ps answers welcome or
// refused (and closes). A device that the detector declared dead while it
// kept heartbeating is joined again by the ps under a new id; the device
// does not need to know.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "schema/messages.hpp"
#include "schema/profile.hpp"

namespace cleave {

enum edge_kind : uint16_t {
  edge_join = 1,
  edge_welcome = 2,
  edge_refused = 3,
  edge_heartbeat = 4,
  edge_task = 5,
  edge_result = 6,
  edge_miss = 7,
  edge_run_over = 8,
  edge_leave = 9,
  edge_ml_place = 10,
  edge_ml_forward = 11,
  edge_ml_scores = 12,
  edge_ml_grads = 13,
  edge_ml_hidden_grad = 14,
  edge_ml_update = 15,
  edge_ml_done = 16,
  edge_ml_copy = 17,
  edge_ml_state = 18,
  edge_ml_error = 19,
  // A relay's connection (edge_relay_codec.hpp): its hello, its devices'
  // frames, and the ps's word that it dropped one of them.
  edge_relay_hello = 20,
  edge_routed = 21,
  edge_closed = 22,
};

// Whether a frame of this kind may travel inside a routed frame: a device's
// own kinds, and edge_closed.
bool routable(uint16_t kind);

const char* to_string(edge_kind k);

// The largest payload a frame of `kind` may carry; 0 for kinds that carry
// none, and for unknown kinds (whose frames are refused anyway).
// `max_tile_bytes` caps tasks and results, and the model-let kinds that carry
// tensors (the same cap as tiles: a model-let is sized to travel).
uint64_t edge_payload_cap(uint16_t kind, uint64_t max_tile_bytes);

inline constexpr size_t max_profile_name = 64;
inline constexpr size_t max_token_bytes = 256;
inline constexpr size_t max_reason_bytes = 512;
inline constexpr size_t max_request_bytes = 4096;      // a PEM certificate request
inline constexpr size_t max_certificate_bytes = 8192;  // a PEM certificate
// A welcome from a coordinator over shard processes names every shard's
// device edge ("host:port") and the device's proof for them
// (schema/job_proof.hpp).
inline constexpr size_t max_shard_edges = 64;
inline constexpr size_t max_edge_address_bytes = 128;
inline constexpr size_t max_proof_bytes = 128;
inline constexpr size_t max_relay_name = 64;

struct edge_join_msg {
  uint32_t schema_version = message_schema_version;
  device_profile profile;
  std::string token;  // a one-time join token, when the job uses them
  std::string csr;    // with a token: the request the ps signs (PEM)
};

struct edge_welcome_msg {
  int32_t device = -1;
  double heartbeat_seconds = 0;  // the interval the job's detector expects
  std::string certificate;       // for a device that joined with a token (PEM)
  // Shard processes' edges the device also serves; sent only when there are
  // any (a welcome without them is the v1 welcome, byte for byte).
  std::vector<std::string> shard_edges;
  std::string proof;  // what those edges admit the device by
};

std::vector<char> encode(const edge_join_msg& m);
caf::expected<edge_join_msg> decode_join(const char* data, size_t size);

std::vector<char> encode(const edge_welcome_msg& m);
caf::expected<edge_welcome_msg> decode_welcome(const char* data, size_t size);

// A heartbeat carries the device process's peak resident bytes so far, so
// the ps reports each device's memory beside its own; an empty heartbeat
// (a device that does not say) reads as 0.
inline constexpr size_t heartbeat_payload_bytes = 8;
std::vector<char> encode_heartbeat(uint64_t peak_rss_bytes);
caf::expected<uint64_t> decode_heartbeat(const char* data, size_t size);

// A refusal's reason, cut to max_reason_bytes.
std::vector<char> encode_refusal(const std::string& reason);
caf::expected<std::string> decode_refusal(const char* data, size_t size);

}  // namespace cleave
