#include "actors/ps/modellet/modellet_report.hpp"

namespace cleave {

nlohmann::json modellet_report(const modellet_ps& ps, double samples) {
  nlohmann::json ranges = nlohmann::json::array();
  for (const auto& r : ps.ranges()) ranges.push_back({{"device", r.device}, {"begin", r.begin}, {"end", r.end}});
  nlohmann::json failures = nlohmann::json::array();
  int64_t lost_rows = 0;
  double seconds = 0;
  for (const auto& f : ps.failures()) {
    nlohmann::json moved = nlohmann::json::array();
    for (size_t i = 0; i < f.ranges.size(); ++i)
      moved.push_back({{"begin", f.ranges[i].first}, {"end", f.ranges[i].second}, {"to", f.moved_to[i]}});
    failures.push_back({{"device", f.device},
                        {"step", f.step},
                        {"ranges", moved},
                        {"lost_steps", f.lost_steps},
                        {"lost_row_updates", f.lost_rows},
                        {"seconds", f.seconds}});
    lost_rows += f.lost_rows;
    seconds += f.seconds;
  }
  const auto& t = ps.traffic();
  const double per = samples > 0 ? 1.0 / samples : 0;
  return {{"ranges", ranges},
          {"copy_every", ps.copy_every()},
          {"failures", failures},
          {"lost_row_updates", lost_rows},
          {"failure_seconds", seconds},
          {"step_bytes_per_sample", t.step_bytes * per},
          {"copy_bytes_per_sample", t.copy_bytes * per},
          {"place_bytes_per_sample", t.place_bytes * per},
          {"bytes_per_sample", (t.step_bytes + t.copy_bytes + t.place_bytes) * per}};
}

void add_exchange_time(nlohmann::json& report, const modellet_exchange_time& t, int64_t steps) {
  const double per = steps > 0 ? 1.0 / static_cast<double>(steps) : 0;
  report["exchange_seconds_per_step"] = t.wall_seconds * per;
  report["link_seconds_per_step"] = t.link_seconds * per;
}

}  // namespace cleave
