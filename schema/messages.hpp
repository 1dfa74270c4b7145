#pragma once
// Messages between Cleave's actors. Every type here has an inspect overload
// and is registered with CAF by add_cleave_message_types(), so it can cross
// a process boundary; no actor may assume its peer is local.
//
// message_schema_version is exchanged when a device joins: peers with another
// version are refused rather than misread.

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/meta/type_name.hpp>

#include "schema/fleet_member.hpp"
#include "schema/profile.hpp"
#include "schema/wire_precision.hpp"

namespace cleave {

// 9: tile tasks and results carry the wire's precision (--wire), a byte
// before their values. (bf16-operands, 2, needs no new version: a task's
// byte of 2 is refused by older peers as an unknown precision.)
inline constexpr uint32_t message_schema_version = 9;

// Largest operand or result block a peer accepts (elements): the planner never
// makes a bigger tile, so anything larger is malformed.
inline constexpr int64_t max_block_elements = int64_t{1} << 28;

using join_atom = caf::atom_constant<caf::atom("join")>;
using welcome_atom = caf::atom_constant<caf::atom("welcome")>;
using task_atom = caf::atom_constant<caf::atom("task")>;
using result_atom = caf::atom_constant<caf::atom("result")>;
using miss_atom = caf::atom_constant<caf::atom("miss")>;
using heartbeat_atom = caf::atom_constant<caf::atom("heartbeat")>;
using tick_atom = caf::atom_constant<caf::atom("tick")>;
using fleet_atom = caf::atom_constant<caf::atom("fleet")>;
using event_atom = caf::atom_constant<caf::atom("event")>;
using subscribe_atom = caf::atom_constant<caf::atom("subscribe")>;
using watch_atom = caf::atom_constant<caf::atom("watch")>;
// Emulated churn, obeyed only by paced (in-process, emulated) devices.
using churn_atom = caf::atom_constant<caf::atom("churn")>;
using hang_atom = caf::atom_constant<caf::atom("hang")>;
using slow_atom = caf::atom_constant<caf::atom("slow")>;
using crash_atom = caf::atom_constant<caf::atom("crash")>;
// A model-let frame (schema/modellet_codec.hpp) to an in-process device:
// (modellet_atom, slot, kind, payload, sent_at_ns) -> (kind, payload).
// sent_at_ns: when the PS sent it (caf::make_timestamp, ns since the epoch;
// 0: unknown), so an emulated device paces from the sending, not from when
// the shared host got round to it; the device edge carries no such time.
using modellet_atom = caf::atom_constant<caf::atom("modellet")>;
using rejoin_atom = caf::atom_constant<caf::atom("rejoin")>;
// The ps to each device at the end of a run; the device answers ok_atom and
// leaves (its process exits 0 unless --stay).
using run_over_atom = caf::atom_constant<caf::atom("run_over")>;
// An operator's controls (the admin console's POSTs). (drain_atom, device)
// goes to the planner: the device gets no new work. pause, resume and
// checkpoint go to the training loop, which obeys them between steps; the
// loop makes itself known to the console with (control_atom, inbox,
// bool has_checkpoint_dir) and tells it what it did with
// (loop_event_atom, "paused" | "resumed" | "checkpoint", step).
using drain_atom = caf::atom_constant<caf::atom("drain")>;
using pause_atom = caf::atom_constant<caf::atom("pause")>;
using resume_atom = caf::atom_constant<caf::atom("resume")>;
using checkpoint_atom = caf::atom_constant<caf::atom("ckptnow")>;
using control_atom = caf::atom_constant<caf::atom("control")>;
using loop_event_atom = caf::atom_constant<caf::atom("loopevent")>;
// A PS engine to the planner, (quarantine_atom, device, why): the device's
// results failed their checks too often. The planner drops it, tells the
// detector to forget it and the device (or its proxy) that it is out.
using quarantine_atom = caf::atom_constant<caf::atom("quarantin")>;

// A tile is identified by the step, the GEMM's position in that step, and the
// tile's index in the GEMM's plan: the idempotency key.
struct tile_key {
  uint64_t step = 0;
  uint32_t gemm = 0;
  uint32_t tile = 0;
  bool operator==(const tile_key& o) const { return step == o.step && gemm == o.gemm && tile == o.tile; }
  bool operator<(const tile_key& o) const {
    return step != o.step ? step < o.step : gemm != o.gemm ? gemm < o.gemm : tile < o.tile;
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tile_key& x) {
  return f(caf::meta::type_name("tile_key"), x.step, x.gemm, x.tile);
}

// A block of a stored (row-major) matrix. The device multiplies op(block),
// op = transpose when `trans`. The values travel in `data`, or, between
// actors of one process, as a window of a read-only snapshot the PS shares
// with every task of a GEMM (rows x cols at `offset`, row stride `ld`), so
// an in-process device gets its block without a copy. The window is never
// serialised: a remote peer receives the block in `data`. An operand with
// neither means "use the block cached under `key`"; the device answers
// with a miss when it has no such block.
struct operand {
  uint64_t key = 0;  // content hash of (rows, cols, values)
  int64_t rows = 0;
  int64_t cols = 0;
  bool trans = false;
  std::vector<float> data;
  std::shared_ptr<const std::vector<float>> shared = nullptr;
  int64_t offset = 0;
  int64_t ld = 0;

