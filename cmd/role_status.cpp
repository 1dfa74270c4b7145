// --role=status: `GET /api/state` from an admin console (--connect) and
// print it as a table; --watch redraws it every second until interrupted.
// A client only: no actor system, no training options.

#include <chrono>
#include <ctime>
#include <iostream>
#include <thread>

#include <nlohmann/json.hpp>

#include "actors/console/http_get.hpp"
#include "actors/console/status_table.hpp"
#include "cmd/roles.hpp"
#include "cmd/wiring.hpp"
#include "schema/errors.hpp"

namespace cleave {

namespace {

caf::expected<std::string> fetch_page(const std::string& host, uint16_t port, const std::string& where) {
  auto body = http_get(host, port, "/api/state");
  if (!body) return body.error();
  auto doc = nlohmann::json::parse(*body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("fleet"))
    return fail(where + " did not answer with a console document (is it an --admin port?)");
  return render_status_page(doc);
}

std::string clock_now() {
  const auto t = std::time(nullptr);
  char buf[16];
  std::strftime(buf, sizeof buf, "%H:%M:%S", std::localtime(&t));
  return buf;
}

}  // namespace

int run_status(const cleave_config& cfg) {
  if (cfg.connect.empty()) return usage_error("--role=status needs --connect=HOST:PORT (an --admin console)");
  auto at = parse_endpoint(cfg.connect, "--connect", false);
  if (!at) return usage_error(describe(at.error()));
  if (at->second == 0) return usage_error("--connect: port 0 is not a console's port");
  const auto& [host, port] = *at;
  if (!cfg.watch) {
    auto page = fetch_page(host, port, cfg.connect);
    if (!page) return runtime_error(describe(page.error()));
    std::cout << *page << std::flush;
    return 0;
  }
  stop_on_signals();
  while (!stop_requested()) {
    auto page = fetch_page(host, port, cfg.connect);
    if (!page) return runtime_error(describe(page.error()));
    // Home and clear, then the page: redrawn in place, no scrollback growth.
    std::cout << "\x1b[H\x1b[2J" << cfg.connect << "  " << clock_now() << "  (Ctrl-C to stop)\n"
              << *page << std::flush;
    for (int i = 0; i < 20 && !stop_requested(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return 0;
}

}  // namespace cleave
