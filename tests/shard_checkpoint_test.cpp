// A shard process's own checkpoint file (schema/shard_checkpoint_file.hpp)
// as hostile input, and a set of them put together again with another
// shard count (actors/ps/shards/shard_checkpoints.hpp).

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <zlib.h>

#include "actors/ps/shards/shard_checkpoints.hpp"
#include "actors/ps/shards/shard_service.hpp"
#include "actors/ps/shards/shard_slices.hpp"
#include "schema/errors.hpp"
#include "schema/shard_checkpoint_file.hpp"
#include "tests/test_util.hpp"

using namespace cleave;
using cleave::testing::random_tensor;
using cleave::testing::scratch_dir;

namespace {

// Two whole parameters: a 4x6 matrix cut by columns and a 5x3 one cut by rows.
struct whole_params {
  tensor value[2] = {random_tensor(4, 6, 1), random_tensor(5, 3, 2)};
  tensor m[2] = {random_tensor(4, 6, 3), random_tensor(5, 3, 4)};
  tensor v[2] = {random_tensor(4, 6, 5), random_tensor(5, 3, 6)};
  shard_axis axis[2] = {shard_axis::columns, shard_axis::rows};
};

// Shard s of `shards`'s slices of p, as the shard keeps them.
struct shard_slices {
  tensor value[2], m[2], v[2];
  std::vector<shard_checkpoint_slice> slices;
  shard_slices(const whole_params& p, int s, int shards) {
    for (int i = 0; i < 2; ++i) {
      const int64_t extent = p.axis[i] == shard_axis::columns ? p.value[i].cols() : p.value[i].rows();
      const shard_slice where{p.axis[i], split_evenly(extent, shards)[static_cast<size_t>(s)]};
      copy_out(p.value[i], where, value[i]);
      copy_out(p.m[i], where, m[i]);
      copy_out(p.v[i], where, v[i]);
      slices.push_back({static_cast<uint8_t>(p.axis[i]), i == 0, p.value[i].rows(), p.value[i].cols(),
                        where.range.begin, where.range.end, &value[i], &m[i], &v[i]});
    }
  }
};

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// The checksum the header must carry for these bytes (as the writer makes it).
void fix_checksum(std::vector<char>& b) {
  uint32_t crc = static_cast<uint32_t>(crc32_z(0, nullptr, 0));
  crc = static_cast<uint32_t>(crc32_z(crc, reinterpret_cast<const Bytef*>(b.data()), 20));
  crc = static_cast<uint32_t>(crc32_z(crc, reinterpret_cast<const Bytef*>(b.data() + 24), b.size() - 24));
  std::memcpy(b.data() + 20, &crc, 4);
}

bool same(const tensor& a, const tensor& b) {
  return a.rows() == b.rows() && a.cols() == b.cols()
         && std::memcmp(a.data(), b.data(), static_cast<size_t>(a.size()) * sizeof(float)) == 0;
}

}  // namespace

TEST(shard_checkpoint_file, round_trips_and_names_step_index_and_count) {
  scratch_dir dir;
  whole_params p;
  shard_slices mine(p, 1, 2);
  auto ref = write_shard_checkpoint(dir.path(), {1, 2, 30, 77}, mine.slices);
  ASSERT_TRUE(ref) << describe(ref.error());
  EXPECT_EQ(ref->name, "shard-0000000030-01-of-02.clvshard");
  EXPECT_EQ(ref->bytes, std::filesystem::file_size(dir.file(ref->name)));
  auto back = read_shard_checkpoint(dir.file(ref->name));
  ASSERT_TRUE(back) << describe(back.error());
  EXPECT_EQ(back->header.shard, 1u);
  EXPECT_EQ(back->header.shards, 2u);
  EXPECT_EQ(back->header.step, 30u);
  EXPECT_EQ(back->header.set_id, 77u);
  EXPECT_EQ(back->file.checksum, ref->checksum);
  ASSERT_EQ(back->slices.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const auto& e = back->slices[static_cast<size_t>(i)];
    EXPECT_EQ(e.decay, i == 0);
    EXPECT_TRUE(same(e.value, mine.value[i]) && same(e.adam_m, mine.m[i]) && same(e.adam_v, mine.v[i]));
  }
  EXPECT_EQ(back->slices[0].begin, 3);
  EXPECT_EQ(back->slices[1].begin, 3);  // 5 rows in 2: 3 and 2
  EXPECT_EQ(back->slices[1].end, 5);
}

