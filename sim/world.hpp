// One run of a scenario: the simulated kernel, the real loop on a simulated thread, and the
// client agents, in virtual time up to the scenario's horizon.
#pragma once

#include <cstdint>

#include "model/choice.hpp"
#include "sim/scenario.hpp"
#include "sim/trace.hpp"

namespace loopsim::sim {

struct RunStats {
  std::uint64_t passes = 0;
  std::uint64_t accepted = 0;
  std::uint64_t answered = 0;
  std::uint64_t refused = 0;
  std::uint64_t steps = 0;  // scheduler steps taken
  Nanos virtual_time{0};
};

struct RunResult {
  Trace trace;
  RunStats stats;
};

// Runs `scenario` (already resolved for one arm) to its horizon. Every nondeterministic
// decision goes to `chooser` (default: seeded from the scenario's seed) and is recorded in the
// trace as a `choice` event. Deterministic: the same scenario and choices give the same trace,
// byte for byte. `arm` names the arm in the trace.
RunResult run(const Scenario& scenario, const std::string& arm = "base",
              model::Chooser* chooser = nullptr);

// The choices a trace recorded, in order: replaying them repeats the run.
std::vector<model::Choice> choices_of(const Trace& trace);

}  // namespace loopsim::sim
