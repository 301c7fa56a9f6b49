// The limits every run of a World is held to, in one place, with one message each: `run`,
// `explore`'s executions and `generate`'s judged runs all step a World under a RunGuard.
//
// - A livelock: virtual time stands still for `at_instant` steps (sim::still_steps_max unless a
//   caller's budget says less), or the kernel's stall rule fires (model::SimKernel::stalled: a
//   thread makes calls_at_instant_max kernel calls at one instant).
// - A trace past `trace_events` events (sim::trace_events_max): the run cannot be written down.
// - A budget of steps in all (`steps`, none unless a caller sets one): the run is only long.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "sim/world.hpp"

namespace loopsim::sim {

struct RunLimits {
  std::uint64_t at_instant = still_steps_max;
  std::size_t trace_events = trace_events_max;
  std::uint64_t steps = std::numeric_limits<std::uint64_t>::max();
};

// Why a guard stopped a run, and the sentence that says so (Trace::cut).
struct Cut {
  enum class Why : std::uint8_t { livelock, trace, steps };
  Why why;
  std::string message;
  bool stalled() const { return why == Why::livelock; }  // Trace::stalled
};

class RunGuard {
 public:
  explicit RunGuard(const World& world, RunLimits limits = {});
  // Asked once at each step boundary: the limit the run has reached there, if any. A caller
  // asks before each step or after each, and the count of steps at one instant is the number of
  // times it asked there.
  std::optional<Cut> check(const World& world);
  std::uint64_t steps() const { return asked_; }

 private:
  RunLimits limits_;
  Instant instant_;
  std::uint64_t at_instant_ = 0;
  std::uint64_t asked_ = 0;
};

}  // namespace loopsim::sim
