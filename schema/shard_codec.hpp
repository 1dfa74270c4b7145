#pragma once
// Frames between a coordinator (`--role=ps --shards=...`) and its
// `--role=ps-shard` processes, over the bulk channel
// (actors/transport/bulk_channel.hpp). Fixed little-endian fields
// (wire.hpp); tensors as rows, cols (i64) and their floats, row-major.
// Every decoder checks each count and shape against its cap and against the
// bytes left before it sizes anything: a frame comes from a socket, so a
// hostile one costs at most its own (already capped) length.
//
// The coordinator sends one request at a time and the shard answers it
// (tag echoed):
//
//   attach      per parameter: axis, decay, full shape, range; value, m, v
//               -> done
//   zero_grads  (empty)                               -> done
//   products    per product: kind, weight, transposes, beta; operands
//               -> tensors (the times_slice outputs, in order)
//   add_grads   tensors, one per slice (0x0: nothing)  -> sum_of_squares
//   update      adamw config, t, grad scale           -> tensors (values)
//   moments     (empty)                               -> tensors (m, v per slice)
//   stats       (empty)                               -> stats (with the device
//               side's counts when the shard feeds devices)
//   fleet       the job's secret, shard index and count, the fleet's
//               options (schema/shard_fleet_codec.hpp) -> fleet_answer
//   part        a piece of a larger request           -> done, or the answer
//   next_part   (empty)                               -> the answer's next part
//   checkpoint  step, set id, shard index and count    -> checkpoint_file
//   restore     the same, the file, the slices' cut   -> done
//   has_checkpoint_dir (empty)                        -> done, or refused
//               (schema/shard_checkpoint_file.hpp: the shard's own files)
//   finish      (empty): the job is over              -> done; the shard
//               exits 0 when the connection closes (a connection that closes
//               without it leaves the shard waiting for a coordinator:
//               actors/ps/shards/coordinator_watch.hpp)
//
// Any request may be answered by `refused` (a reason) instead. Requests and
// answers longer than a frame travel as parts (schema/shard_parts.hpp).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "kernels/ops.hpp"
#include "kernels/tensor.hpp"

namespace cleave {

enum class shard_kind : uint16_t {
  attach = 0x101,
  zero_grads = 0x102,
  products = 0x103,
  add_grads = 0x104,
  update = 0x105,
  moments = 0x106,
  stats = 0x107,
  part = 0x108,  // both ways: a piece of a message longer than a frame
  next_part = 0x109,
  checkpoint = 0x10A,
  restore = 0x10B,  // small, but a cut of many parameters outgrows small_shard_frame_bytes
  has_checkpoint_dir = 0x10C,
  fleet = 0x10D,  // a shard that feeds devices (actors/ps/shards/shard_fleet.hpp)
  finish = 0x10E,  // the coordinator ends the job
  // answers
  done = 0x181,
  tensors = 0x182,
  sum_of_squares = 0x183,
  stats_answer = 0x184,
  refused = 0x185,
  checkpoint_file = 0x186,
  fleet_answer = 0x187,
};

// Caps a decoder enforces (besides the frame's length).
inline constexpr uint32_t max_shard_tensors = 1 << 16;  // per frame
inline constexpr int64_t max_shard_dim = int64_t{1} << 24;  // rows or cols of one tensor
inline constexpr size_t max_refusal_bytes = 1024;
// Requests with a fixed, small body: the channel refuses longer frames of
// these kinds before reading them.
inline constexpr uint64_t small_shard_frame_bytes = 1024;

// The largest payload a frame of `kind` may carry (for bulk_options::max_payload_for_kind).
uint64_t shard_frame_cap(uint16_t kind, uint64_t max_payload);
// Whether a message of `kind` may be longer than a frame and come in parts
// (the kinds that carry tensors).
bool shard_kind_in_parts(uint16_t kind);

struct shard_attach_entry {
  uint8_t axis = 0;  // shard_axis: 0 columns, 1 rows
  bool decay = false;
  int64_t full_rows = 0, full_cols = 0;
  int64_t begin = 0, end = 0;  // the slice's range along its axis
  tensor value, adam_m, adam_v;  // the slice's (rows x cols of the slice)
  int64_t slice_rows() const { return axis == 0 ? full_rows : end - begin; }
  int64_t slice_cols() const { return axis == 0 ? end - begin : full_cols; }
};

std::vector<char> encode_shard_attach(const std::vector<shard_attach_entry>& entries);
caf::expected<std::vector<shard_attach_entry>> decode_shard_attach(const char* data, size_t size);

// One product a shard computes (see actors/ps/shards/shard_split.hpp's slice_product):
//   kind 0 (times_slice): out = beta * c_in + a * op(W_s); c_in only when beta != 0
//   kind 1 (into_grad):   G_s = beta * G_s + op(a) * op(b)
// Each product also carries its gemm_tag's layer and role (after the last
// product, 5 bytes each), so
// that a shard feeding devices plans it as the in-process shard would.
struct shard_product_ref {  // what the coordinator encodes: views, no copies
  uint8_t kind = 0;
  int32_t weight = 0;
  bool trans_a = false, trans_b = false, trans_w = false;
  float beta = 0;
  const_view<float> a, b, c_in;  // b: into_grad; c_in: times_slice with beta != 0
  uint32_t layer = 0;
  uint8_t role = 0;
};
struct shard_product_msg {  // what the shard decodes
  uint8_t kind = 0;
  int32_t weight = 0;
  bool trans_a = false, trans_b = false, trans_w = false;
  float beta = 0;
  tensor a, b, c_in;
  uint32_t layer = 0;
  uint8_t role = 0;
};

std::vector<char> encode_shard_products(const std::vector<shard_product_ref>& products);
caf::expected<std::vector<shard_product_msg>> decode_shard_products(const char* data, size_t size);

// A list of tensors (views are written row by row: strided windows need no copy first).
std::vector<char> encode_shard_tensors(const std::vector<const_view<float>>& tensors);
caf::expected<std::vector<tensor>> decode_shard_tensors(const char* data, size_t size);

struct shard_update_msg {
  adamw_config cfg;
  int64_t t = 0;
  double grad_scale = 1;
};
std::vector<char> encode(const shard_update_msg& m);
caf::expected<shard_update_msg> decode_shard_update(const char* data, size_t size);

std::vector<char> encode_shard_double(double v);
caf::expected<double> decode_shard_double(const char* data, size_t size);

struct shard_stats {
  uint64_t peak_rss_bytes = 0;  // the shard process's VmHWM
  uint64_t bytes_in = 0;        // request payload bytes it received
  uint64_t bytes_out = 0;       // answer payload bytes it sent
  // A shard with a device edge: its engine's counts (runtime_report's shard_report).
  bool devices = false;
  uint64_t tiles = 0, bytes_down = 0, bytes_up = 0, local_gemms = 0;
  double issue_seconds = 0, wait_seconds = 0, egress_seconds = 0, ingress_seconds = 0;
};
std::vector<char> encode(const shard_stats& s);
caf::expected<shard_stats> decode_shard_stats(const char* data, size_t size);

std::vector<char> encode_shard_refusal(const std::string& reason);
caf::expected<std::string> decode_shard_refusal(const char* data, size_t size);

}  // namespace cleave
