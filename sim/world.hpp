// One run of a scenario: the simulated kernel, the real loop on a simulated thread, and the
// client agents, in virtual time up to the scenario's horizon.
#pragma once

#include <cstdint>

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

// Runs `scenario` (already resolved for one arm) to its horizon. Deterministic: the same
// scenario gives the same trace, byte for byte. `arm` names the arm in the trace.
RunResult run(const Scenario& scenario, const std::string& arm = "base");

}  // namespace loopsim::sim
