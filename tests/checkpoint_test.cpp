#include <cstring>
#include <filesystem>
#include <fstream>

#include <capnp/message.h>
#include <gtest/gtest.h>

#include "kernels/random.hpp"
#include "schema/atomic_file.hpp"
#include "schema/checkpoint_file.hpp"
#include "schema/errors.hpp"
#include "schema/json_file.hpp"
#include "schema/tensor_codec.hpp"
#include "tests/test_util.hpp"

using namespace cleave;
using cleave::testing::random_tensor;
using cleave::testing::scratch_dir;

namespace {

checkpoint sample_checkpoint(uint64_t step) {
  checkpoint ck;
  ck.model.kind = "mlp";
  ck.model.inputs = 12;
  ck.model.hidden = {7, 5};
  ck.model.classes = 3;
  ck.dataset = "fashion-mnist";
  ck.seed = 42;
  ck.batch = 8;
  ck.step = step;
  ck.epoch = 2;
  ck.index_in_epoch = 96;
  for (int i = 0; i < 3; ++i)
    ck.parameters.push_back({"p" + std::to_string(i), random_tensor(4 + i, 3, 10 + i),
                             random_tensor(4 + i, 3, 20 + i), random_tensor(4 + i, 3, 30 + i)});
  return ck;
}

bool same_bits(const tensor& a, const tensor& b) {
  return a.rows() == b.rows() && a.cols() == b.cols()
         && std::memcmp(a.data(), b.data(), sizeof(float) * a.size()) == 0;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

}  // namespace

TEST(checkpoint, round_trip_is_bit_exact) {
  scratch_dir dir;
  auto ck = sample_checkpoint(17);
  auto path = write_checkpoint(dir.path(), ck);
  ASSERT_TRUE(path) << describe(path.error());
  auto back = read_checkpoint(*path);
  ASSERT_TRUE(back) << describe(back.error());
  EXPECT_EQ(back->model, ck.model);
  EXPECT_EQ(back->dataset, ck.dataset);
  EXPECT_EQ(back->seed, 42u);
  EXPECT_EQ(back->batch, 8u);
  EXPECT_EQ(back->step, 17u);
  EXPECT_EQ(back->epoch, 2u);
  EXPECT_EQ(back->index_in_epoch, 96u);
  ASSERT_EQ(back->parameters.size(), ck.parameters.size());
  for (size_t i = 0; i < ck.parameters.size(); ++i) {
    EXPECT_EQ(back->parameters[i].name, ck.parameters[i].name);
    EXPECT_TRUE(same_bits(back->parameters[i].value, ck.parameters[i].value));
    EXPECT_TRUE(same_bits(back->parameters[i].adam_m, ck.parameters[i].adam_m));
    EXPECT_TRUE(same_bits(back->parameters[i].adam_v, ck.parameters[i].adam_v));
  }
}

TEST(checkpoint, tensor_larger_than_one_chunk_round_trips) {
  // 80 MiB: two chunks, and past Cap'n Proto's default traversal limit.
  scratch_dir dir;
  checkpoint ck = sample_checkpoint(1);
  ck.parameters.resize(1);
  ck.parameters[0].value = random_tensor(5 << 10, 4 << 10, 7);
  auto path = write_checkpoint(dir.path(), ck);
  ASSERT_TRUE(path) << describe(path.error());
  auto back = read_checkpoint(*path);
  ASSERT_TRUE(back) << describe(back.error());
  EXPECT_TRUE(same_bits(back->parameters[0].value, ck.parameters[0].value));
}

TEST(checkpoint, keeps_only_the_newest) {
  scratch_dir dir;
  for (uint64_t s : {10, 20, 30}) ASSERT_TRUE(write_checkpoint(dir.path(), sample_checkpoint(s)));
  auto files = list_checkpoints(dir.path());
  ASSERT_EQ(files.size(), 2u);
  EXPECT_NE(files[0].find("0000000030"), std::string::npos);
  EXPECT_NE(files[1].find("0000000020"), std::string::npos);
}

TEST(checkpoint, leftover_temporary_file_is_ignored) {
  scratch_dir dir;
  ASSERT_TRUE(write_checkpoint(dir.path(), sample_checkpoint(5)));
  write_bytes(dir.file(".checkpoint-0000000006.clvck.tmp"), "half a checkpoint");
  auto files = list_checkpoints(dir.path());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_NE(files[0].find("0000000005"), std::string::npos);
}

TEST(checkpoint, flipped_payload_byte_fails_checksum) {
  scratch_dir dir;
  auto path = *write_checkpoint(dir.path(), sample_checkpoint(3));
  auto bytes = read_bytes(path);
  bytes[bytes.size() / 2] ^= 0x40;
  write_bytes(path, bytes);
  auto back = read_checkpoint(path);
  ASSERT_FALSE(back);
  EXPECT_NE(describe(back.error()).find("checksum"), std::string::npos);
  EXPECT_NE(describe(back.error()).find(path), std::string::npos);
}

TEST(checkpoint, truncated_file_is_refused) {
  scratch_dir dir;
  auto path = *write_checkpoint(dir.path(), sample_checkpoint(3));
  auto bytes = read_bytes(path);
  for (size_t keep : {size_t{0}, size_t{10}, bytes.size() - 8}) {
    write_bytes(path, bytes.substr(0, keep));
    auto back = read_checkpoint(path);
    ASSERT_FALSE(back) << keep;
    EXPECT_NE(describe(back.error()).find("truncated"), std::string::npos) << describe(back.error());
  }
}

TEST(checkpoint, wrong_magic_and_version_are_refused) {
  scratch_dir dir;
  auto path = *write_checkpoint(dir.path(), sample_checkpoint(3));
  auto bytes = read_bytes(path);
  auto bad = bytes;
  bad[0] = 'X';
  write_bytes(path, bad);
  ASSERT_FALSE(read_checkpoint(path));
  EXPECT_NE(describe(read_checkpoint(path).error()).find("magic"), std::string::npos);
  bad = bytes;
  bad[8] = 9;
  write_bytes(path, bad);
  EXPECT_NE(describe(read_checkpoint(path).error()).find("version"), std::string::npos);
}

TEST(checkpoint, lying_length_is_refused_before_allocation) {
  scratch_dir dir;
  auto path = *write_checkpoint(dir.path(), sample_checkpoint(3));
  auto bytes = read_bytes(path);
  uint64_t huge = uint64_t{1} << 60;
  std::memcpy(bytes.data() + 16, &huge, 8);
  write_bytes(path, bytes);
  auto back = read_checkpoint(path);
  ASSERT_FALSE(back);
  EXPECT_NE(describe(back.error()).find("header promises"), std::string::npos);
}

TEST(checkpoint, missing_file_names_the_path) {
  auto back = read_checkpoint("/nonexistent/dir/checkpoint-0000000001.clvck");
  ASSERT_FALSE(back);
  EXPECT_NE(describe(back.error()).find("/nonexistent/dir"), std::string::npos);
}

TEST(tensor_codec, chunk_lengths_must_match_shape) {
  capnp::MallocMessageBuilder msg;
  auto t = msg.initRoot<Tensor>();
  t.setRows(2);
  t.setCols(3);
  auto chunks = t.initChunks(1);
  chunks.init(0, 20);  // 5 floats where 6 are promised
  auto back = decode_tensor(t.asReader(), "w");
  ASSERT_FALSE(back);
  EXPECT_NE(describe(back.error()).find("needs 24 bytes, found 20"), std::string::npos);
}

// Found by tests/fuzz/fuzz_checkpoint: an empty tensor with an empty chunk
// once memcpy'd into the tensor's null data() (undefined behaviour).
TEST(tensor_codec, empty_tensor_with_empty_chunks_decodes) {
  capnp::MallocMessageBuilder msg;
  auto t = msg.initRoot<Tensor>();
  t.setRows(0);
  t.setCols(3);
  auto chunks = t.initChunks(2);
  chunks.init(0, 0);
  chunks.init(1, 0);
  auto back = decode_tensor(t.asReader(), "w");
  ASSERT_TRUE(back) << describe(back.error());
  EXPECT_EQ(back->size(), 0);
  EXPECT_EQ(back->cols(), 3);
}

TEST(tensor_codec, absurd_shape_is_refused) {
  capnp::MallocMessageBuilder msg;
  auto t = msg.initRoot<Tensor>();
  t.setRows(uint64_t{1} << 40);
  t.setCols(uint64_t{1} << 40);
  auto back = decode_tensor(t.asReader(), "w");
  ASSERT_FALSE(back);
  EXPECT_NE(describe(back.error()).find("size limit"), std::string::npos);
}

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST(atomic_file, replaces_the_whole_file_and_leaves_no_temporary) {
  scratch_dir dir;
  const auto path = dir.file("report.json");
  ASSERT_FALSE(write_file_atomically(path, {"old"}, "report"));
  ASSERT_FALSE(write_file_atomically(path, {"new ", "parts"}, "report"));
  EXPECT_EQ(read_text(path), "new parts");
  EXPECT_FALSE(std::filesystem::exists(atomic_temporary_of(path)));
  nlohmann::json doc = {{"loss", 0.1 + 0.2}};
  ASSERT_FALSE(write_json_file(path, doc));
  EXPECT_EQ(nlohmann::json::parse(read_text(path))["loss"].get<double>(), 0.1 + 0.2);  // every bit
}

TEST(atomic_file, a_failed_write_names_the_path_and_leaves_the_old_file) {
  scratch_dir dir;
  // A folder that does not exist: the temporary cannot be created.
  auto err = write_file_atomically(dir.file("missing/report.json"), {"x"}, "report");
  ASSERT_TRUE(err);
  EXPECT_NE(describe(err).find("cannot create report " + dir.path() + "/missing/.report.json.tmp"),
            std::string::npos) << describe(err);
  // A path the rename cannot replace (a folder with a file in it): what was
  // there stays, and the temporary is removed.
  const auto busy = dir.file("busy");
  std::filesystem::create_directory(busy);
  ASSERT_FALSE(write_file_atomically(busy + "/inside", {"kept"}, "report"));
  err = write_file_atomically(busy, {"x"}, "report");
  ASSERT_TRUE(err);
  EXPECT_NE(describe(err).find("cannot rename"), std::string::npos) << describe(err);
  EXPECT_EQ(read_text(busy + "/inside"), "kept");
  EXPECT_FALSE(std::filesystem::exists(atomic_temporary_of(busy)));
}
