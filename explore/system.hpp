// What the explorer sees of a system under test: executions that step, show their state as a
// digest, and are judged at their end. The explorer knows nothing else of worlds, loops or
// kernels, as a model checker's search is kept apart from the model it searches.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "checker/properties.hpp"
#include "model/choice.hpp"
#include "sim/scenario.hpp"

namespace loopsim::explore {

// How an execution ended: the verdicts of its properties, and the names of those violated.
struct Outcome {
  std::vector<checker::Verdict> verdicts;
  std::vector<std::string> violated;
};

// One execution, driven a step at a time. Every nondeterministic decision of a step goes to the
// chooser the execution was started with.
class Execution {
 public:
  virtual ~Execution() = default;
  // Runs the next happening; false once nothing is left before the horizon.
  virtual bool step() = 0;
  // The whole state, times relative to now: equal states give equal digests.
  virtual std::uint64_t digest() const = 0;
  // Connections wait in a listener's accept queue or a hand-off channel.
  virtual bool backlog() const = 0;
  // Connections accepted so far (never decreases).
  virtual std::uint64_t accepted() const = 0;
  // Virtual time.
  virtual Nanos now() const = 0;
  // Nothing at all is left to happen (not even a timeout): whatever waits, waits forever.
  virtual bool quiescent() const = 0;
  // Runs what is left to the horizon and judges the execution.
  virtual Outcome finish() = 0;
};

class System {
 public:
  virtual ~System() = default;
  virtual std::unique_ptr<Execution> start(model::Chooser& chooser) const = 0;
  // Whether every property judged at an execution's end is a function of the state it reaches
  // and of what follows, not of how it got there. Then two executions that reach one state at
  // one instant end alike, and the later one may stop there (ExploreOptions::cut).
  virtual bool judged_by_state() const = 0;
  // Whether an execution may be forked with the explorer's process (explore/runner.hpp): not
  // when it runs in a process of its own.
  virtual bool forkable() const { return true; }
};

// A scenario (already resolved for one arm) on the simulated kernel with the real loop. With
// `symmetry`, interchangeable clients' same-instant orders are explored once (sim::World).
std::unique_ptr<System> world_system(const sim::Scenario& scenario, const checker::Costs& costs,
                                     bool symmetry = true);

// Judges a whole run's trace-free outcome: runs the scenario with `choices` and returns it.
Outcome judge_choices(const sim::Scenario& scenario, const checker::Costs& costs,
                      const std::vector<model::Choice>& choices);

// The states (digests) one execution passes through with `choices`, from the start to its end.
std::vector<std::uint64_t> path_of(const System& system, const std::vector<model::Choice>& choices);

}  // namespace loopsim::explore