  bool carries_values() const { return shared != nullptr || !data.empty(); }
  // The window lies inside the snapshot (checked before any use of it).
  bool window_valid() const;
  // The block's values, row by row, into out[rows * cols].
  void copy_values(float* out) const;
};

template <class Inspector>
typename std::enable_if<Inspector::reads_state, typename Inspector::result_type>::type
inspect(Inspector& f, operand& x) {
  if (x.shared == nullptr || !x.data.empty())
    return f(caf::meta::type_name("operand"), x.key, x.rows, x.cols, x.trans, x.data);
  std::vector<float> block;
  if (x.window_valid()) {
    block.resize(static_cast<size_t>(x.rows * x.cols));
    x.copy_values(block.data());
  }
  return f(caf::meta::type_name("operand"), x.key, x.rows, x.cols, x.trans, block);
}

template <class Inspector>
typename std::enable_if<Inspector::writes_state, typename Inspector::result_type>::type
inspect(Inspector& f, operand& x) {
  x.shared.reset();
  x.offset = x.ld = 0;
  return f(caf::meta::type_name("operand"), x.key, x.rows, x.cols, x.trans, x.data);
}

// C_tile = op(a) * op(b). `wire`: the wire's mode, so the precision the
// operands' values cross the wire in (operand_precision) and the result must
// come back in (result_precision). With bf16 operands the PS has already
// rounded the values (an operand's floats are bf16 values, widened), so an
// in-process device computes on exactly what a remote one decodes.
struct tile_task {
  tile_key key;
  wire_precision wire = wire_precision::fp32;
  operand a;
  operand b;
  // When the PS sent it (caf::make_timestamp, nanoseconds): an emulated
  // device in the PS's process paces from here, as a device with its own
  // cores would, not from when the shared host got round to running it.
  // Local only: never serialised (another host's clock means nothing here).
  int64_t sent_at_ns = 0;
};

template <class Inspector>
typename std::enable_if<Inspector::reads_state, typename Inspector::result_type>::type
inspect(Inspector& f, tile_task& x) {
  return f(caf::meta::type_name("tile_task"), x.key, x.wire, x.a, x.b);
}

template <class Inspector>
typename std::enable_if<Inspector::writes_state, typename Inspector::result_type>::type
inspect(Inspector& f, tile_task& x) {
  x.sent_at_ns = 0;
  return f(caf::meta::type_name("tile_task"), x.key, x.wire, x.a, x.b);
}

// `wire`: the precision `data` crossed the wire in, fp32 or bf16 (never
// bf16_operands); with bf16 its floats are bf16 values, widened.
struct tile_result {
  tile_key key;
  int32_t device = -1;
  int64_t rows = 0;
  int64_t cols = 0;
  wire_precision wire = wire_precision::fp32;
  std::vector<float> data;
  double busy_seconds = 0;  // the device's time on this tile (paced, for emulated devices)
  uint32_t cache_hits = 0;  // operands served from the device's cache
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tile_result& x) {
  return f(caf::meta::type_name("tile_result"), x.key, x.device, x.rows, x.cols, x.wire, x.data,
           x.busy_seconds, x.cache_hits);
}

// The device evicted (or never had) the operand with this key.
struct tile_miss {
  tile_key key;
  int32_t device = -1;
  uint64_t operand_key = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tile_miss& x) {
  return f(caf::meta::type_name("tile_miss"), x.key, x.device, x.operand_key);
}

// A device asks to join: its profile and the schema version it speaks.
// `preferred_id` (in-process fleets: the device's index) is granted when no
// device ever had it, so a fleet's ids, and with them its plans, do not
// depend on the order devices happened to join in.
struct join_request {
  uint32_t schema_version = message_schema_version;
  device_profile profile;
  int32_t preferred_id = -1;
  relay_seat relay;  // the relay the device joined through, if any
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, join_request& x) {
  return f(caf::meta::type_name("join_request"), x.schema_version, x.profile, x.preferred_id, x.relay);
}

// What the detector publishes to its subscribers.
// quarantined comes from the planner (a PS engine asked for it), not the detector.
enum class fleet_event_kind : uint8_t { join = 0, suspect = 1, dead = 2, rejoin = 3, quarantined = 4 };

struct fleet_event {
  fleet_event_kind kind = fleet_event_kind::join;
  int32_t device = -1;
  double phi = 0;  // suspicion level when the event was raised
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, fleet_event& x) {
  return f(caf::meta::type_name("fleet_event"), x.kind, x.device, x.phi);
}

const char* to_string(fleet_event_kind k);

void add_cleave_message_types(caf::actor_system_config& cfg);

}  // namespace cleave
