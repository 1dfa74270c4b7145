#include "actors/simulator/ps_link.hpp"

#include <string>

#include "schema/errors.hpp"

namespace cleave {

const char* to_string(ps_link_model m) { return m == ps_link_model::scheduled ? "scheduled" : "fair"; }

caf::expected<ps_link_model> parse_ps_link_model(std::string_view text) {
  if (text == "fair") return ps_link_model::fair;
  if (text == "scheduled") return ps_link_model::scheduled;
  return fail("--ps-link-model must be fair or scheduled, not '" + std::string(text) + "'");
}

namespace {

std::variant<shared_link, scheduled_link> make_link(ps_link_model model, double capacity,
                                                    size_t max_flows) {
  if (model == ps_link_model::scheduled) return scheduled_link(capacity, max_flows);
  return shared_link(capacity, max_flows);
}

}  // namespace

ps_link::ps_link(ps_link_model model, double capacity, size_t max_flows)
    : link_(make_link(model, capacity, max_flows)) {}

}  // namespace cleave
