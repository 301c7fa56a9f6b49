// Which properties a search judges by a monitor kept as state (sim/monitors.hpp), and with what
// bound: one place, beside the judges, so that the judge and the monitor read one bound.
#pragma once

#include "checker/properties.hpp"
#include "scenario/scenario.hpp"
#include "sim/monitors.hpp"

namespace loopsim::checker {

// True when a monitor keeps what the rest of a run needs to decide `expect`: `latency` and
// `max_gap` bounded by a time (with or without `after`), `batch_bound` and `no_spin` bounded by
// a count (or their defaults), `post_latency` and `shutdown_clean` bounded by a time (or
// none), and `no_stranded_backlog` bounded by a time. A bound in "requests" or "batches" is measured from
// the run's own requests, so a property bounded so is history no monitor keeps.
bool monitorable(const sim::Expectation& expect);

// Makes `monitors` watch `expect`, with the bound its judge uses. Returns monitorable(expect).
bool watch(sim::Monitors& monitors, const sim::Expectation& expect, const Costs& costs);

}  // namespace loopsim::checker
