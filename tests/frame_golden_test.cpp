// Golden bytes: every frame kind a Cleave process puts on a socket or in a
// shard checkpoint, encoded from a fixed value and compared with the bytes
// recorded from the hand-written codecs (commit "frame_golden_test"), so a
// change to how the codecs are written cannot change what they write. Each
// golden frame is also decoded and encoded again: decode keeps every field
// the encoder writes.

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

#include <gtest/gtest.h>

#include "actors/transport/frame.hpp"
#include "schema/edge_codec.hpp"
#include "schema/edge_relay_codec.hpp"
#include "schema/errors.hpp"
#include "schema/modellet_codec.hpp"
#include "schema/shard_checkpoint_file.hpp"
#include "schema/shard_codec.hpp"
#include "schema/shard_fleet_codec.hpp"
#include "schema/shard_parts.hpp"
#include "schema/tile_codec.hpp"
#include "schema/wire_precision.hpp"

using namespace cleave;

namespace {

std::string hex(const char* data, size_t size) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < size; ++i) {
    const auto b = static_cast<unsigned char>(data[i]);
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}
std::string hex(const std::vector<char>& v) { return hex(v.data(), v.size()); }

std::vector<char> bytes_of(const std::string& h) {
  std::vector<char> out;
  if (h.size() % 2 != 0 || h.find_first_not_of("0123456789abcdef") != std::string::npos) {
    ADD_FAILURE() << "not hex: " << h;
    return out;
  }
  for (size_t i = 0; i < h.size(); i += 2) out.push_back(static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16)));
  return out;
}

// Decodes the golden bytes and encodes the value again: the same bytes.
template <class Decode, class Encode>
void round_trips(const std::string& golden, Decode decode, Encode encode) {
  const auto bytes = bytes_of(golden);
  auto back = decode(bytes.data(), bytes.size());
  ASSERT_TRUE(back) << describe(back.error());
  EXPECT_EQ(hex(encode(*back)), golden);
}

tensor counting(int64_t rows, int64_t cols, float first) {
  tensor t(rows, cols);
  for (int64_t i = 0; i < t.size(); ++i) t[i] = first + 0.5f * static_cast<float>(i);
  return t;
}

std::vector<char> to_bytes(const tile_task& t) {
  std::vector<char> out(encoded_size(t));
  encode(t, out.data());
  return out;
}
std::vector<char> to_bytes(const tile_result& r) {
  std::vector<char> out(encoded_size(r));
  encode(r, out.data());
  return out;
}
std::vector<char> to_bytes(const tile_miss& m) {
  std::vector<char> out(encoded_size(m));
  encode(m, out.data());
  return out;
}

std::vector<const_view<float>> views(const std::vector<tensor>& ts) {
  std::vector<const_view<float>> out;
  for (const auto& t : ts) out.push_back(t.view());
  return out;
}

}  // namespace

// ------------------------------------------------------------ the bulk channel

TEST(frame_golden, transport_header_and_hello) {
  const std::string header = "434c5646010003010c000000000000002a00000000000000";
  auto h = transport::encode_header({0x103, 12, 42});
  EXPECT_EQ(hex(h.data(), h.size()), header);
  round_trips(header, [](const char* d, size_t n) { return transport::decode_header(d, n, 1 << 20); },
              [](const transport::frame_header& x) { auto b = transport::encode_header(x); return std::vector<char>(b.begin(), b.end()); });

  const std::string hello = "00001000000000000000000001000000";
  auto b = transport::encode_hello({1 << 20, uint64_t{1} << 32});
  EXPECT_EQ(hex(b.data(), b.size()), hello);
  round_trips(hello, transport::decode_hello,
              [](const transport::hello& x) { auto b = transport::encode_hello(x); return std::vector<char>(b.begin(), b.end()); });
}

// ------------------------------------------------------------ the device edge

