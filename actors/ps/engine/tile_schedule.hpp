#pragma once
// When the tiles of a batch of GEMMs in flight move, and where: the clock's
// decisions (the tile timeout, the moment speculation starts) and a lost
// device's tiles. Pure: it sees the tiles as tile_policy does and answers
// with actions. distributed_gemm applies them to real tasks; the simulator
// (actors/simulator/) applies them in virtual time, so both decide alike.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "actors/ps/engine/tile_policy.hpp"

namespace cleave {

struct schedule_options {
  // A batch is late once it ran timeout_factor x its predicted time and then
  // nothing progressed for tile_timeout_seconds (the slack): the PS computes
  // what is left. Relative to the prediction, so a batch that honestly takes
  // minutes (5 MB/s uplinks) is not given up on, and one predicted in
  // milliseconds is after the slack of silence.
  double tile_timeout_seconds = 30;
  double timeout_factor = 4;
  // A batch running past speculate_factor x its predicted time (and at least
  // speculate_min_seconds) gives copies of its unfinished tiles to idle
  // devices. 0 disables speculation.
  double speculate_factor = 3;
  double speculate_min_seconds = 0.05;
};

enum class schedule_action_kind : uint8_t {
  drop,       // `device` no longer holds the tile (a copy still runs elsewhere)
  send,       // the tile goes to `device` with all its operands (it lost its holder)
  here,       // no device can take the tile: the PS computes it
  timed_out,  // the tile's holders are given up on: the PS computes it
  copy,       // a speculative copy goes to `device` (operands it holds are not re-sent)
};

const char* to_string(schedule_action_kind k);

struct schedule_action {
  schedule_action_kind kind = schedule_action_kind::send;
  size_t call = 0;  // which GEMM of the batch
  size_t tile = 0;
  int32_t device = -1;
  bool operator==(const schedule_action& o) const {
    return kind == o.kind && call == o.call && tile == o.tile && device == o.device;
  }
};

// What the schedule was told, and what it answered: for comparing the live
// engine with the simulator on the same events.
enum class schedule_input : uint8_t {
  batch,   // a batch of GEMMs issued: `send` to each tile's first holder, `here` for the others
  result,  // tile `tile` of `call` finished, from `device`
  lost,    // `device` left (dead, suspected or quarantined)
  clock,   // a deadline passed
};

struct schedule_record {
  schedule_input input = schedule_input::batch;
  double at = 0;  // seconds since the batch was issued
  size_t call = 0, tile = 0;
  int32_t device = -1;
  std::vector<schedule_action> actions;
  double predicted_seconds = 0;          // batch: what its plans predict
  std::vector<policy_device> members;    // batch: the devices the engine may use
};

using schedule_log = std::vector<schedule_record>;
using batch_view = std::vector<std::vector<policy_tile>>;  // by call, by tile

class tile_schedule {
 public:
  // A batch issued at `now` (seconds, any epoch) as `issued` shows to the
  // members `policy` knows, whose plans predict `predicted_seconds`; `log`,
  // when given, records every input and answer.
  tile_schedule(schedule_options opts, double now, double predicted_seconds,
                const batch_view& issued, const tile_policy& policy, schedule_log* log = nullptr);

  // When on_clock next has something to do: the batch being late (see
  // schedule_options), or the start of speculation while it is ahead.
  double deadline() const;

  // Tile `tile` of `call` came back from `device` (its result was taken).
  void result(double now, size_t call, size_t tile, int32_t device);

  // The clock reached `now` (after any message): every unfinished tile still
  // held is timed out when the batch is late; else,
  // once, the speculation: policy.speculate's copies for each GEMM. The
  // actions are applied to `view` too.
  std::vector<schedule_action> on_clock(double now, batch_view& view, const tile_policy& policy);

  // `device` left: it is dropped from each unfinished tile it holds, and a
  // tile left with no holder goes to take_over (or the PS), in call and tile
  // order. The actions are applied to `view` too.
  std::vector<schedule_action> on_device_lost(double now, int32_t device, batch_view& view,
                                              const tile_policy& policy);

  // Tile t lost its last holder: take_over's device with all its operands,
  // or the PS. Applied to `tiles`.
  static schedule_action reassign(std::vector<policy_tile>& tiles, size_t call, size_t t,
                                  const tile_policy& policy);

 private:
  void record(schedule_input in, double now, size_t call, size_t tile, int32_t device,
              const std::vector<schedule_action>& actions);

  schedule_options opts_;
  double start_;
  double speculate_at_;
  double late_after_;  // start + timeout_factor x the prediction
  double last_progress_;
  bool speculated_ = false;
  schedule_log* log_;
};

}  // namespace cleave
