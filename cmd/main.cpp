// The `cleave` binary: parses flags, then wires the roles this process runs.

#include <iostream>
#include <thread>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/ps/report.hpp"
#include "actors/ps/trainer.hpp"
#include "cmd/options.hpp"
#include "schema/errors.hpp"

using namespace cleave;

namespace {

int usage_error(const std::string& reason) {
  std::cerr << "cleave: " << reason << " (see --help)\n";
  return 2;
}

// CAF renders a CLI error as parser_error(code, ({"argument" = "--x=y"})):
// turn that into a sentence naming the argument.
std::string explain_parse_error(const std::string& rendered) {
  std::string arg;
  auto at = rendered.find("\"argument\" = \"");
  if (at != std::string::npos) {
    at += 14;
    arg = rendered.substr(at, rendered.find('"', at) - at);
  }
  if (arg.empty()) return rendered;
  if (rendered.find("not_an_option") != std::string::npos) return "unknown flag '" + arg + "'";
  return "invalid value in '" + arg + "'";
}

int runtime_error(const std::string& reason) {
  std::cerr << "cleave: " << reason << "\n";
  return 1;
}

// --role=all --devices=0: every role in this process, every GEMM local.
int run_reference(const cleave_config& cfg, const train_options& opts, int threads) {
  auto data = load_training_data(opts);
  if (!data) return runtime_error(describe(data.error()));
  trainer t(opts, **data, default_gemm_engine<float>());
  auto res = t.run();
  if (!res) return runtime_error(describe(res.error()));
  if (!cfg.report.empty()) {
    auto doc = make_report(opts, *res, cfg.devices, threads);
    if (auto err = write_json_file(cfg.report, doc)) return runtime_error(describe(err));
    spdlog::info("report written to {}", cfg.report);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  cleave_config cfg;
  if (auto err = cfg.parse(argc, argv))
    return usage_error(explain_parse_error(cfg.render(err)));
  if (cfg.cli_helptext_printed) return 0;

  auto level = spdlog::level::from_str(cfg.log_level);
  if (level == spdlog::level::off && cfg.log_level != "off")
    return usage_error("--log-level: unknown level '" + cfg.log_level + "'");
  spdlog::set_level(level);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");

  auto opts = to_train_options(cfg);
  if (!opts) return usage_error(describe(opts.error()));
  if (cfg.threads < 0) return usage_error("--threads must be >= 0");
  const int threads = cfg.threads > 0 ? cfg.threads
                                      : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  set_compute_threads(threads);

  if (cfg.role == "all") {
    if (cfg.devices < 0) return usage_error("--devices must be >= 0");
    if (cfg.devices > 0)
      return usage_error("--devices > 0 needs the distributed runtime, which this build does not include yet");
    return run_reference(cfg, *opts, threads);
  }
  return usage_error("unknown role '" + cfg.role + "' (expected: all)");
}