TEST(frame_golden, edge_join_welcome_refusal) {
  edge_join_msg j;
  j.schema_version = 8;
  j.profile = {"phone", 2e9, 1 << 30, 1e6, 5e5, 0.02};
  j.token = "tok";
  j.csr = "csr";
  const std::string join = "08000000050070686f6e650000000065cddd4100000040000000000000000080842e410000000080841e417b14ae47e17a943f0300746f6b0300637372";
  EXPECT_EQ(hex(encode(j)), join);
  round_trips(join, decode_join, [](const edge_join_msg& m) { return encode(m); });

  // A relay's hello: the schema version, then its name, store and links.
  const std::string relay_hello = "08000000" "02007231" "0000100000000000" "000000000000f03f" "0000000000000040" +
                                  std::string{"0000000000001040"} + "000000000000e03f";
  EXPECT_EQ(hex(encode(edge_relay_hello_msg{8, relay_seat{"r1", 1 << 20, 1.0, 2.0, 4.0, 0.5}})), relay_hello);
  round_trips(relay_hello, decode_relay_hello, [](const edge_relay_hello_msg& m) { return encode(m); });

  // A routed frame's payload: the device's frame's own, then its route.
  std::vector<char> routed{'a', 'b'};
  append_route(routed, {0x01020304u, edge_result, 0x0a0b0c0d0e0f1011ull});
  EXPECT_EQ(hex(routed), "6162" "04030201" "0600" "0000" "11100f0e0d0c0b0a");

  const std::string welcome_v1 = "07000000000000000000d03f040063657274";
  EXPECT_EQ(hex(encode(edge_welcome_msg{7, 0.25, "cert", {}, ""})), welcome_v1);
  round_trips(welcome_v1, decode_welcome, [](const edge_welcome_msg& m) { return encode(m); });

  const std::string welcome = "07000000000000000000d03f000002000300613a31050062623a3232050070726f6f66";
  EXPECT_EQ(hex(encode(edge_welcome_msg{7, 0.25, "", {"a:1", "bb:22"}, "proof"})), welcome);
  round_trips(welcome, decode_welcome, [](const edge_welcome_msg& m) { return encode(m); });

  const std::string refusal = "02006e6f";
  EXPECT_EQ(hex(encode_refusal("no")), refusal);
  round_trips(refusal, decode_refusal, [](const std::string& r) { return encode_refusal(r); });

  // A heartbeat says the device process's peak memory (here 3 GiB), little-endian.
  const std::string heartbeat = "000000c000000000";
  EXPECT_EQ(hex(encode_heartbeat(uint64_t{3} << 30)), heartbeat);
  round_trips(heartbeat, decode_heartbeat, [](uint64_t peak) { return encode_heartbeat(peak); });
}

