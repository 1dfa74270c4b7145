#include "actors/ps/shards/shard_process_report.hpp"

#include <spdlog/spdlog.h>

#include "schema/errors.hpp"

namespace cleave {

void shard_process_report::training_done() {
  for (auto* r : remotes_) {
    trained_traffic_.push_back(r->traffic());
    auto st = r->stats();
    trained_stats_.push_back(st ? std::optional<shard_stats>{*st} : std::nullopt);
  }
}

nlohmann::json shard_process_report::per_shard(int64_t steps) const {
  auto out = nlohmann::json::array();
  const auto memory = store_.shard_bytes();
  const double per_step = steps > 0 ? static_cast<double>(steps) : 1.0;
  for (size_t s = 0; s < remotes_.size(); ++s) {
    const auto all = remotes_[s]->traffic();
    const auto attach = remotes_[s]->traffic_after_attach();
    const auto trained = s < trained_traffic_.size() ? trained_traffic_[s] : all;
    nlohmann::json one = {
      {"shard", s},
      {"address", remotes_[s]->address()},
      {"bytes_to_shard", all.bytes_sent},
      {"bytes_from_shard", all.bytes_received},
      {"attach_bytes", attach.bytes_sent},
      {"bytes_to_shard_per_step", static_cast<double>(trained.bytes_sent - attach.bytes_sent) / per_step},
      {"bytes_from_shard_per_step", static_cast<double>(trained.bytes_received - attach.bytes_received) / per_step},
      {"memory_bytes", memory[s]}};
    if (auto st = remotes_[s]->stats()) {
      one["shard_peak_rss_bytes"] = st->peak_rss_bytes;
      one["shard_bytes_in"] = st->bytes_in;
      one["shard_bytes_out"] = st->bytes_out;
      const bool trained_known = s < trained_stats_.size() && trained_stats_[s];
      add_shard_device_stats(one, trained_known ? *trained_stats_[s] : *st);
    } else {
      spdlog::warn("PS shard {} gave no statistics: {}", s, describe(st.error()));
    }
    out.push_back(std::move(one));
  }
  return out;
}

void add_shard_device_stats(nlohmann::json& one, const shard_stats& st) {
  one["bytes_down"] = st.bytes_down;
  one["bytes_up"] = st.bytes_up;
  one["tiles"] = st.tiles;
  one["local_gemms"] = st.local_gemms;
  one["issue_seconds"] = st.issue_seconds;
  one["wait_seconds"] = st.wait_seconds;
  one["egress_seconds"] = st.egress_seconds;
  one["ingress_seconds"] = st.ingress_seconds;
}

}  // namespace cleave
