// A scenario's run, from start to end: in this process (sim::World), or, for a scenario with a
// [target], in the target program's own (target/target.hpp).
#pragma once

#include <string>

#include "model/choice.hpp"
#include "scenario/scenario.hpp"
#include "sim/world.hpp"

namespace loopsim::sim {

// Runs `scenario` (already resolved for one arm) to its horizon, or stops it early, with
// Trace::cut saying why, when its trace passes trace_events_max or time stands still for
// still_steps_max steps (Trace::stalled: a livelock); sim::RunGuard holds those limits. When the scenario expects
// "liveness", the run watches its own states and writes a `lasso` event if it comes back to one
// in which connections wait and none was accepted since (the explorer's liveness failure, as
// one run shows it). Every nondeterministic
// decision goes to `chooser` (default: seeded from the scenario's seed) and is recorded in the
// trace as a `choice` event. Deterministic: the same scenario and choices give the same trace,
// byte for byte. `arm` names the arm in the trace; `servers` says what serves (ServerFactories).
RunResult run(const Scenario& scenario, const std::string& arm = "base",
              model::Chooser* chooser = nullptr, const ServerFactories& servers = {});

// A scenario with a [target], run in the target's own process (target/target.hpp): what run()
// does for such a scenario in any process that has no foreign server installed.
RunResult run_target(const Scenario& scenario, const std::string& arm, model::Chooser* chooser);

}  // namespace loopsim::sim