// Schema version 9 put the wire's precision (--wire) into tile frames: a
// byte after the task's key and before the result's values.
TEST(frame_golden, tile_task_result_miss) {
  tile_task t;
  t.key = {3, 1, 2};
  t.a = {11, 2, 2, true, {1, 2, 3, 4}};
  t.b.key = 12;  // cached at the device: no values
  t.b.rows = 2;
  t.b.cols = 1;
  const std::string task = "03000000000000000100000002000000000b000000000000000200000000000000020000000000000001010000803f0000004000004040000080400c00000000000000020000000000000001000000000000000000";
  EXPECT_EQ(hex(to_bytes(t)), task);
  round_trips(task, decode_task, [](const tile_task& x) { return to_bytes(x); });

  // A window of a shared snapshot goes out as the block's values.
  tile_task w = t;
  w.a.data.clear();
  w.a.shared = std::make_shared<const std::vector<float>>(std::vector<float>{0, 1, 2, 0, 3, 4});
  w.a.offset = 1;
  w.a.ld = 3;
  EXPECT_EQ(hex(to_bytes(w)), task);

  tile_result r;
  r.key = {3, 1, 2};
  r.device = 5;
  r.rows = 1;
  r.cols = 2;
  r.data = {0.5f, -2};
  r.busy_seconds = 0.125;
  r.cache_hits = 1;
  const std::string result = "03000000000000000100000002000000050000000100000001000000000000000200000000000000000000000000c03f000000003f000000c0";
  EXPECT_EQ(hex(to_bytes(r)), result);
  round_trips(result, decode_result, [](const tile_result& x) { return to_bytes(x); });

  // bf16: the same frames with precision 1 and each value's upper 16 bits.
  tile_task tb = t;
  tb.wire = wire_precision::bf16;
  const std::string task_bf16 = "03000000000000000100000002000000010b00000000000000020000000000000002000000000000000101803f004040408040"
                                "0c00000000000000020000000000000001000000000000000000";
  EXPECT_EQ(hex(to_bytes(tb)), task_bf16);
  round_trips(task_bf16, decode_task, [](const tile_task& x) { return to_bytes(x); });
  tile_result rb = r;
  rb.wire = wire_precision::bf16;
  const std::string result_bf16 = "03000000000000000100000002000000050000000100000001000000000000000200000000000000000000000000c03f01003f00c0";
  EXPECT_EQ(hex(to_bytes(rb)), result_bf16);
  round_trips(result_bf16, decode_result, [](const tile_result& x) { return to_bytes(x); });
  // bf16-operands: bf16's task frame with precision 2; its results are fp32's (above).
  tile_task to = t;
  to.wire = wire_precision::bf16_operands;
  const std::string task_bf16_operands = "03000000000000000100000002000000020b00000000000000020000000000000002000000000000000101803f004040408040"
                                         "0c00000000000000020000000000000001000000000000000000";
  EXPECT_EQ(hex(to_bytes(to)), task_bf16_operands);
  round_trips(task_bf16_operands, decode_task, [](const tile_task& x) { return to_bytes(x); });
  // A bf16 value not exactly a bf16 goes out rounded to nearest, ties to even.
  rb.data = {1.0f + 0x1p-8f, 1.0f + 0x1p-7f + 0x1p-8f};
  auto rounded = decode_result(to_bytes(rb).data(), to_bytes(rb).size());
  ASSERT_TRUE(rounded);
  EXPECT_EQ(rounded->data, (std::vector<float>{1.0f, 1.0f + 0x1p-6f}));

  const std::string miss = "03000000000000000100000002000000050000006300000000000000";
  EXPECT_EQ(hex(to_bytes(tile_miss{{3, 1, 2}, 5, 99})), miss);
  round_trips(miss, decode_miss, [](const tile_miss& x) { return to_bytes(x); });
}

TEST(frame_golden, tile_frames_refuse_an_unknown_precision_and_values_short_of_it) {
  // A precision byte other than 0, 1 or 2 (a result's: 0 or 1) says nothing
  // of how long the values are: refused before a value is read.
  auto task = bytes_of("03000000000000000100000002000000030b00000000000000020000000000000002000000000000000101803f004040408040"
                       "0c00000000000000020000000000000001000000000000000000");
  auto refused_task = decode_task(task.data(), task.size());
  ASSERT_FALSE(refused_task);
  EXPECT_NE(describe(refused_task.error()).find("unknown wire precision 3"), std::string::npos)
    << describe(refused_task.error());
  auto result = bytes_of("03000000000000000100000002000000050000000100000001000000000000000200000000000000000000000000c03f02003f00c0");
  auto refused = decode_result(result.data(), result.size());
  ASSERT_FALSE(refused);
  EXPECT_NE(describe(refused.error()).find("unknown wire precision 2"), std::string::npos) << describe(refused.error());
  // bf16 says 2 bytes a value: fp32's 4 are trailing bytes, one short is truncated.
  auto as_fp32 = bytes_of("03000000000000000100000002000000050000000100000001000000000000000200000000000000000000000000c03f010000003f000000c0");
  EXPECT_FALSE(decode_result(as_fp32.data(), as_fp32.size()));
  auto short_one = bytes_of("03000000000000000100000002000000050000000100000001000000000000000200000000000000000000000000c03f01003f00");
  EXPECT_FALSE(decode_result(short_one.data(), short_one.size()));
  // A result claiming 2^27 bf16 values in a frame that holds two is refused before it is sized.
  auto huge = bytes_of("03000000000000000100000002000000050000000100000000400000000000000020000000000000000000000000c03f01003f00c0");
  EXPECT_FALSE(decode_result(huge.data(), huge.size()));
}

