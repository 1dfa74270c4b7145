#pragma once
// Dense data-parallel training over a fleet's links, live (--model=xc
// --xc-baseline=data-parallel): the baseline D-SLIDE is measured against.
// Every device would hold the whole model and take 1/N of the batch; after
// backward the replicas' gradients are summed over a ring, and every replica
// applies the same AdamW. Emulated on one host: the whole batch's gradient
// is computed once (it is the sum of the N replicas' gradients, so the
// trajectory is the single-process run's), and the ring's time on the
// devices' links is held as wall time before the update, as link pacing
// holds frames.
//
// Which gradients cross the ring, as Horovod moves them:
// - every parameter the step updates whole (the hidden bias, the output
//   layer's weights and bias): a ring all-reduce of its bytes;
// - a row-sparse parameter (the sparse input layer, an embedding): the rows
//   the step touched, each with its 4-byte row id, all-gathered over the
//   ring, as Horovod does with TensorFlow's IndexedSlices. The rows counted
//   are the whole batch's union, a lower bound of what the replicas'
//   slices add up to (a row two replicas touch travels twice), so this
//   favours the baseline. All-reducing the whole layer instead (the simple
//   baseline) is reported alongside, not timed.

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "schema/profile.hpp"
#include "training/models/parameter.hpp"
#include "training/parameter_store.hpp"

namespace cleave {

struct gradient_exchange {
  double allreduce_bytes = 0;      // gradients all-reduced whole
  double allgather_bytes = 0;      // touched rows (values and ids) all-gathered
  double sparse_whole_bytes = 0;   // the row-sparse parameters whole: the alternative, untimed
  double allreduce_seconds = 0;    // ring all-reduce of allreduce_bytes
  double allgather_seconds = 0;    // ring all-gather of allgather_bytes
  double bytes_per_device = 0;     // each device sends (and receives) this much
  double seconds() const { return allreduce_seconds + allgather_seconds; }
  gradient_exchange& operator+=(const gradient_exchange& o);
};

// One step's gradient exchange over `ring` (in ring order), for the
// parameters as the step left them (touched_rows current).
gradient_exchange plan_gradient_exchange(const std::vector<parameter*>& params,
                                         const std::vector<const device_profile*>& ring);

// What the runs' steps exchanged, summed.
struct data_parallel_totals {
  int64_t steps = 0;
  gradient_exchange sum;   // bytes and seconds, summed over steps
  double held_seconds = 0;  // wall time the holds really took
};

// The local store, whose gradient reduction also holds the ring's time.
class data_parallel_store final : public local_parameter_store {
 public:
  // hold: waits that long (the default sleeps); tests may count instead.
  explicit data_parallel_store(std::vector<device_profile> ring,
                               std::function<void(double)> hold = sleep_seconds);

  double reduce_gradients() override;

  const data_parallel_totals& totals() const { return totals_; }
  const std::vector<device_profile>& ring() const { return ring_; }

  static void sleep_seconds(double s);

 private:
  std::vector<device_profile> ring_;
  std::vector<const device_profile*> order_;
  std::function<void(double)> hold_;
  data_parallel_totals totals_;
};

// The report's "data_parallel" section: per step, the bytes and seconds of
// the exchange, the time really held, and the rest of the mean step (this
// host's compute of the whole batch); whether a replica's state fits.
nlohmann::json data_parallel_report(const data_parallel_store& store, int64_t parameters, double mean_step_seconds);

}  // namespace cleave
