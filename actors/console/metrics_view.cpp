#include "actors/console/metrics_view.hpp"

#include <cmath>
#include <map>
#include <utility>
#include <vector>

namespace cleave {

namespace {

using nlohmann::json;

struct sample {
  std::string labels;  // "" or {name="value",...}
  std::string value;
};

// A JSON number as the format writes it; nullopt-like "" for anything else
// (nlohmann writes a NaN loss as null: the sample is left out, not faked).
std::string number(const json& v) {
  if (v.is_boolean()) return v.get<bool>() ? "1" : "0";
  if (v.is_number_integer()) return v.dump();
  if (!v.is_number()) return "";
  const double d = v.get<double>();
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "+Inf" : "-Inf";
  return json(d).dump();  // the shortest text that reads back as the same double
}

std::string label_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

std::string labels(std::initializer_list<std::pair<const char*, std::string>> pairs) {
  std::string out = "{";
  for (const auto& [name, value] : pairs) {
    if (out.size() > 1) out += ',';
    out += name;
    out += "=\"" + escape_label_value(value) + '"';
  }
  return out + "}";
}

std::string escape_help(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

// Every sample of a family goes under its one HELP and TYPE; a family with
// no sample is not written at all.
void write_family(std::string& out, std::string_view name, std::string_view type,
                  std::string_view help, const std::vector<sample>& samples) {
  if (samples.empty()) return;
  out += "# HELP " + std::string(name) + ' ' + escape_help(help) + '\n';
  out += "# TYPE " + std::string(name) + ' ' + std::string(type) + '\n';
  for (const auto& s : samples) out += std::string(name) + s.labels + ' ' + s.value + '\n';
}

// One unlabelled sample from `obj[key]`, if it is there and a number.
std::vector<sample> scalar(const json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key)) return {};
  auto v = number(obj[key]);
  if (v.empty()) return {};
  return {{"", v}};
}

struct scalar_family {
  const char* key;
  const char* name;
  const char* type;
  const char* help;
};

// The training loop's status (the runtime report's accounts so far).
constexpr scalar_family training_families[] = {
  {"step", "cleave_training_step", "gauge", "The training step the loop last reported."},
  {"loss", "cleave_training_loss", "gauge", "The training loss at that step."},
  {"seconds", "cleave_training_seconds", "gauge", "Seconds since the training loop started."},
  {"ps_shards", "cleave_ps_shards", "gauge", "Parameter-server shards."},
  {"tiles", "cleave_tiles_total", "counter", "Tiles devices completed."},
  {"tiles_verified", "cleave_tiles_verified_total", "counter",
   "Device results that passed Freivalds' check."},
  {"tiles_rejected", "cleave_tiles_rejected_total", "counter",
   "Device results refused (malformed, not finite, failed the check or outvoted) and computed again."},
  {"tiles_reassigned", "cleave_tiles_reassigned_total", "counter",
   "Tiles given to another device after theirs failed."},
  {"tiles_timed_out", "cleave_tiles_timed_out_total", "counter", "Tiles unanswered within --tile-timeout."},
  {"speculative_tiles", "cleave_tiles_speculative_total", "counter",
   "Copies of straggling tiles sent to idle devices."},
  {"tiles_at_ps", "cleave_tiles_at_ps_total", "counter", "Tiles the parameter server computed itself."},
  {"local_gemms", "cleave_local_gemms_total", "counter", "Matrix products the planner kept on the parameter server."},
  {"devices_quarantined", "cleave_devices_quarantined", "gauge",
   "Devices given no more tiles after --quarantine-after refused results."},
  {"verify_seconds", "cleave_verify_seconds_total", "counter", "Seconds spent checking device results as they came."},
  {"verify_idle_seconds", "cleave_verify_idle_seconds_total", "counter",
   "Seconds of checking done ahead of the results, while the parameter server waited."},
  {"failures_detected", "cleave_failures_detected_total", "counter", "Device failures the runtime detected."},
  {"recovery_seconds_total", "cleave_recovery_seconds_total", "counter",
   "Seconds spent recovering the tiles of failed devices."},
  {"bytes_down", "cleave_downlink_bytes_total", "counter", "Bytes sent to devices (operands)."},
  {"bytes_up", "cleave_uplink_bytes_total", "counter", "Bytes devices sent back (results)."},
  {"cache_hit_rate", "cleave_cache_hit_ratio", "gauge",
   "Fraction of operands devices already held, so not sent again."},
};

// training.per_device, labelled by device and profile.
constexpr scalar_family device_families[] = {
  {"tiles", "cleave_device_tiles_total", "counter", "Tiles the device completed."},
  {"bytes_down", "cleave_device_downlink_bytes_total", "counter", "Bytes sent to the device."},
  {"bytes_up", "cleave_device_uplink_bytes_total", "counter", "Bytes the device sent back."},
  {"busy_seconds", "cleave_device_busy_seconds_total", "counter", "Seconds the device spent on tiles."},
  {"cache_hits", "cleave_device_cache_hits_total", "counter", "Operands the device already held."},
  {"refused", "cleave_device_refused_total", "counter", "Results of the device that were refused."},
  {"flops", "cleave_device_flop_total", "counter", "Floating-point operations in the tiles the device completed."},
};

// fleet.relays (relay_view.hpp), labelled by relay.
constexpr scalar_family relay_families[] = {
  {"bytes_down", "cleave_relay_downlink_bytes_total", "counter", "Bytes the ps sent to the relay's devices."},
  {"bytes_up", "cleave_relay_uplink_bytes_total", "counter", "Bytes the relay's devices sent the ps."},
  {"store_bytes", "cleave_relay_store_bytes", "gauge", "The relay's operand store (--relay-memory)."},
  {"hit_rate", "cleave_relay_hit_ratio", "gauge",
   "Fraction of the relay's devices' operands the ps only named: the relay's store or the device held them."},
};

// training.shards, labelled by shard.
constexpr scalar_family shard_families[] = {
  {"step", "cleave_ps_shard_step", "gauge", "The step the parameter-server shard is at."},
  {"bytes_down", "cleave_ps_shard_downlink_bytes_total", "counter", "Bytes the shard sent to devices."},
  {"bytes_up", "cleave_ps_shard_uplink_bytes_total", "counter", "Bytes devices sent back to the shard."},
  {"tiles", "cleave_ps_shard_tiles_total", "counter", "Tiles devices completed for the shard."},
  {"memory_bytes", "cleave_ps_shard_memory_bytes", "gauge",
   "Bytes the shard keeps for its parameter slices, their gradients and AdamW moments."},
  {"shard_peak_rss_bytes", "cleave_ps_shard_peak_resident_bytes", "gauge",
   "Peak resident memory of the shard's own process (--role=ps-shard only)."},
  {"egress_seconds", "cleave_ps_shard_egress_wait_seconds_total", "counter",
   "Seconds tasks waited on the shard's paced egress (--pace-ps-link)."},
  {"ingress_seconds", "cleave_ps_shard_ingress_wait_seconds_total", "counter",
   "Seconds results waited on the shard's paced ingress (--pace-ps-link)."},
};

// A family per entry of `families` over the objects of `rows` (a JSON
// array), each sample labelled by label_of(row).
template <size_t N, class Label>
void write_rows(std::string& out, const json& rows, const scalar_family (&families)[N], Label label_of) {
  if (!rows.is_array()) return;
  for (const auto& f : families) {
    std::vector<sample> samples;
    for (const auto& row : rows) {
      if (!row.is_object() || !row.contains(f.key)) continue;
      auto n = number(row[f.key]);
      if (!n.empty()) samples.push_back({label_of(row), n});
    }
    write_family(out, f.name, f.type, f.help, samples);
  }
}

void write_training(std::string& out, const json& training) {
  if (!training.is_object()) return;
  for (const auto& f : training_families)
    write_family(out, f.name, f.type, f.help, scalar(training, f.key));
  if (const auto& split = training.value("step_split_seconds", json()); split.is_object()) {
    std::vector<sample> parts;
    for (const auto& [part, v] : split.items())
      if (auto n = number(v); !n.empty()) parts.push_back({labels({{"part", part}}), n});
    write_family(out, "cleave_step_split_seconds", "gauge",
                 "Mean seconds per step in each part of it (predicted_*: the cost model's).", parts);
  }
  write_rows(out, training.value("per_device", json()), device_families, [](const json& d) {
    return labels({{"device", label_text(d.value("id", json("")))},
                   {"profile", label_text(d.value("profile", json("")))}});
  });
  write_rows(out, training.value("shards", json()), shard_families, [](const json& s) {
    return labels({{"shard", label_text(s.value("shard", json("")))}});
  });
}

// The planner's current plans: one sample per GEMM shape and role.
void write_plans(std::string& out, const json& plans) {
  if (!plans.is_array()) return;
  std::vector<sample> seconds, devices;
  for (const auto& p : plans) {
    if (!p.is_object()) continue;
    const auto shape = label_text(p.value("m", json(0))) + "x" + label_text(p.value("n", json(0))) +
                       "x" + label_text(p.value("k", json(0)));
    const auto l = labels({{"shape", shape}, {"role", label_text(p.value("role", json("")))}});
    if (auto n = number(p.value("predicted_seconds", json())); !n.empty()) seconds.push_back({l, n});
    if (const auto& d = p.value("devices", json()); d.is_array())
      devices.push_back({l, std::to_string(d.size())});
  }
  write_family(out, "cleave_plan_predicted_seconds", "gauge",
               "The planner's predicted time of its current plan for the GEMM shape.", seconds);
  write_family(out, "cleave_plan_devices", "gauge",
               "Devices the current plan for the GEMM shape gives tiles to (0: kept on the PS).", devices);
}

// The states console_view gives a device; each is always counted, so a
// dashboard sees 0 rather than a gap.
constexpr const char* known_states[] = {"alive", "suspected", "dead", "quarantined", "draining"};

void write_fleet(std::string& out, const json& fleet) {
  if (!fleet.is_object()) return;
  write_family(out, "cleave_fleet_version", "gauge", "The planner's registry version.",
               scalar(fleet, "version"));
  write_family(out, "cleave_fleet_quorum_reached", "gauge",
               "1 once the planner saw the devices it waits for before the first step.",
               scalar(fleet, "quorum_reached"));
  write_family(out, "cleave_planner_answered", "gauge", "1 if the planner answered the console, else 0.",
               {{"", fleet.contains("planner_error") ? "0" : "1"}});
  const auto& devices = fleet.value("devices", json());
  if (!devices.is_array()) return;
  std::map<std::string, int> by_state;
  for (const char* s : known_states) by_state[s] = 0;
  for (const auto& d : devices)
    if (d.is_object()) ++by_state[d.value("state", std::string("unknown"))];
  std::vector<sample> counts;
  for (const auto& [state, n] : by_state) counts.push_back({labels({{"state", state}}), std::to_string(n)});
  write_family(out, "cleave_fleet_devices", "gauge", "Devices in the fleet by state.", counts);
  std::vector<sample> phi, states;
  for (const auto& d : devices) {
    if (!d.is_object() || !d.contains("id")) continue;
    const auto id = label_text(d["id"]);
    if (d.contains("phi"))
      if (auto n = number(d["phi"]); !n.empty()) phi.push_back({labels({{"device", id}}), n});
    // One sample per state, 1 for the device's: the usual way to expose an
    // enum, so a change of state is a change of value, not a new series.
    const auto state = d.value("state", std::string("unknown"));
    bool known = false;
    for (const char* s : known_states) {
      known = known || state == s;
      states.push_back({labels({{"device", id}, {"state", s}}), state == s ? "1" : "0"});
    }
    if (!known) states.push_back({labels({{"device", id}, {"state", state}}), "1"});
  }
  write_family(out, "cleave_device_phi", "gauge",
               "The failure detector's suspicion level of the device (phi accrual).", phi);
  write_family(out, "cleave_device_state", "gauge", "1 for the device's state, 0 for the others.", states);
  write_rows(out, fleet.value("relays", json()), relay_families, [](const json& r) {
    return labels({{"relay", label_text(r.value("name", json("")))}});
  });
  std::vector<sample> relay_devices;
  for (const auto& r : fleet.value("relays", json::array()))
    if (r.is_object() && r.value("devices", json()).is_array())
      relay_devices.push_back({labels({{"relay", label_text(r.value("name", json("")))}}),
                               std::to_string(r["devices"].size())});
  write_family(out, "cleave_relay_devices", "gauge", "Devices in the fleet that joined through the relay.",
               relay_devices);
}

}  // namespace