TEST(frame_golden, modellet_frames) {
  ml_place_msg p;
  p.sampling.lsh = {lsh_family::simhash, 4, 3, 8, 2, 77};
  p.sampling.bucket_size = 16;
  p.sampling.policy = bucket_policy::reservoir;
  p.sampling.schedule = {5, 40, 1.5};
  p.sampling.min_active = 2;
  p.sampling.seed = 9;
  auto& s = p.state;
  s.begin = 4;
  s.end = 6;
  s.hidden = 2;
  s.step = 3;
  s.w = counting(2, 2, 1);
  s.b = counting(2, 1, -1);
  s.m_w = counting(2, 2, 0);
  s.v_w = counting(2, 2, 0.25f);
  s.m_b = counting(2, 1, 2);
  s.v_b = counting(2, 1, 4);
  const std::string place = "00040000000300000008000000020000004d00000000000000100000000105000000000000002800000000000000000000000000f83f0200000009000000000000000400000006000000020000000000000003000000000000000000803f0000c03f0000004000002040000080bf000000bf000000000000003f0000803f0000c03f0000803e0000403f0000a03f0000e03f00000040000020400000804000009040";
  EXPECT_EQ(hex(encode(p)), place);
  round_trips(place, decode_ml_place, [](const ml_place_msg& m) { return encode(m); });

  const std::string state = "0400000006000000020000000000000003000000000000000000803f0000c03f0000004000002040000080bf000000bf000000000000003f0000803f0000c03f0000803e0000403f0000a03f0000e03f00000040000020400000804000009040";
  EXPECT_EQ(hex(encode_ml_state(s)), state);
  round_trips(state, decode_ml_state, [](const modellet_state& m) { return encode_ml_state(m); });

  const tensor h = counting(2, 3, 0);
  const std::vector<int64_t> offs = {0, 2, 3};
  const std::vector<int32_t> ids = {5, 12, 29};
  const std::string forward = "04000000000000000200000003000000000000000000003f0000803f0000c03f00000040000020400100000001000000020000000c0000001d000000";
  EXPECT_EQ(hex(encode_ml_forward(4, h, {offs.data(), ids.data(), 2}, 10, 30)), forward);
  round_trips(forward, decode_ml_forward, [](const ml_forward_msg& m) {
    return encode_ml_forward(m.step, m.h, m.labels(), 0, 1 << 30);
  });

  modellet_scores sc;
  sc.offsets = {0, 2, 2, 3};
  sc.ids = {11, 300, 7};
  sc.logits = {0.5f, -1, 2};
  sc.stats = {{0.5, 1.25}, {-1, 0}, {2, 3}};
  const std::string scores = "03000000020000000000000001000000040000000ba002070000003f000080bf00000040000000000000e03f000000000000f43f000000000000f0bf000000000000000000000000000000400000000000000840";
  EXPECT_EQ(hex(encode(sc)), scores);
  round_trips(scores, decode_ml_scores, [](const modellet_scores& m) { return encode(m); });

  const std::string grads = "020000000000003f000080be";
  EXPECT_EQ(hex(encode_ml_grads({0.5f, -0.25f})), grads);
  round_trips(grads, decode_ml_grads, [](const std::vector<float>& v) { return encode_ml_grads(v); });

  const std::string hidden_grad = "01000000020000000000803f0000c03f0000000000000440";
  EXPECT_EQ(hex(encode(ml_hidden_grad_msg{counting(1, 2, 1), 2.5})), hidden_grad);
  round_trips(hidden_grad, decode_ml_hidden_grad, [](const ml_hidden_grad_msg& m) { return encode(m); });

  ml_update_msg u;
  u.t = 3;
  u.cfg = {0.01, 0.9, 0.99, 1e-6, 0.1, 2};
  u.grad_scale = 0.5;
  const std::string update = "03000000000000007b14ae47e17a843fcdccccccccccec3fae47e17a14aeef3f8dedb5a0f7c6b03e9a9999999999b93f0000000000000040000000000000e03f";
  EXPECT_EQ(hex(encode(u)), update);
  round_trips(update, decode_ml_update, [](const ml_update_msg& m) { return encode(m); });

  const std::string done = "feffffffffffffff";
  EXPECT_EQ(hex(encode_ml_done(-2)), done);
  round_trips(done, decode_ml_done, [](int64_t v) { return encode_ml_done(v); });
}

