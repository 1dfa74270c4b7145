#include "actors/churn/churn_report.hpp"

#include <chrono>
#include <string>

#include <spdlog/spdlog.h>

namespace cleave {

nlohmann::json churn_report(caf::actor_system& sys, const churn_handle& churn) {
  nlohmann::json out = nlohmann::json::object();
  caf::scoped_actor self{sys};
  self->request(churn, std::chrono::seconds(10), caf::get_atom::value)
    .receive([&](const std::string& text) { out = nlohmann::json::parse(text, nullptr, false); },
             [&](caf::error& err) {
               spdlog::warn("churn actor did not report: {}", sys.render(err));
             });
  return out;
}

}  // namespace cleave
