#pragma once
// The PS's side of model-lets (D-SLIDE): the xc model's output layer as
// ranges on devices (modellet_link.hpp), over any transport that carries the
// device edge's model-let frames. Pure apart from the transport: the actor
// transport (modellet_transport.hpp) sends the frames to emulated devices;
// tests call the devices' services directly.
//
// A step: ml_forward to every range (the hidden activations and the range's
// labels), ml_scores back; the exact softmax over the union (merged partial
// stats, softmax_combine.hpp); ml_grads down, ml_hidden_grad back, summed
// in range order; then, after the global clip scale is known, ml_update.
//
// Durability: a periodic copy at the PS. Every copy_every steps the PS pulls
// every range's values and moments (ml_copy) into out.w and out.b. A device
// that does not answer (killed, or silent past the timeout) is declared
// lost, and each range it held is placed again from that copy on the
// surviving device with the least work per FLOP/s; the step then starts
// over. The failure costs the range's updates since its last copy (steps
// and rows reported), the time to detect, place and redo, and the re-placing
// traffic. No replica: a replica would double every update's traffic and a
// device's memory for a layer that a copy every K steps already bounds.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "actors/device/modellet_service.hpp"
#include "actors/planner/modellet_split.hpp"
#include "training/models/modellet_link.hpp"

namespace cleave {

// The device channel's frame header (actors/transport/frame.hpp), counted
// with every frame's payload in the traffic figures.
inline constexpr uint64_t modellet_frame_header_bytes = 24;

struct ml_request {
  int32_t device = 0;
  int32_t slot = 0;  // which of the device's model-lets: its range's begin
  uint16_t kind = 0;
  std::vector<char> payload;
};

class modellet_transport {
 public:
  virtual ~modellet_transport() = default;
  // Every request in flight at once; the answer to each, in order, or an
  // error for a device that did not answer (gone, or past the timeout).
  virtual std::vector<caf::expected<ml_frame>> exchange(std::vector<ml_request> requests) = 0;
};

struct modellet_ps_options {
  // min_active: the whole layer's (0: 0.5% of it), and bucket_size, a
  // bucket of the whole layer's: each shared out by range size, so that the
  // union of the ranges' buckets holds about what one index's would.
  modellet_sampling sampling;
  int64_t copy_every = 50;     // steps between copies at the PS; 0: only at sync()
  uint64_t frame_cap = default_modellet_frame_cap;
  int attempts = 4;            // tries of a step before the run gives up
};

// One lost device, as the report shows it.
struct modellet_failure {
  int32_t device = -1;
  int64_t step = 0;          // the step being computed when it was found lost
  std::vector<std::pair<int32_t, int32_t>> ranges;  // [begin, end) it held
  std::vector<int32_t> moved_to;                    // the device each went to
  int64_t lost_steps = 0;    // steps of updates lost, the most over its ranges
  int64_t lost_rows = 0;     // row updates lost (the ranges' rows x steps since their copy)
  double seconds = 0;        // detection (the failed exchange) plus re-placing
};

struct modellet_traffic {
  double step_bytes = 0;   // forward, scores, grads, hidden grads, updates
  double copy_bytes = 0;   // periodic copies and syncs
  double place_bytes = 0;  // placing, and placing again after a failure
};

class modellet_ps final : public modellet_link {
 public:
  // fleet: the devices' profiles (index = the transport's device number).
  // place() cuts the layer by modellet_split over them.
  modellet_ps(std::vector<device_profile> fleet, modellet_transport& transport, modellet_ps_options opts);

  void place(parameter& w, parameter& b, int64_t step) override;
  modellet_step train(const tensor& h, const label_rows& labels, int64_t step, tensor& dh) override;
  void update(const adamw_config& cfg, int64_t t, double grad_scale) override;
  void sync() override;

  const std::vector<modellet_failure>& failures() const { return failures_; }
  const modellet_traffic& traffic() const { return traffic_; }
  int64_t copy_every() const { return opts_.copy_every; }
  // Where each range is now.
  std::vector<modellet_range> ranges() const;

 private:
  struct shard {
    int32_t begin = 0, end = 0;
    int32_t device = 0;
    int64_t copy_step = 0;  // the PS's copy of this range is as of this step
    int32_t min_active = 1;
    int32_t bucket_size = 1;
  };

  modellet_state slice(const shard& s) const;
  std::vector<char> place_frame(const shard& s) const;
  // Sends one frame per shard (made by `make`); returns the answers, or the
  // shards whose device did not answer (their devices lost, ranges placed
  // again). A device that answers ml_error, or with the wrong kind, throws:
  // that is a fault, not churn.
  template <class Make>
  std::vector<ml_frame> round(uint16_t kind, uint16_t want, Make make, double& bytes,
                              std::vector<size_t>& lost);
  // The devices of these shards are lost: every range they held is placed
  // again from the PS's copy on a survivor.
  void lose(const std::vector<size_t>& shards, double detect_seconds);

  std::vector<shard> shards_;
  std::vector<device_profile> fleet_;
  std::vector<double> speeds_;
  std::vector<bool> dead_;
  modellet_transport& transport_;
  modellet_ps_options opts_;
  parameter* w_ = nullptr;
  parameter* b_ = nullptr;
  int64_t steps_done_ = 0;  // optimizer steps the devices have applied
  int64_t computing_ = 0;   // the step in progress (for the failure log)
  std::vector<modellet_failure> failures_;
  modellet_traffic traffic_;
};

}  // namespace cleave