// ------------------------------------------------------------ PS shard processes

TEST(frame_golden, shard_frames) {
  std::vector<shard_attach_entry> entries(2);
  entries[0] = {0, true, 2, 4, 1, 3, counting(2, 2, 1), counting(2, 2, 2), counting(2, 2, 3)};
  entries[1] = {1, false, 3, 1, 0, 1, counting(1, 1, 4), counting(1, 1, 5), counting(1, 1, 6)};
  const std::string attach = "0200000000010200000000000000040000000000000001000000000000000300000000000000020000000000000002000000000000000000803f0000c03f000000400000204002000000000000000200000000000000000000400000204000004040000060400200000000000000020000000000000000004040000060400000804000009040010003000000000000000100000000000000000000000000000001000000000000000100000000000000010000000000000000008040010000000000000001000000000000000000a040010000000000000001000000000000000000c040";
  EXPECT_EQ(hex(encode_shard_attach(entries)), attach);
  round_trips(attach, decode_shard_attach, [](const std::vector<shard_attach_entry>& e) { return encode_shard_attach(e); });

  const tensor a = counting(1, 2, 1), b = counting(2, 1, 2), c = counting(1, 1, 3);
  std::vector<shard_product_ref> refs(2);
  refs[0] = {0, 3, true, false, true, 0.5f, a.view(), {}, c.view(), 2, 1};
  refs[1] = {1, 0, false, true, false, 0, a.view(), b.view(), {}, 7, 5};
  const std::string products = "020000000003000000050000003f02010000000000000002000000000000000000803f0000c03f01000000000000000100000000000000000040400100000000020000000001010000000000000002000000000000000000803f0000c03f02000000000000000100000000000000000000400000204002000000010700000005";
  EXPECT_EQ(hex(encode_shard_products(refs)), products);
  round_trips(products, decode_shard_products, [](const std::vector<shard_product_msg>& ps) {
    std::vector<shard_product_ref> out;
    for (const auto& p : ps)
      out.push_back({p.kind, p.weight, p.trans_a, p.trans_b, p.trans_w, p.beta, p.a.view(), p.b.view(), p.c_in.view(),
                     p.layer, p.role});
    return encode_shard_products(out);
  });

  const std::vector<tensor> ts = {counting(1, 2, 1), tensor(0, 0)};
  const std::string tensors = "02000000010000000000000002000000000000000000803f0000c03f00000000000000000000000000000000";
  EXPECT_EQ(hex(encode_shard_tensors(views(ts))), tensors);
  round_trips(tensors, decode_shard_tensors, [](const std::vector<tensor>& t) { return encode_shard_tensors(views(t)); });

  shard_update_msg u;
  u.cfg = {0.01, 0.9, 0.99, 1e-6, 0.1, 2};
  u.t = 4;
  u.grad_scale = 0.75;
  const std::string update = "7b14ae47e17a843fcdccccccccccec3fae47e17a14aeef3f8dedb5a0f7c6b03e9a9999999999b93f00000000000000400400000000000000000000000000e83f";
  EXPECT_EQ(hex(encode(u)), update);
  round_trips(update, decode_shard_update, [](const shard_update_msg& m) { return encode(m); });

  const std::string sum = "0000000000001a40";
  EXPECT_EQ(hex(encode_shard_double(6.5)), sum);
  round_trips(sum, decode_shard_double, [](double v) { return encode_shard_double(v); });

  shard_stats st;
  st.peak_rss_bytes = 1000;
  st.bytes_in = 20;
  st.bytes_out = 30;
  const std::string stats_bare = "e80300000000000014000000000000001e00000000000000";
  EXPECT_EQ(hex(encode(st)), stats_bare);
  round_trips(stats_bare, decode_shard_stats, [](const shard_stats& m) { return encode(m); });
  st.devices = true;
  st.tiles = 4;
  st.bytes_down = 5;
  st.bytes_up = 6;
  st.local_gemms = 7;
  st.issue_seconds = 0.5;
  st.wait_seconds = 1.5;
  st.egress_seconds = 2.5;
  st.ingress_seconds = 3.5;
  const std::string stats_devices = "e80300000000000014000000000000001e000000000000000400000000000000050000000000000006000000000000000700000000000000000000000000e03f000000000000f83f00000000000004400000000000000c40";
  EXPECT_EQ(hex(encode(st)), stats_devices);
  round_trips(stats_devices, decode_shard_stats, [](const shard_stats& m) { return encode(m); });

  const std::string refused = "040062757379";
  EXPECT_EQ(hex(encode_shard_refusal("busy")), refused);
  round_trips(refused, decode_shard_refusal, [](const std::string& r) { return encode_shard_refusal(r); });

  const std::vector<char> whole = {'a', 'b', 'c', 'd', 'e'};
  const std::string part = "0301050000000000000002000000000000006364";
  EXPECT_EQ(hex(encode_shard_part(0x103, whole, 2, 2)), part);
  const auto pb = bytes_of(part);
  auto back = decode_shard_part(pb.data(), pb.size());
  ASSERT_TRUE(back) << describe(back.error());
  EXPECT_EQ(back->kind, 0x103);
  EXPECT_EQ(back->total, 5u);
  EXPECT_EQ(back->offset, 2u);
  EXPECT_EQ(std::string(back->data, back->size), "cd");
}

