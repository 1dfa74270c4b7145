// PS shard frames (schema/shard_codec.hpp); the first byte picks the
// decoder. A message that decodes re-encodes to the same bytes, and every
// decoded shape is within the caps, so no decoder accepts a frame its
// sender could not have made or sizes what the frame does not hold.
// A first byte of 0xF0 and above picks a shard's own checkpoint file
// (schema/shard_checkpoint_file.hpp) or the requests that drive it.
#include <vector>

#include "schema/shard_checkpoint_file.hpp"
#include "schema/shard_codec.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace cleave;

namespace {

bool within_caps(const tensor& t) {
  return t.rows() >= 0 && t.cols() >= 0 && t.rows() <= max_shard_dim && t.cols() <= max_shard_dim;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* raw, size_t raw_size) {
  if (raw_size < 1) return 0;
  const auto* data = reinterpret_cast<const char*>(raw + 1);
  const size_t size = raw_size - 1;
  if (raw[0] >= 0xF0) {
    switch (raw[0] % 3) {
      case 0:
        if (auto f = read_shard_checkpoint_bytes(data, size, "fuzz")) {
          FUZZ_CHECK(f->header.shard < f->header.shards && f->header.shards <= max_checkpoint_shards);
          for (const auto& e : f->slices) FUZZ_CHECK(within_caps(e.value) && within_caps(e.adam_m) && within_caps(e.adam_v));
        }
        break;
      case 1:
        if (auto q = decode_shard_restore_request(data, size)) {
          FUZZ_CHECK(q->file.name.find('/') == std::string::npos);
          same_bytes(encode(*q), data, size);
        }
        break;
      default:
        if (auto h = decode_shard_checkpoint_request(data, size)) same_bytes(encode(*h), data, size);
        if (auto f = decode_shard_file_ref(data, size)) same_bytes(encode(*f), data, size);
        break;
    }
    return 0;
  }
  switch (raw[0] % 7) {
    case 0:
      if (auto m = decode_shard_attach(data, size)) {
        for (const auto& e : *m)
          FUZZ_CHECK(e.value.rows() == e.slice_rows() && e.value.cols() == e.slice_cols() && e.begin <= e.end);
        same_bytes(encode_shard_attach(*m), data, size);
      }
      break;
    case 1:
      if (auto m = decode_shard_products(data, size)) {
        std::vector<shard_product_ref> refs;
        for (const auto& p : *m) {
          FUZZ_CHECK(within_caps(p.a) && within_caps(p.b) && within_caps(p.c_in));
          refs.push_back({p.kind, p.weight, p.trans_a, p.trans_b, p.trans_w, p.beta, p.a.view(), p.b.view(),
                          p.c_in.view(), p.layer, p.role});
        }
        same_bytes(encode_shard_products(refs), data, size);
      }
      break;
    case 2:
      if (auto m = decode_shard_tensors(data, size)) {
        std::vector<const_view<float>> views;
        for (const auto& t : *m) {
          FUZZ_CHECK(within_caps(t));
          views.push_back(t.view());
        }
        same_bytes(encode_shard_tensors(views), data, size);
      }
      break;
    case 3:
      if (auto m = decode_shard_update(data, size)) {
        FUZZ_CHECK(size <= small_shard_frame_bytes && m->t >= 1);
        same_bytes(encode(*m), data, size);
      }
      break;
    case 4:
      if (auto v = decode_shard_double(data, size)) same_bytes(encode_shard_double(*v), data, size);
      break;
    case 5:
      if (auto s = decode_shard_stats(data, size)) same_bytes(encode(*s), data, size);
      break;
    default:
      if (auto r = decode_shard_refusal(data, size)) same_bytes(encode_shard_refusal(*r), data, size);
      break;
  }
  return 0;
}
