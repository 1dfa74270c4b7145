#include "actors/ps/shards/shard_checkpoints.hpp"

#include <chrono>
#include <filesystem>
#include <random>

#include "actors/ps/shards/shard_slices.hpp"
#include "actors/ps/shards/shard_split.hpp"
#include "schema/errors.hpp"
#include "schema/shard_checkpoint_file.hpp"

namespace cleave {

namespace {

// Distinct per checkpoint, so that a file left from another run or another
// pass over the same step (after a rollback) is never taken for this set's.
uint64_t new_set_id() {
  std::random_device rd;
  const auto now = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return (static_cast<uint64_t>(rd()) << 32 ^ rd()) ^ now;
}

}  // namespace

caf::error shard_checkpoints::check_dirs() {
  std::vector<caf::error> errors(remotes_.size());
  ps_.for_each_shard([&](int s) { errors[static_cast<size_t>(s)] = remotes_[static_cast<size_t>(s)]->has_checkpoint_dir(); });
  for (size_t s = 0; s < errors.size(); ++s)
    if (errors[s])
      return fail("PS shard " + std::to_string(s) + " at " + remotes_[s]->address() + ": " + describe(errors[s])
                  + "; a coordinator with --checkpoint-dir needs every shard started with --checkpoint-dir (each "
                  "shard writes its own slices there)");
  return caf::none;
}

caf::expected<shard_set> shard_checkpoints::write(int64_t step, const std::vector<uint64_t>& kept_steps) {
  shard_set set;
  set.count = static_cast<uint32_t>(remotes_.size());
  set.id = new_set_id();
  set.files.resize(remotes_.size());
  std::vector<caf::error> errors(remotes_.size());
  ps_.for_each_shard([&](int s) {
    const auto i = static_cast<size_t>(s);
    auto file = remotes_[i]->checkpoint(
      {{static_cast<uint32_t>(s), set.count, static_cast<uint64_t>(step), set.id}, true, kept_steps});
    if (file) set.files[i] = std::move(*file);
    else errors[i] = file.error();
  });
  for (size_t s = 0; s < errors.size(); ++s)
    if (errors[s]) return fail("PS shard " + std::to_string(s) + " checkpointing: " + describe(errors[s]));
  return set;
}

caf::error shard_checkpoints::restore(checkpoint& ck, std::deque<parameter>& params, const std::string& dir) {
  if (ck.shards.count != remotes_.size()) return read_set_moments(dir, ck);
  std::vector<parameter*> all;
  for (auto& p : params) all.push_back(&p);
  product_split cut;
  cut.attach(all, static_cast<int>(remotes_.size()));
  std::vector<caf::error> errors(remotes_.size());
  ps_.for_each_shard([&](int s) {
    const auto i = static_cast<size_t>(s);
    std::vector<shard_slice> mine;
    for (size_t id = 0; id < all.size(); ++id) mine.push_back(cut.slice(id, i));
    errors[i] = remotes_[i]->restore({static_cast<uint32_t>(s), ck.shards.count, ck.step, ck.shards.id},
                                     ck.shards.files[i], all, mine);
  });
  for (size_t s = 0; s < errors.size(); ++s)
    if (errors[s]) {
      for (auto* r : remotes_) r->drop_restore();
      return fail("PS shard " + std::to_string(s) + " cannot load " + ck.shards.files[s].name + ": "
                  + describe(errors[s]));
    }
  return caf::none;
}

caf::error read_set_moments(const std::string& dir, checkpoint& ck) {
  const auto& set = ck.shards;
  std::vector<tensor> m(ck.parameters.size()), v(ck.parameters.size());
  std::vector<int64_t> covered(ck.parameters.size(), 0);  // where the next shard's range must begin
  std::vector<int> axis(ck.parameters.size(), -1);
  for (size_t i = 0; i < ck.parameters.size(); ++i) {
    m[i].resize(ck.parameters[i].value.rows(), ck.parameters[i].value.cols());
    v[i].resize(ck.parameters[i].value.rows(), ck.parameters[i].value.cols());
  }
  for (uint32_t s = 0; s < set.count; ++s) {
    const auto& ref = set.files[s];
    const std::string path = (std::filesystem::path(dir) / ref.name).string();
    auto file = read_shard_checkpoint(path);
    if (!file)
      return fail(describe(file.error()) + " (with another shard count than the set's "
                  + std::to_string(set.count) + ", the coordinator reads the set's shard files from its own "
                  "--checkpoint-dir)");
    const auto& h = file->header;
    if (file->file.checksum != ref.checksum || file->file.bytes != ref.bytes)
      return fail(path + " has checksum " + std::to_string(file->file.checksum) + " and "
                  + std::to_string(file->file.bytes) + " bytes, its set names " + std::to_string(ref.checksum)
                  + " and " + std::to_string(ref.bytes));
    if (h.step != ck.step || h.set_id != set.id || h.shard != s || h.shards != set.count)
      return fail(path + " was written for another set (step, set id or shard)");
    if (file->slices.size() != ck.parameters.size())
      return fail(path + " holds " + std::to_string(file->slices.size()) + " parameters, its set "
                  + std::to_string(ck.parameters.size()));
    for (size_t i = 0; i < file->slices.size(); ++i) {
      const auto& e = file->slices[i];
      const tensor& whole = ck.parameters[i].value;
      const int64_t extent = e.axis == 0 ? whole.cols() : whole.rows();
      if (e.full_rows != whole.rows() || e.full_cols != whole.cols() || e.begin != covered[i] || e.end > extent
          || (axis[i] >= 0 && axis[i] != e.axis))
        return fail(path + ": parameter " + ck.parameters[i].name + "'s slice does not continue its tensor");
      const shard_slice where{static_cast<shard_axis>(e.axis), {e.begin, e.end}};
      copy_in(e.adam_m, where, m[i]);
      copy_in(e.adam_v, where, v[i]);
      covered[i] = e.end;
      axis[i] = e.axis;
    }
  }
  for (size_t i = 0; i < ck.parameters.size(); ++i) {
    const tensor& whole = ck.parameters[i].value;
    if (set.count == 0 || covered[i] != (axis[i] == 0 ? whole.cols() : whole.rows()))
      return fail("the set's shard files leave part of parameter " + ck.parameters[i].name + " uncovered");
    ck.parameters[i].adam_m = std::move(m[i]);
    ck.parameters[i].adam_v = std::move(v[i]);
  }
  return caf::none;
}

}  // namespace cleave