TEST(frame_golden, shard_fleet_and_edge) {
  shard_fleet_msg m;
  m.shard = 1;
  m.shards = 2;
  m.min_devices = 3;
  m.ps_flops = 1e9;
  m.ps_egress = 1e8;
  m.ps_ingress = 2e8;
  m.replicate = 0.5;
  m.ps_tile_seconds = 0.25;
  m.max_tiles_per_device = 5;
  m.quarantine_after = 6;
  m.trust_results = true;
  m.secret = std::string(32, 's');
  const std::string fleet = "0100000002000000030000000000000065cdcd410000000084d797410000000084d7a7419a9999999999b93f000000000000084000000000000020400000000000003e400000000000000840000000000000e03f000000000000d03f05000000060000000120007373737373737373737373737373737373737373737373737373737373737373";
  EXPECT_EQ(hex(encode(m)), fleet);
  round_trips(fleet, decode_shard_fleet, [](const shard_fleet_msg& x) { return encode(x); });
  // --wire=bf16 is a tail byte after the secret; fp32's frame is as above.
  m.wire = 1;
  EXPECT_EQ(hex(encode(m)), fleet + "01");
  round_trips(fleet + "01", decode_shard_fleet, [](const shard_fleet_msg& x) { return encode(x); });
  m.wire = 2;  // bf16-operands
  EXPECT_EQ(hex(encode(m)), fleet + "02");
  round_trips(fleet + "02", decode_shard_fleet, [](const shard_fleet_msg& x) { return encode(x); });
  const auto unknown = bytes_of(fleet + "03");
  EXPECT_FALSE(decode_shard_fleet(unknown.data(), unknown.size()));
  const auto empty_tail = bytes_of(fleet + "00");  // a tail that says nothing: no writer makes it
  EXPECT_FALSE(decode_shard_fleet(empty_tail.data(), empty_tail.size()));

  const std::string edge = "0900686f73743a37303031";
  EXPECT_EQ(hex(encode_shard_edge("host:7001")), edge);
  round_trips(edge, decode_shard_edge, [](const std::string& a) { return encode_shard_edge(a); });
}