TEST(shard_checkpoint_file, keeps_the_newest_three_of_its_own_and_leaves_other_shards_files) {
  scratch_dir dir;
  whole_params p;
  shard_slices a(p, 0, 2), b(p, 1, 2);
  ASSERT_TRUE(write_shard_checkpoint(dir.path(), {1, 2, 10, 1}, b.slices));
  for (uint64_t step : {10, 20, 30, 40, 50}) ASSERT_TRUE(write_shard_checkpoint(dir.path(), {0, 2, step, step}, a.slices));
  std::ofstream(dir.file(".shard-0000000060-00-of-02.clvshard.tmp")) << "left by a killed writer";
  ASSERT_TRUE(write_shard_checkpoint(dir.path(), {0, 2, 60, 60}, a.slices));
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"shard-0000000010-01-of-02.clvshard", "shard-0000000040-00-of-02.clvshard",
                                             "shard-0000000050-00-of-02.clvshard", "shard-0000000060-00-of-02.clvshard"}));
}

TEST(shard_checkpoint_file, keeps_only_the_files_of_the_steps_its_coordinator_names) {
  // The coordinator holds the sets of steps 10 and 20; the files of 30 and
  // 40 are of sets that failed (a full disk under
  // --on-checkpoint-error=continue): writing 50 drops them, first, and
  // would keep 10 and 20 however many sets failed.
  scratch_dir dir;
  whole_params p;
  shard_slices a(p, 0, 2), b(p, 1, 2);
  ASSERT_TRUE(write_shard_checkpoint(dir.path(), {1, 2, 30, 1}, b.slices));  // another shard's, in a shared folder
  const std::vector<uint64_t> named_then[] = {{}, {10}, {20, 10}, {20, 10}};  // the coordinator's, at 10, 20, 30, 40
  for (uint64_t step : {10, 20, 30, 40})
    ASSERT_TRUE(write_shard_checkpoint(dir.path(), {0, 2, step, step}, a.slices, named_then[step / 10 - 1]));
  std::ofstream(dir.file(".shard-0000000050-00-of-02.clvshard.tmp")) << "left by a killed writer";
  ASSERT_TRUE(write_shard_checkpoint(dir.path(), {0, 2, 50, 50}, a.slices, std::vector<uint64_t>{20, 10}));
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"shard-0000000010-00-of-02.clvshard", "shard-0000000020-00-of-02.clvshard",
                                             "shard-0000000030-01-of-02.clvshard", "shard-0000000050-00-of-02.clvshard"}));
}

TEST(shard_checkpoint_file, refuses_truncated_corrupt_and_lying_files_with_a_reason) {
  scratch_dir dir;
  whole_params p;
  shard_slices mine(p, 0, 2);
  auto ref = write_shard_checkpoint(dir.path(), {0, 2, 5, 9}, mine.slices);
  ASSERT_TRUE(ref);
  const auto good = read_bytes(dir.file(ref->name));
  auto refused = [&](std::vector<char> b, const std::string& why) {
    auto r = read_shard_checkpoint_bytes(b.data(), b.size(), "f");
    if (r) return ::testing::AssertionFailure() << "accepted";
    if (describe(r.error()).find(why) == std::string::npos)
      return ::testing::AssertionFailure() << describe(r.error());
    return ::testing::AssertionSuccess();
  };
  // Every truncation.
  for (size_t n = 0; n < good.size(); ++n) {
    auto r = read_shard_checkpoint_bytes(good.data(), n, "f");
    ASSERT_FALSE(r) << n;
  }
  EXPECT_TRUE(refused({good.begin(), good.begin() + 47}, "truncated shard checkpoint"));
  EXPECT_TRUE(refused({good.begin(), good.end() - 1}, "header promises"));
  // Any flipped byte but the checksum's own is caught by it.
  for (size_t at : {size_t{9}, size_t{13}, size_t{30}, size_t{60}, good.size() - 1}) {
    auto b = good;
    b[at] ^= 0x40;
    EXPECT_FALSE(read_shard_checkpoint_bytes(b.data(), b.size(), "f")) << at;
  }
  auto b = good;
  b[good.size() - 1] ^= 1;
  EXPECT_TRUE(refused(b, "checksum mismatch"));
  b = good;
  b[0] = 'X';
  EXPECT_TRUE(refused(b, "bad magic"));
  b = good;
  b[8] = 2;
  fix_checksum(b);
  EXPECT_TRUE(refused(b, "format version 2"));
  // A header that lies with a right checksum: shard 3 of 2, 65 shards.
  b = good;
  b[12] = 3;
  fix_checksum(b);
  EXPECT_TRUE(refused(b, "out of range"));
  b = good;
  b[12] = 0;
  b[16] = 65;
  fix_checksum(b);
  EXPECT_TRUE(refused(b, "out of range"));
  // A payload that lies with a right checksum: a count of 60000 parameters,
  // a tensor of 2^24 x 2^24, both refused before anything is sized.
  b = good;
  const uint32_t many = 60000;
  std::memcpy(b.data() + 48, &many, 4);
  fix_checksum(b);
  EXPECT_TRUE(refused(b, "exceeds the cap"));
  b = good;
  const int64_t huge = int64_t{1} << 24;
  std::memcpy(b.data() + 48 + 4 + 34, &huge, 8);
  std::memcpy(b.data() + 48 + 4 + 42, &huge, 8);
  fix_checksum(b);
  EXPECT_FALSE(read_shard_checkpoint_bytes(b.data(), b.size(), "f"));
  EXPECT_FALSE(read_shard_checkpoint(dir.file("no-such-file")));
}

