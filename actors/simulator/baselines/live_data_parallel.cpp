#include "actors/simulator/baselines/live_data_parallel.hpp"

#include <algorithm>
#include <thread>

#include <spdlog/spdlog.h>

#include "actors/simulator/baselines/baseline.hpp"

namespace cleave {

gradient_exchange plan_gradient_exchange(const std::vector<parameter*>& params,
                                         const std::vector<const device_profile*>& ring) {
  gradient_exchange out;
  for (const auto* p : params) {
    const double whole = 4.0 * static_cast<double>(p->grad.rows()) * static_cast<double>(p->grad.cols());
    if (!p->row_sparse) {
      out.allreduce_bytes += whole;
      continue;
    }
    out.sparse_whole_bytes += whole;
    out.allgather_bytes += static_cast<double>(p->touched_rows.size()) * (4.0 * static_cast<double>(p->grad.cols()) + 4.0);
  }
  out.allreduce_seconds = ring_allreduce_seconds(out.allreduce_bytes, ring);
  // A ring all-gather is the all-reduce's second half: n - 1 rounds of the
  // same hops, each member passing on one member's share.
  out.allgather_seconds = ring_allreduce_seconds(out.allgather_bytes, ring) / 2;
  out.bytes_per_device = ring_allreduce_bytes(out.allreduce_bytes, ring.size())
                         + ring_allreduce_bytes(out.allgather_bytes, ring.size()) / 2;
  return out;
}

gradient_exchange& gradient_exchange::operator+=(const gradient_exchange& o) {
  allreduce_bytes += o.allreduce_bytes;
  allgather_bytes += o.allgather_bytes;
  sparse_whole_bytes += o.sparse_whole_bytes;
  allreduce_seconds += o.allreduce_seconds;
  allgather_seconds += o.allgather_seconds;
  bytes_per_device += o.bytes_per_device;
  return *this;
}

data_parallel_store::data_parallel_store(std::vector<device_profile> ring, std::function<void(double)> hold)
    : ring_(std::move(ring)), hold_(std::move(hold)) {
  for (const auto& d : ring_) order_.push_back(&d);
}

void data_parallel_store::sleep_seconds(double s) {
  if (s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

double data_parallel_store::reduce_gradients() {
  const double sum_of_squares = local_parameter_store::reduce_gradients();
  // The replicas' gradients are summed now, before anyone can clip or update.
  const auto x = plan_gradient_exchange(params_, order_);
  const auto started = std::chrono::steady_clock::now();
  hold_(x.seconds());
  totals_.held_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ++totals_.steps;
  totals_.sum += x;
  return sum_of_squares;
}

nlohmann::json data_parallel_report(const data_parallel_store& store, int64_t parameters, double mean_step_seconds) {
  const auto& t = store.totals();
  const double per = t.steps > 0 ? 1.0 / static_cast<double>(t.steps) : 0;
  std::vector<const device_profile*> order;
  uint64_t smallest = store.ring().empty() ? 0 : store.ring().front().memory_bytes;
  for (const auto& d : store.ring()) {
    order.push_back(&d);
    smallest = std::min(smallest, d.memory_bytes);
  }
  const auto link = slowest_ring_link(order);
  // Every replica holds the whole model, which is sized only once its data is loaded.
  const uint64_t state = state_bytes(static_cast<uint64_t>(parameters));
  if (state > smallest)
    spdlog::warn("data-parallel: a replica's state ({:.2f} GB) exceeds the smallest device's memory ({:.2f} GB)",
                 static_cast<double>(state) / 1e9, static_cast<double>(smallest) / 1e9);
  return {{"devices", store.ring().size()},
          {"ring_bytes_per_second", link.bytes_per_second},
          {"ring_latency_seconds", link.latency},
          {"input_layer", "touched rows all-gathered (Horovod's IndexedSlices)"},
          {"allreduce_bytes_per_step", t.sum.allreduce_bytes * per},
          {"allgather_bytes_per_step", t.sum.allgather_bytes * per},
          {"input_layer_whole_bytes_per_step", t.sum.sparse_whole_bytes * per},
          {"bytes_per_device_per_step", t.sum.bytes_per_device * per},
          {"allreduce_seconds_per_step", t.sum.allreduce_seconds * per},
          {"allgather_seconds_per_step", t.sum.allgather_seconds * per},
          {"exchange_seconds_per_step", t.sum.seconds() * per},
          {"held_seconds_per_step", t.held_seconds * per},
          {"compute_seconds_per_step", mean_step_seconds - t.held_seconds * per},
          {"state_bytes_per_device", state},
          {"fits_device_memory", state <= smallest}};
}

}  // namespace cleave
