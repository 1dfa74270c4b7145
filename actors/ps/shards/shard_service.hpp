#pragma once
// A `--role=ps-shard` process's work, frame in, frame out
// (schema/shard_codec.hpp): its slices in a shard_store, products on the
// local GEMM. Pure: the actor that moves frames (shard_server.hpp) holds no
// logic, and tests feed this class bytes directly. A request it cannot
// decode or does not accept (hostile or out of order) gets a `refused`
// answer with the reason; nothing a peer sends makes it throw.

#include <cstdint>
#include <string>
#include <vector>

#include "actors/ps/shards/shard_devices.hpp"
#include "actors/ps/shards/shard_store.hpp"
#include "schema/shard_codec.hpp"
#include "schema/shard_parts.hpp"

namespace cleave {

struct shard_answer {
  shard_kind kind = shard_kind::done;
  std::vector<char> payload;
};

class shard_service {
 public:
  // Answers longer than part_bytes go out in parts.
  explicit shard_service(uint64_t part_bytes = shard_part_bytes) : part_bytes_(part_bytes) {}
  // The answer to one request; `stats` counts the payload bytes of every
  // request before it and of every answer but its own.
  shard_answer handle(uint16_t kind, const char* data, size_t size);
  bool attached() const { return attached_; }
  // Its coordinator is gone without ending the job: the slices stay, but
  // nothing uses them until a coordinator attaches or restores again, and a
  // request left in parts is dropped.
  void coordinator_lost();
  // Where checkpoint requests write this shard's slices and restore
  // requests read them (--checkpoint-dir); empty: both are refused.
  void set_checkpoint_dir(std::string dir) { checkpoint_dir_ = std::move(dir); }
  const shard_store& store() const { return store_; }
  // A shard with a device edge (--edge): its products run on their engine.
  void use_devices(shard_devices* devices) { devices_ = devices; }
  bool fleet_configured() const { return devices_ != nullptr && devices_->engine() != nullptr; }

 private:
  shard_answer answer_to(uint16_t kind, const char* data, size_t size);
  // A request's piece: `done` until the request is whole, then its answer.
  shard_answer take_part(const char* data, size_t size);
  // The next piece of the answer in parts.
  shard_answer next_part();
  // The answer itself, or its first part when it is longer than part_bytes_.
  shard_answer send(shard_answer whole);
  caf::expected<shard_answer> attach(const char* data, size_t size);
  caf::expected<shard_answer> products(const char* data, size_t size);
  caf::expected<shard_answer> add_grads(const char* data, size_t size);
  caf::expected<shard_answer> update(const char* data, size_t size);
  shard_answer moments() const;
  caf::expected<shard_answer> checkpoint(const char* data, size_t size);
  caf::expected<shard_answer> restore(const char* data, size_t size);

  shard_store store_;
  shard_devices* devices_ = nullptr;
  bool attached_ = false;
  std::string checkpoint_dir_;
  std::vector<std::pair<int64_t, int64_t>> full_shapes_;  // by parameter id: for the checkpoint files
  uint64_t part_bytes_;
  shard_part_assembler incoming_;
  shard_answer outgoing_;  // an answer in parts, sent up to outgoing_offset_
  uint64_t outgoing_offset_ = 0;
  uint64_t bytes_in_ = 0, bytes_out_ = 0;
};

}  // namespace cleave
