#pragma once
// The single-process reference's median step on this host (the first step
// left out), measured on the same model and data as a run, after it: what
// the demo's step time is held against.

#include "training/report.hpp"
#include "training/trainer.hpp"

namespace cleave {

// 0 if it cannot be measured.
double reference_step_seconds(const train_options& opts);

// The demo's report section: "reference_median_step_seconds", measured
// when the report asks (the run is over by then).
report_section reference_step_section(const train_options& opts);

}  // namespace cleave