std::string escape_label_value(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

// The edge heartbeats' wait at the ps, as a Prometheus histogram.
void write_heartbeat_delay(std::string& out, const json& h) {
  if (!h.is_object() || !h.contains("buckets") || !h["buckets"].is_array()) return;
  const std::string name = "cleave_heartbeat_delay_seconds";
  std::vector<sample> samples;
  for (const auto& b : h["buckets"]) {
    if (!b.is_object()) continue;
    const auto le = b.value("le", json());
    const auto count = number(b.value("count", json()));
    if (count.empty()) continue;
    samples.push_back({"_bucket" + labels({{"le", le.is_string() ? le.get<std::string>() : number(le)}}), count});
  }
  if (auto s = number(h.value("sum_seconds", json())); !s.empty()) samples.push_back({"_sum", s});
  if (auto c = number(h.value("count", json())); !c.empty()) samples.push_back({"_count", c});
  write_family(out, name, "histogram",
               "Seconds a device's heartbeat waited at the ps, from the edge's read to the detector's update.",
               samples);
}

std::string render_metrics(const nlohmann::json& console_document) {
  std::string out;
  if (!console_document.is_object()) return out;
  write_training(out, console_document.value("training", json()));
  write_family(out, "cleave_training_paused", "gauge", "1 while an operator has training paused.",
               scalar(console_document.value("controls", json()), "paused"));
  write_fleet(out, console_document.value("fleet", json()));
  write_plans(out, console_document.value("plans", json()));
  write_heartbeat_delay(out, console_document.value("heartbeat_delay", json()));
  return out;
}

}  // namespace cleave
