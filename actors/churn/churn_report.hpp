#pragma once
// The report's "churn" section: the churn actor's own summary (what it did
// to the fleet, and how long the detector took to see each failure).

#include <nlohmann/json.hpp>

#include <caf/all.hpp>

#include "actors/churn/churn_protocol.hpp"

namespace cleave {

// Asks `churn` (waiting at most 10 s); an empty object if it does not answer.
nlohmann::json churn_report(caf::actor_system& sys, const churn_handle& churn);

}  // namespace cleave
