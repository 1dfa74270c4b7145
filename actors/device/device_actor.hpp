#pragma once
// A device: joins through the planner, heartbeats to the detector, computes
// the sub-GEMM tiles it is sent and keeps a bounded cache of operand blocks.
// An emulated device (in-process fleet) also paces its replies so its tile
// times follow its declared profile, and obeys emulated churn: (hang_atom)
// makes it silent, (slow_atom, factor) slows its pacing, (crash_atom) makes
// it die on its next tile (or model-let frame), with that work in hand.
// Its model-let frames are paced too: their answers leave after the frames'
// link time and the device's compute (device_actor.cpp, run_modellet_frame). (get_atom) answers its
// fleet id. (run_over_atom) ends it with exit_reason::normal: any other exit
// reason means it lost its planner, was refused, or was quarantined
// ((quarantine_atom, why) from the planner). A remote device's planner
// and detector are its edge link (edge_link.hpp), which carries everything
// over the device edge's frames; the actor does not know the difference.

#include <functional>
#include <map>
#include <memory>
#include <vector>

#include <caf/all.hpp>

#include "actors/device/block_cache.hpp"
#include "actors/device/device_protocol.hpp"
#include "actors/device/lies.hpp"
#include "actors/device/modellet_service.hpp"

namespace cleave {

// A paced model-let answer is due (device_state::paced_answers).
using modellet_due_atom = caf::atom_constant<caf::atom("mlDue")>;

struct device_options {
  device_profile profile;
  bool paced = true;                  // delay replies to follow the profile
  double heartbeat_seconds = 0.1;
  uint64_t cache_bytes = 0;           // 0: half the declared memory, at most 1 GiB
  int32_t fleet_index = -1;           // in-process fleets: asked for as the device's id
  // In-process fleets: finds the planner's successor after a restart (the
  // registry's "planner"); without it a device leaves with its planner.
  std::function<caf::actor()> find_planner;
  // Fault injection, for testing the PS's verification (lies.hpp): empty is
  // an honest device. The liar's draws are seeded from (lie_seed, fleet_index).
  std::vector<lie> lies;
  uint64_t lie_seed = 0;
};

struct device_state {
  int32_t id = -1;
  device_options opts;
  block_cache cache{0};
  caf::actor planner;
  caf::actor detector;
  bool ticking = false;       // the heartbeat loop is running
  caf::timestamp busy_until;  // paced work already promised
  bool hung = false;          // emulated churn: silent, no heartbeats, no answers
  double slowdown = 1;        // emulated churn: paced times multiplied by this
  bool crash_on_task = false;  // emulated churn: die on receiving the next tile
  // Set only when opts.lies is not empty. Shared with the exit hook that
  // logs what it told, which runs after the state is gone.
  std::shared_ptr<cleave::liar> lies;
  // Sparse mode: the model-lets this device holds, by slot (a range's begin).
  std::map<int32_t, modellet_service> modellets;
  // Paced model-let answers computed but not yet due, by sequence number.
  struct paced_answer {
    caf::typed_response_promise<uint16_t, std::vector<char>> promise;
    ml_frame answer;
  };
  std::map<uint64_t, paced_answer> paced_answers;
  uint64_t paced_seq = 0;
  static inline const char* name = "cleave.device";
};

caf::behavior device_actor(caf::stateful_actor<device_state>* self, device_options opts,
                           caf::actor planner);

}  // namespace cleave
