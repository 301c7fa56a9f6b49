#include "sim/run_guard.hpp"

#include "base/assert.hpp"

#include <cstdio>

#include "model/sim_kernel.hpp"

namespace loopsim::sim {

namespace {

std::string virtual_ms(Instant at) {
  char text[48];
  std::snprintf(text, sizeof text, "%.1f ms", double(since_start(at).count()) / 1e6);
  return text;
}

}  // namespace

RunGuard::RunGuard(const World& world, RunLimits limits) : limits_(limits), instant_(world.now()) {}

std::optional<Cut> RunGuard::check(const World& world) {
  ++asked_;
  // One guard follows one run: its time only moves on.
  LOOPSIM_ASSERT(asked_ == 1 || world.now() >= instant_);
  if (world.now() != instant_) instant_ = world.now(), at_instant_ = 0;
  const bool stalled = world.stalled();
  if (++at_instant_ > limits_.at_instant || stalled) {
    const std::string what = stalled ? std::to_string(model::SimKernel::calls_at_instant_max) + " kernel calls"
                                     : std::to_string(limits_.at_instant) + " steps";
    return Cut{Cut::Why::livelock, "livelock: virtual time stood still for " + what + " at " +
                                       virtual_ms(world.now()) +
                                       ", nothing done (nothing the server does lets the clock move)"};
  }
  if (world.trace_events() > limits_.trace_events) {
    return Cut{Cut::Why::trace, "its trace passed " + std::to_string(limits_.trace_events) + " events at " +
                                    virtual_ms(world.now()) +
                                    " of virtual time (a shorter horizon, or fewer passes, fits)"};
  }
  if (asked_ > limits_.steps) {
    return Cut{Cut::Why::steps, "the run took " + std::to_string(limits_.steps) + " steps (its budget) and stopped at " +
                                    virtual_ms(world.now()) + " of virtual time"};
  }
  return std::nullopt;
}

}  // namespace loopsim::sim