TEST(frame_golden, shard_checkpoint_requests_and_file) {
  const shard_checkpoint_header h{1, 3, 40, 77};
  const std::string request = "010000000300000028000000000000004d00000000000000";
  EXPECT_EQ(hex(encode(shard_checkpoint_request{h, false, {}})), request);
  round_trips(request, decode_shard_checkpoint_request, [](const shard_checkpoint_request& x) { return encode(x); });
  // The tail: the steps of the coordinator's files (u32 count, u64 steps).
  const std::string listed = request + "02000000" + "1e00000000000000" + "1400000000000000";
  EXPECT_EQ(hex(encode(shard_checkpoint_request{h, true, {30, 20}})), listed);
  round_trips(listed, decode_shard_checkpoint_request, [](const shard_checkpoint_request& x) { return encode(x); });

  const shard_file_ref f{"shard-0000000040-01-of-03.clvshard", 0xdeadbeef, 1234};
  const std::string file_ref = "efbeadded204000000000000220073686172642d303030303030303034302d30312d6f662d30332e636c767368617264";
  EXPECT_EQ(hex(encode(f)), file_ref);
  round_trips(file_ref, decode_shard_file_ref, [](const shard_file_ref& x) { return encode(x); });

  shard_restore_request q{h, f, {{0, 2, 4, 1, 3}, {1, 3, 1, 0, 1}}};
  const std::string restore = "010000000300000028000000000000004d00000000000000efbeadded204000000000000220073686172642d303030303030303034302d30312d6f662d30332e636c76736861726402000000000200000000000000040000000000000001000000000000000300000000000000010300000000000000010000000000000000000000000000000100000000000000";
  EXPECT_EQ(hex(encode(q)), restore);
  round_trips(restore, decode_shard_restore_request, [](const shard_restore_request& x) { return encode(x); });

  // The file: its header, then its slices laid out as an attach frame.
  const tensor v = counting(2, 2, 1), m = counting(2, 2, 2), s = counting(2, 2, 3);
  const auto dir = std::filesystem::temp_directory_path() / ("frame_golden_" + std::to_string(::getpid()));
  auto written = write_shard_checkpoint(dir.string(), h, {{0, true, 2, 4, 1, 3, &v, &m, &s}});
  ASSERT_TRUE(written) << describe(written.error());
  std::ifstream in(dir / written->name, std::ios::binary);
  const std::vector<char> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove_all(dir);
  const std::string golden_file = "434c565348434b000100000001000000030000009a39c72328000000000000004d0000000000000086000000000000000100000000010200000000000000040000000000000001000000000000000300000000000000020000000000000002000000000000000000803f0000c03f000000400000204002000000000000000200000000000000000000400000204000004040000060400200000000000000020000000000000000004040000060400000804000009040";
  EXPECT_EQ(hex(file), golden_file);
  auto read = read_shard_checkpoint_bytes(file.data(), file.size(), "golden");
  ASSERT_TRUE(read) << describe(read.error());
  ASSERT_EQ(read->slices.size(), 1u);
  EXPECT_EQ(hex(encode_shard_attach(read->slices)), hex(std::vector<char>(file.begin() + 48, file.end())));
}