TEST(shard_checkpoint_file, requests_round_trip_and_refuse_paths_and_lies) {
  shard_restore_request q;
  q.header = {1, 3, 40, 5};
  q.file.name = "shard-0000000040-01-of-03.clvshard";
  q.file.checksum = 99;
  q.file.bytes = 1234;
  q.slices = {{0, 4, 6, 2, 4}, {1, 5, 3, 2, 4}};
  auto bytes = encode(q);
  auto back = decode_shard_restore_request(bytes.data(), bytes.size());
  ASSERT_TRUE(back) << describe(back.error());
  EXPECT_EQ(back->file.name, q.file.name);
  EXPECT_EQ(back->slices.size(), 2u);
  EXPECT_TRUE(back->slices[1] == q.slices[1]);
  for (size_t n = 0; n < bytes.size(); ++n) EXPECT_FALSE(decode_shard_restore_request(bytes.data(), n)) << n;
  q.file.name = "../../etc/passwd";
  bytes = encode(q);
  EXPECT_FALSE(decode_shard_restore_request(bytes.data(), bytes.size()));
  q.file.name = "x";
  q.header.shard = 3;
  bytes = encode(q);
  EXPECT_FALSE(decode_shard_restore_request(bytes.data(), bytes.size()));
  auto h = encode(shard_checkpoint_request{{0, 2, 7, 8}, false, {}});
  EXPECT_TRUE(decode_shard_checkpoint_request(h.data(), h.size()));
  EXPECT_FALSE(decode_shard_checkpoint_request(h.data(), h.size() - 1));
  // The tail: the steps whose files the shard keeps, at most max_kept_sets.
  auto listed = encode(shard_checkpoint_request{{0, 2, 7, 8}, true, {5, 3}});
  auto kept = decode_shard_checkpoint_request(listed.data(), listed.size());
  ASSERT_TRUE(kept) << describe(kept.error());
  EXPECT_TRUE(kept->listed);
  EXPECT_EQ(kept->kept_steps, (std::vector<uint64_t>{5, 3}));
  for (size_t n = h.size() + 1; n < listed.size(); ++n) EXPECT_FALSE(decode_shard_checkpoint_request(listed.data(), n)) << n;
  auto many = encode(shard_checkpoint_request{{0, 2, 7, 8}, true, std::vector<uint64_t>(max_kept_sets + 1, 1)});
  EXPECT_FALSE(decode_shard_checkpoint_request(many.data(), many.size()));
  auto f = encode(shard_file_ref{"a/b", 1, 2});
  EXPECT_FALSE(decode_shard_file_ref(f.data(), f.size()));
}

