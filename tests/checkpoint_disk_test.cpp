// Disks that fail a run: a checkpoint that cannot be written is an error
// value and the previous file stays; what the run does then
// (--on-checkpoint-error); which checkpoint --resume takes when the newest
// is damaged; and saved state read as hostile (short reads, sizes past the
// machine, NaNs under a valid checksum).

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <unistd.h>

#include "schema/checkpoint_file.hpp"
#include "schema/errors.hpp"
#include "schema/saved_state.hpp"
#include "schema/shard_checkpoint_file.hpp"
#include "tests/test_util.hpp"
#include "training/checkpoint_policy.hpp"

using namespace cleave;
using cleave::testing::random_tensor;
using cleave::testing::scratch_dir;

namespace {

// About 120 KB on disk: one parameter of 100x100 with its two moments.
checkpoint big_checkpoint(uint64_t step) {
  checkpoint ck;
  ck.model.kind = "mlp";
  ck.model.inputs = 100;
  ck.model.hidden = {};
  ck.model.classes = 100;
  ck.dataset = "fashion-mnist";
  ck.step = step;
  ck.parameters.push_back({"w", random_tensor(100, 100, step), random_tensor(100, 100, step + 1),
                           random_tensor(100, 100, step + 2)});
  return ck;
}

bool same_bits(const tensor& a, const tensor& b) {
  return a.rows() == b.rows() && a.cols() == b.cols()
         && std::memcmp(a.data(), b.data(), sizeof(float) * static_cast<size_t>(a.size())) == 0;
}

bool contains(const caf::error& err, const std::string& text) {
  return describe(err).find(text) != std::string::npos;
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// A tmpfs of `size` mounted on a scratch folder for the test's life; only
// root may mount one.
class small_tmpfs {
 public:
  explicit small_tmpfs(const std::string& size) {
    mounted_ = ::mount("tmpfs", dir_.path().c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0;
    why_ = mounted_ ? "" : std::strerror(errno);
  }
  ~small_tmpfs() {
    if (mounted_) ::umount2(dir_.path().c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  const std::string& why() const { return why_; }
  const std::string& path() const { return dir_.path(); }

 private:
  scratch_dir dir_;
  bool mounted_ = false;
  std::string why_;
};

}  // namespace

TEST(checkpoint_disk, a_full_file_system_is_an_error_value_and_the_previous_checkpoint_stays) {
  small_tmpfs disk("160k");  // room for one 120 KB checkpoint, not for a second beside it
  if (!disk.mounted()) GTEST_SKIP() << "mounting a tmpfs needs root: " << disk.why();
  const auto first = write_checkpoint(disk.path(), big_checkpoint(10));
  ASSERT_TRUE(first) << describe(first.error());
  const auto second = write_checkpoint(disk.path(), big_checkpoint(20));
  ASSERT_FALSE(second);
  EXPECT_TRUE(contains(second.error(), "No space left on device")) << describe(second.error());
  EXPECT_TRUE(contains(second.error(), "checkpoint-0000000020.clvck")) << describe(second.error());
  // The temporary went; the first checkpoint is whole.
  EXPECT_EQ(files_in(disk.path()), std::vector<std::string>{"checkpoint-0000000010.clvck"});
  auto back = read_checkpoint(*first);
  ASSERT_TRUE(back) << describe(back.error());
  EXPECT_TRUE(same_bits(back->parameters[0].adam_v, big_checkpoint(10).parameters[0].adam_v));

  // A PS shard process's own file on a full disk: the same.
  std::error_code ec;
  std::filesystem::remove(*first, ec);
  const tensor value = random_tensor(100, 100, 1), m = random_tensor(100, 100, 2), v = random_tensor(100, 100, 3);
  const std::vector<shard_checkpoint_slice> slices{{0, true, 100, 100, 0, 100, &value, &m, &v}};
  auto kept = write_shard_checkpoint(disk.path(), {0, 2, 10, 7}, slices);
  ASSERT_TRUE(kept) << describe(kept.error());
  auto full = write_shard_checkpoint(disk.path(), {0, 2, 20, 8}, slices);
  ASSERT_FALSE(full);
  EXPECT_TRUE(contains(full.error(), "No space left on device")) << describe(full.error());
  EXPECT_EQ(files_in(disk.path()), std::vector<std::string>{kept->name});
  EXPECT_TRUE(read_shard_checkpoint(disk.path() + "/" + kept->name));
}

TEST(checkpoint_disk, a_write_the_kernel_cuts_short_is_an_error_value_and_the_previous_checkpoint_stays) {
  // No root needed: a file-size limit fails the write past 4 KiB (EFBIG),
  // through the same path as a full disk.
  scratch_dir dir;
  const auto first = write_checkpoint(dir.path(), big_checkpoint(10));
  ASSERT_TRUE(first);
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto* old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const auto second = write_checkpoint(dir.path(), big_checkpoint(20));
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  ASSERT_FALSE(second);
  EXPECT_TRUE(contains(second.error(), "write failed: File too large")) << describe(second.error());
  EXPECT_EQ(files_in(dir.path()), std::vector<std::string>{"checkpoint-0000000010.clvck"});
  EXPECT_TRUE(read_checkpoint(*first));
}

TEST(checkpoint_policy, parses_the_flag) {
  EXPECT_EQ(*parse_on_checkpoint_error("stop"), on_checkpoint_error::stop);
  EXPECT_EQ(*parse_on_checkpoint_error("continue"), on_checkpoint_error::go_on);
  auto bad = parse_on_checkpoint_error("ignore");
  ASSERT_FALSE(bad);
  EXPECT_TRUE(contains(bad.error(), "--on-checkpoint-error must be continue or stop, got 'ignore'"));
}

TEST(checkpoint_policy, stop_ends_the_run_naming_the_step_the_reason_and_the_checkpoint_to_resume_from) {
  const std::string why = "cannot write checkpoint ck/.checkpoint-0000000020.clvck.tmp: write failed: No space left on device";
  for (bool last : {false, true}) {
    auto v = after_failed_checkpoint(on_checkpoint_error::stop, 20, why, "ck/checkpoint-0000000010.clvck", last);
    EXPECT_EQ(v.action, checkpoint_failure_verdict::stop);
    EXPECT_EQ(v.line, "checkpoint at step 20 failed: " + why
                        + "; stopping (--on-checkpoint-error=stop); --resume continues from ck/checkpoint-0000000010.clvck");
  }
  auto none = after_failed_checkpoint(on_checkpoint_error::stop, 10, why, "", false);
  EXPECT_NE(none.line.find("no earlier checkpoint is on disk"), std::string::npos) << none.line;
  EXPECT_EQ(none.line.find('\n'), std::string::npos);
}

TEST(checkpoint_policy, continue_goes_on_but_a_failed_final_checkpoint_still_fails_the_run) {
  auto mid = after_failed_checkpoint(on_checkpoint_error::go_on, 20, "disk full", "ck/checkpoint-0000000010.clvck", false);
  EXPECT_EQ(mid.action, checkpoint_failure_verdict::go_on);
  EXPECT_EQ(mid.line, "checkpoint at step 20 failed: disk full; training goes on (--on-checkpoint-error=continue); "
                      "the newest checkpoint is still ck/checkpoint-0000000010.clvck");
  auto first = after_failed_checkpoint(on_checkpoint_error::go_on, 10, "disk full", "", false);
  EXPECT_EQ(first.action, checkpoint_failure_verdict::go_on);
  EXPECT_NE(first.line.find("no checkpoint is on disk yet"), std::string::npos) << first.line;
  auto last = after_failed_checkpoint(on_checkpoint_error::go_on, 40, "disk full", "ck/checkpoint-0000000010.clvck", true);
  EXPECT_EQ(last.action, checkpoint_failure_verdict::fail_at_end);
  EXPECT_EQ(last.line, "the final checkpoint at step 40 failed: disk full; the trained state is not on disk "
                       "(--on-checkpoint-error=continue finished the run); --resume continues from "
                       "ck/checkpoint-0000000010.clvck");
}

TEST(checkpoint_policy, resume_takes_the_newest_checkpoint_that_can_be_used) {
  const std::vector<std::string> files{"ck/checkpoint-30", "ck/checkpoint-20", "ck/checkpoint-10"};
  std::vector<std::string> offered;
  auto verdicts = [&](std::map<std::string, checkpoint_candidate::kind_t> kinds) {
    return [&offered, kinds](const std::string& path) {
      offered.push_back(path);
      const auto kind = kinds.count(path) ? kinds.at(path) : checkpoint_candidate::taken;
      return checkpoint_candidate{kind, kind == checkpoint_candidate::taken ? caf::error{} : fail(path + ": bad")};
    };
  };
  // The newest damaged: the next older is taken, the oldest never read.
  auto got = newest_valid_checkpoint(files, "ck", verdicts({{"ck/checkpoint-30", checkpoint_candidate::skipped}}));
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, "ck/checkpoint-20");
  EXPECT_EQ(offered, (std::vector<std::string>{"ck/checkpoint-30", "ck/checkpoint-20"}));
  // A newest one that is fine is taken at once.
  offered.clear();
  EXPECT_EQ(*newest_valid_checkpoint(files, "ck", verdicts({})), "ck/checkpoint-30");
  EXPECT_EQ(offered.size(), 1u);
  // A refusal (another model) stops the choice: no older file is tried.
  offered.clear();
  got = newest_valid_checkpoint(files, "ck", verdicts({{"ck/checkpoint-30", checkpoint_candidate::skipped},
                                                       {"ck/checkpoint-20", checkpoint_candidate::refused}}));
  ASSERT_FALSE(got);
  EXPECT_EQ(describe(got.error()), "ck/checkpoint-20: bad");
  EXPECT_EQ(offered.size(), 2u);
  // Every one damaged: a clean refusal naming the folder and the newest's reason.
  got = newest_valid_checkpoint(files, "ck", verdicts({{"ck/checkpoint-30", checkpoint_candidate::skipped},
                                                       {"ck/checkpoint-20", checkpoint_candidate::skipped},
                                                       {"ck/checkpoint-10", checkpoint_candidate::skipped}}));
  ASSERT_FALSE(got);
  EXPECT_EQ(describe(got.error()), "--resume: none of the 3 checkpoint(s) in ck can be used; the newest: ck/checkpoint-30: bad");
  EXPECT_FALSE(newest_valid_checkpoint({}, "ck", verdicts({})));
}

TEST(saved_state, a_nan_under_a_valid_checksum_is_refused_naming_the_file_and_the_parameter) {
  scratch_dir dir;
  auto ck = big_checkpoint(10);
  ck.parameters[0].adam_m.data()[77] = std::numeric_limits<float>::quiet_NaN();
  const auto path = write_checkpoint(dir.path(), ck);
  ASSERT_TRUE(path);
  auto back = read_checkpoint(*path);
  ASSERT_FALSE(back);
  EXPECT_TRUE(contains(back.error(), *path + ": parameter w: its AdamW m hold nan at element 77"))
    << describe(back.error());
  ck.parameters[0].adam_m.data()[77] = 0;
  ck.parameters[0].value.data()[3] = std::numeric_limits<float>::infinity();
  back = read_checkpoint(*write_checkpoint(dir.path(), ck));
  ASSERT_FALSE(back);
  EXPECT_TRUE(contains(back.error(), "its values hold inf at element 3")) << describe(back.error());

  // A shard process's own file.
  tensor value = random_tensor(4, 6, 1), m = random_tensor(4, 6, 2), v = random_tensor(4, 6, 3);
  v.data()[5] = -std::numeric_limits<float>::quiet_NaN();
  auto file = write_shard_checkpoint(dir.path(), {1, 2, 10, 7}, {{0, false, 4, 12, 6, 12, &value, &m, &v}});
  ASSERT_TRUE(file);
  auto shard = read_shard_checkpoint(dir.file(file->name));
  ASSERT_FALSE(shard);
  EXPECT_TRUE(contains(shard.error(), file->name + ": parameter 0: its AdamW v hold")) << describe(shard.error());
}

TEST(saved_state, a_short_read_and_a_size_past_the_machine_are_refused_before_use) {
  scratch_dir dir;
  const auto path = dir.file("short");
  std::ofstream(path) << "0123456789";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  char buf[32];
  auto err = read_exactly(fd, buf, sizeof(buf), path);
  ::close(fd);
  ASSERT_TRUE(err);
  EXPECT_EQ(describe(err), path + ": short read: the file ended after 10 of 32 bytes (truncated while being read)");
  EXPECT_FALSE(check_readable_size(1 << 20, "small"));
  err = check_readable_size(uint64_t{1} << 62, "huge.clvck");
  ASSERT_TRUE(err);
  EXPECT_TRUE(contains(err, "huge.clvck: 4611686018427387904 bytes, more than this machine's memory")) << describe(err);
}
