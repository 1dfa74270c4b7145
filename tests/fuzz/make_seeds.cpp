// Writes the seed corpora, a few valid inputs per target, with the project's
// own encoders so the seeds follow the formats:  fuzz_seeds tests/fuzz/corpus
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "actors/transport/certificates.hpp"
#include "actors/transport/frame.hpp"
#include "schema/checkpoint_file.hpp"
#include "schema/edge_codec.hpp"
#include "schema/modellet_codec.hpp"
#include "schema/shard_checkpoint_file.hpp"
#include "schema/shard_codec.hpp"
#include "schema/tile_codec.hpp"

namespace fs = std::filesystem;
using namespace cleave;

namespace {

fs::path root;

void seed(const std::string& target, const std::string& name, const std::string& bytes) {
  fs::create_directories(root / target);
  std::ofstream(root / target / name, std::ios::binary) << bytes;
}

std::string header(uint16_t kind, uint64_t length, uint64_t tag) {
  auto h = transport::encode_header({kind, length, tag});
  return std::string(h.data(), h.size());
}

std::string hello(uint64_t window, uint64_t max_payload) {
  auto b = transport::encode_hello({window, max_payload});
  return header(transport::kind_hello, b.size(), 0) + std::string(b.data(), b.size());
}

template <class T>
std::string encoded(char selector, const T& v) {
  std::string out(encoded_size(v), '\0');
  encode(v, out.data());
  return selector + out;
}

operand block(int64_t rows, int64_t cols, bool values) {
  operand op;
  op.key = 0x1234 + static_cast<uint64_t>(rows);
  op.rows = rows;
  op.cols = cols;
  if (values)
    for (int64_t i = 0; i < rows * cols; ++i) op.data.push_back(0.5f * static_cast<float>(i));
  return op;
}

void frames() {
  // Two leading bytes: the payload cap (1 << 20) and our window (4 x 4096).
  const std::string pre = {20, 2};
  seed("frame", "hello", pre + hello(1 << 16, 1 << 20));
  seed("frame", "data_then_credit", pre + hello(1 << 16, 1 << 20) + header(2, 5, 1) + "abcde"
                                         + header(transport::kind_credit, 0, 0) + header(3, 0, 6));
  std::string many = pre + hello(8192, 1 << 20);
  for (uint64_t i = 0; i < 6; ++i) many += header(2, 8, i) + std::string(8, static_cast<char>(i));
  seed("frame", "many_small", many);
}

void tiles() {
  tile_task t;
  t.key = {7, 2, 3};
  t.a = block(2, 3, true);
  t.b = block(3, 2, false);
  t.b.trans = true;
  seed("tile", "task", encoded(0, t));
  tile_result r;
  r.key = {7, 2, 3};
  r.device = 4;
  r.rows = 2;
  r.cols = 2;
  r.data = {1, 2, 3, 4};
  r.busy_seconds = 0.25;
  r.cache_hits = 1;
  seed("tile", "result", encoded(1, r));
  seed("tile", "miss", encoded(2, tile_miss{{7, 2, 3}, 4, 0x1234}));
  t.wire = wire_precision::bf16;
  seed("tile", "task_bf16", encoded(0, t));
  r.wire = wire_precision::bf16;
  seed("tile", "result_bf16", encoded(1, r));
}

std::string bytes(const std::vector<char>& v) { return std::string(v.data(), v.size()); }

void edge() {
  edge_join_msg join;
  join.profile = {"rpi", 2e9, uint64_t{1} << 30, 1.25e7, 2.5e6, 0.005};
  join.token = "one-time-token";
  seed("edge", "join", '\0' + bytes(encode(join)));
  auto request = transport::make_key_and_request("rpi-1");
  join.csr = request ? request->csr_pem : "";
  seed("edge", "join_with_request", '\0' + bytes(encode(join)));
  seed("edge", "welcome", '\1' + bytes(encode(edge_welcome_msg{5, 0.1, ""})));
  seed("edge", "welcome_with_certificate",
       '\1' + bytes(encode(edge_welcome_msg{5, 0.1, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"})));
  seed("enrolment", "request", '\1' + join.csr);
  seed("enrolment", "tokens", std::string{'\0'} + "# tokens\n0123456789abcdef0123456789abcdef\n\nfedcba9876543210fedcba9876543210\n");
  seed("edge", "refused", '\2' + bytes(encode_refusal("schema version 3, the ps speaks 4")));
}

void modellets() {
  ml_place_msg place;
  place.sampling.lsh.family = lsh_family::simhash;
  place.sampling.lsh.hashes = 4;
  place.sampling.lsh.tables = 3;
  place.sampling.min_active = 2;
  auto& st = place.state;
  st.begin = 5;
  st.end = 7;
  st.hidden = 3;
  st.step = 2;
  for (tensor* t : {&st.w, &st.m_w, &st.v_w}) t->resize(2, 3);
  for (tensor* t : {&st.b, &st.m_b, &st.v_b}) t->resize(2, 1);
  for (tensor* t : {&st.w, &st.m_w, &st.v_w, &st.b, &st.m_b, &st.v_b})
    for (int64_t i = 0; i < t->size(); ++i) (*t)[i] = 0.25f * static_cast<float>(i);
  seed("modellet", "place", '\0' + bytes(encode(place)));
  seed("modellet", "state", '\1' + bytes(encode_ml_state(st)));
  tensor h(2, 3);
  for (int64_t i = 0; i < h.size(); ++i) h[i] = static_cast<float>(i);
  const std::vector<int64_t> offsets = {0, 1, 3};
  const std::vector<int32_t> ids = {5, 6, 9};
  seed("modellet", "forward", '\2' + bytes(encode_ml_forward(4, h, {offsets.data(), ids.data(), 2}, 0, 100)));
  modellet_scores sc;
  sc.offsets = {0, 2, 3};
  sc.ids = {5, 6, 6};
  sc.logits = {0.5f, -1, 2};
  sc.stats = {{0.5, 1.2}, {2, 1}};
  seed("modellet", "scores", '\3' + bytes(encode(sc)));
  seed("modellet", "grads", '\4' + bytes(encode_ml_grads({0.1f, -0.2f, 0.3f})));
  seed("modellet", "hidden_grad", '\5' + bytes(encode(ml_hidden_grad_msg{h, 0.5})));
  ml_update_msg u;
  u.t = 7;
  seed("modellet", "update", '\6' + bytes(encode(u)));
  seed("modellet", "done", '\7' + bytes(encode_ml_done(42)));
}

void shard_frames() {
  shard_attach_entry e;
  e.axis = 0;
  e.decay = true;
  e.full_rows = 2;
  e.full_cols = 4;
  e.begin = 1;
  e.end = 3;
  for (tensor* t : {&e.value, &e.adam_m, &e.adam_v}) {
    t->resize(2, 2);
    for (int64_t i = 0; i < t->size(); ++i) (*t)[i] = 0.5f * static_cast<float>(i);
  }
  seed("shard", "attach", '\0' + bytes(encode_shard_attach({e})));
  const tensor& x = e.value;
  seed("shard", "products", '\1' + bytes(encode_shard_products({{0, 0, false, false, true, 1.0f, x.view(), {}, x.view()},
                                                                {1, 0, true, false, false, 0.0f, x.view(), x.view(), {}}})));
  seed("shard", "tensors", '\2' + bytes(encode_shard_tensors({x.view(), const_view<float>{}})));
  shard_update_msg u;
  u.t = 3;
  seed("shard", "update", '\3' + bytes(encode(u)));
  seed("shard", "sum_of_squares", '\4' + bytes(encode_shard_double(2.5)));
  seed("shard", "stats", '\5' + bytes(encode(shard_stats{1 << 20, 300, 200})));
  seed("shard", "refused", '\6' + bytes(encode_shard_refusal("no parameters attached yet")));
  // A shard's own checkpoint file (first byte 0xF0), a restore request (0xF1), a checkpoint request (0xF2).
  const fs::path dir = fs::temp_directory_path() / "cleave-fuzz-seeds";
  auto file = write_shard_checkpoint(dir.string(), {1, 2, 30, 7}, {{0, true, 2, 4, 1, 3, &e.value, &e.adam_m, &e.adam_v}});
  if (file) {
    std::ifstream in(dir / file->name, std::ios::binary);
    seed("shard", "checkpoint_file", '\xF0' + std::string(std::istreambuf_iterator<char>(in), {}));
    shard_restore_request q;
    q.header = {1, 2, 30, 7};
    q.file = *file;
    q.slices = {{0, 2, 4, 1, 3}};
    seed("shard", "restore", '\xF1' + bytes(encode(q)));
  }
  fs::remove_all(dir);
  seed("shard", "checkpoint", '\xF2' + bytes(encode(shard_checkpoint_request{{1, 2, 30, 7}, false, {}})));
  seed("shard", "checkpoint-kept", '\xF2' + bytes(encode(shard_checkpoint_request{{1, 2, 30, 7}, true, {20, 10}})));
}

void checkpoints() {
  checkpoint ck;
  ck.model.kind = "mlp";
  ck.model.inputs = 4;
  ck.model.hidden = {3};
  ck.model.classes = 2;
  ck.dataset = "fashion-mnist";
  ck.step = 12;
  for (const char* name : {"w0", "b0"}) {
    parameter_state p{name, tensor(2, 3), tensor(2, 3), tensor(2, 3)};
    for (int64_t i = 0; i < 6; ++i) p.value.data()[i] = static_cast<float>(i);
    ck.parameters.push_back(p);
  }
  const fs::path dir = fs::temp_directory_path() / "cleave-fuzz-seeds";
  auto path = write_checkpoint(dir.string(), ck);
  if (!path) return;
  std::ifstream in(*path, std::ios::binary);
  seed("checkpoint", "mlp", std::string(std::istreambuf_iterator<char>(in), {}));
  fs::remove_all(dir);
}

void text() {
  seed("fleet", "presets", R"({"devices": [{"preset": "phone", "count": 8},
  {"preset": "laptop", "count": 2, "flops": 5e10}]})");
  seed("fleet", "custom", R"({"devices": [{"name": "rpi", "flops": 2e9, "memory_bytes": 1e9,
  "downlink": 1.25e7, "uplink": 2.5e6, "latency": 0.005, "count": 4}]})");
  // The leading byte is the fleet's size at start (here 8).
  seed("churn", "events", std::string(1, 8) + R"({"events": [
  {"step": 1, "action": "die", "device": 3, "after_seconds": 0.01},
  {"step": 2, "action": "hang", "device": 4},
  {"step": 3, "action": "slow", "device": 5, "factor": 8},
  {"step": 4, "action": "join", "profile": "fast"},
  {"step": 5, "action": "crash", "device": 6}]})");
  seed("byzantine", "liars", std::string(1, 8) + R"({"liars": [
  {"device": 3, "lies": [{"kind": "element", "rate": 0.5, "size": 1.0}, {"kind": "stale", "rate": 1}]},
  {"device": 7, "lies": [{"kind": "nan", "rate": 0.2}, {"kind": "row"}, {"kind": "scale", "size": 2},
                         {"kind": "shape", "rate": 0.1}]}]})");
  seed("http_head", "get", "GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept: */*\r\n\r\n");
  seed("http_head", "status_query", "GET /status?pretty=1 HTTP/1.0\r\n\r\n");
  seed("http_head", "partial", "POST /status HTTP/1.1\r\nContent-Length: 3\r\n");
  seed("xc", "repository", "4 300 20\n3,17 0:1 42:0.5 133:2.25\n 5:1 9:0.125\n0 299:-1e-05\n19 7:3\n");
  seed("xc", "unsorted_crlf", "2 50 10\r\n9,1\t40:0.75 2:1 \r\n0 49:1e+06");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  root = argv[1];
  frames();
  tiles();
  edge();
  modellets();
  shard_frames();
  checkpoints();
  text();
  return 0;
}
