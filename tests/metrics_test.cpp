// The console's other view, pure: the Prometheus text of /metrics.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "actors/console/metrics_view.hpp"

using namespace cleave;
using nlohmann::json;

namespace {

json small_document() {
  return json::parse(R"({
    "training": {"step": 12, "loss": 0.5, "seconds": 3.0, "model": "mlp", "tiles": 40,
                 "tiles_verified": 39, "tiles_rejected": 1, "bytes_down": 1000,
                 "per_device": [{"id": 3, "profile": "fast", "tiles": 40, "busy_seconds": 1.5,
                                 "bytes_down": 2500000, "refused": 1}]},
    "fleet": {"version": 7, "devices": [{"id": 3, "profile": "fast", "state": "quarantined", "phi": 0.25}]}
  })");
}

TEST(metrics_view, renders_a_small_document_exactly) {
  EXPECT_EQ(render_metrics(small_document()),
            R"(# HELP cleave_training_step The training step the loop last reported.
# TYPE cleave_training_step gauge
cleave_training_step 12
# HELP cleave_training_loss The training loss at that step.
# TYPE cleave_training_loss gauge
cleave_training_loss 0.5
# HELP cleave_training_seconds Seconds since the training loop started.
# TYPE cleave_training_seconds gauge
cleave_training_seconds 3.0
# HELP cleave_tiles_total Tiles devices completed.
# TYPE cleave_tiles_total counter
cleave_tiles_total 40
# HELP cleave_tiles_verified_total Device results that passed Freivalds' check.
# TYPE cleave_tiles_verified_total counter
cleave_tiles_verified_total 39
# HELP cleave_tiles_rejected_total Device results refused (malformed, not finite, failed the check or outvoted) and computed again.
# TYPE cleave_tiles_rejected_total counter
cleave_tiles_rejected_total 1
# HELP cleave_downlink_bytes_total Bytes sent to devices (operands).
# TYPE cleave_downlink_bytes_total counter
cleave_downlink_bytes_total 1000
# HELP cleave_device_tiles_total Tiles the device completed.
# TYPE cleave_device_tiles_total counter
cleave_device_tiles_total{device="3",profile="fast"} 40
# HELP cleave_device_downlink_bytes_total Bytes sent to the device.
# TYPE cleave_device_downlink_bytes_total counter
cleave_device_downlink_bytes_total{device="3",profile="fast"} 2500000
# HELP cleave_device_busy_seconds_total Seconds the device spent on tiles.
# TYPE cleave_device_busy_seconds_total counter
cleave_device_busy_seconds_total{device="3",profile="fast"} 1.5
# HELP cleave_device_refused_total Results of the device that were refused.
# TYPE cleave_device_refused_total counter
cleave_device_refused_total{device="3",profile="fast"} 1
# HELP cleave_fleet_version The planner's registry version.
# TYPE cleave_fleet_version gauge
cleave_fleet_version 7
# HELP cleave_planner_answered 1 if the planner answered the console, else 0.
# TYPE cleave_planner_answered gauge
cleave_planner_answered 1
# HELP cleave_fleet_devices Devices in the fleet by state.
# TYPE cleave_fleet_devices gauge
cleave_fleet_devices{state="alive"} 0
cleave_fleet_devices{state="dead"} 0
cleave_fleet_devices{state="quarantined"} 1
cleave_fleet_devices{state="suspected"} 0
# HELP cleave_device_phi The failure detector's suspicion level of the device (phi accrual).
# TYPE cleave_device_phi gauge
cleave_device_phi{device="3"} 0.25
# HELP cleave_device_state 1 for the device's state, 0 for the others.
# TYPE cleave_device_state gauge
cleave_device_state{device="3",state="alive"} 0
cleave_device_state{device="3",state="suspected"} 0
cleave_device_state{device="3",state="dead"} 0
cleave_device_state{device="3",state="quarantined"} 1
)");
}

TEST(metrics_view, escapes_label_values) {
  EXPECT_EQ(escape_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  json doc = {{"training", nullptr},
              {"fleet", {{"devices", {{{"id", 1}, {"state", "odd \"one\"\\\n"}}}}}}};
  const auto text = render_metrics(doc);
  EXPECT_NE(text.find("cleave_device_state{device=\"1\",state=\"odd \\\"one\\\"\\\\\\n\"} 1\n"),
            std::string::npos)
    << text;
  EXPECT_NE(text.find("cleave_fleet_devices{state=\"odd \\\"one\\\"\\\\\\n\"} 1\n"), std::string::npos);
}

TEST(metrics_view, leaves_out_what_the_document_lacks) {
  EXPECT_EQ(render_metrics(json()), "");
  EXPECT_EQ(render_metrics(json::object()), "");
  EXPECT_EQ(render_metrics({{"training", nullptr}, {"fleet", nullptr}}), "");
  // A NaN loss arrives as null: no sample rather than a made-up one.
  const auto text = render_metrics({{"training", {{"step", 1}, {"loss", nullptr}}}});
  EXPECT_EQ(text.find("cleave_training_loss"), std::string::npos);
  EXPECT_NE(text.find("cleave_training_step 1\n"), std::string::npos);
  // A planner that did not answer is a 0, and the families it would fill are gone.
  const auto lost = render_metrics({{"fleet", {{"planner_error", "timeout"}}}});
  EXPECT_EQ(lost, "# HELP cleave_planner_answered 1 if the planner answered the console, else 0.\n"
                  "# TYPE cleave_planner_answered gauge\ncleave_planner_answered 0\n");
}

}  // namespace