TEST(shard_checkpoint_set, moments_come_whole_from_the_files_of_another_shard_count) {
  scratch_dir dir;
  whole_params p;
  checkpoint ck;
  ck.step = 12;
  ck.shards = {3, 42, {}};
  for (int i = 0; i < 2; ++i) ck.parameters.push_back({"p" + std::to_string(i), p.value[i], {}, {}});
  for (int s = 0; s < 3; ++s) {
    shard_slices mine(p, s, 3);
    auto ref = write_shard_checkpoint(dir.path(), {static_cast<uint32_t>(s), 3, 12, 42}, mine.slices);
    ASSERT_TRUE(ref);
    ck.shards.files.push_back(*ref);
  }
  auto whole = ck;
  ASSERT_FALSE(read_set_moments(dir.path(), whole));
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(same(whole.parameters[static_cast<size_t>(i)].adam_m, p.m[i]));
    EXPECT_TRUE(same(whole.parameters[static_cast<size_t>(i)].adam_v, p.v[i]));
  }
  // A file of the set missing, or another than the set names: the set is refused, saying which.
  auto other = ck;
  other.shards.files[1].checksum ^= 1;
  auto err = read_set_moments(dir.path(), other);
  ASSERT_TRUE(err);
  EXPECT_NE(describe(err).find("its set names"), std::string::npos) << describe(err);
  other = ck;
  other.shards.id = 43;
  EXPECT_TRUE(read_set_moments(dir.path(), other));
  std::filesystem::remove(dir.file(ck.shards.files[2].name));
  err = read_set_moments(dir.path(), ck);
  ASSERT_TRUE(err);
  EXPECT_NE(describe(err).find("cannot open shard checkpoint"), std::string::npos) << describe(err);
}

TEST(shard_checkpoint_set, a_shard_writes_and_loads_its_own_file_and_refuses_another) {
  scratch_dir dir;
  whole_params p;
  shard_slices mine(p, 0, 2);
  std::vector<shard_attach_entry> entries;
  for (const auto& s : mine.slices)
    entries.push_back({s.axis, s.decay, s.full_rows, s.full_cols, s.begin, s.end, *s.value, *s.adam_m, *s.adam_v});
  auto attach = encode_shard_attach(entries);
  shard_service service;
  auto refused = service.handle(static_cast<uint16_t>(shard_kind::has_checkpoint_dir), nullptr, 0);
  EXPECT_EQ(refused.kind, shard_kind::refused);
  service.set_checkpoint_dir(dir.path());
  EXPECT_EQ(service.handle(static_cast<uint16_t>(shard_kind::has_checkpoint_dir), nullptr, 0).kind, shard_kind::done);
  ASSERT_EQ(service.handle(static_cast<uint16_t>(shard_kind::attach), attach.data(), attach.size()).kind, shard_kind::done);
  auto ask = encode(shard_checkpoint_request{{0, 2, 8, 5}, false, {}});
  auto written = service.handle(static_cast<uint16_t>(shard_kind::checkpoint), ask.data(), ask.size());
  ASSERT_EQ(written.kind, shard_kind::checkpoint_file);
  auto ref = decode_shard_file_ref(written.payload.data(), written.payload.size());
  ASSERT_TRUE(ref);

  shard_service fresh;
  fresh.set_checkpoint_dir(dir.path());
  shard_restore_request q;
  q.header = {0, 2, 8, 5};
  q.file = *ref;
  for (const auto& e : entries) q.slices.push_back({e.axis, e.full_rows, e.full_cols, e.begin, e.end});
  auto wrong = q;
  wrong.file.checksum ^= 1;
  auto bytes = encode(wrong);
  auto answer = fresh.handle(static_cast<uint16_t>(shard_kind::restore), bytes.data(), bytes.size());
  ASSERT_EQ(answer.kind, shard_kind::refused);
  EXPECT_FALSE(fresh.attached());
  wrong = q;
  wrong.slices[1].end = 4;
  bytes = encode(wrong);
  EXPECT_EQ(fresh.handle(static_cast<uint16_t>(shard_kind::restore), bytes.data(), bytes.size()).kind, shard_kind::refused);
  bytes = encode(q);
  ASSERT_EQ(fresh.handle(static_cast<uint16_t>(shard_kind::restore), bytes.data(), bytes.size()).kind, shard_kind::done);
  ASSERT_TRUE(fresh.attached());
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(same(fresh.store().slice(i).value, mine.value[i]));
    EXPECT_TRUE(same(fresh.store().slice(i).adam_v, mine.v[i]));
  }
}
