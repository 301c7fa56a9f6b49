// What the explorer sees of a system under test: executions that run from stop to stop, show
// their state there as digests, take a decision where one is asked, and are judged at their
// end. The explorer knows nothing else of worlds, loops or kernels, as a model checker's search
// is kept apart from the model it searches.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checker/properties.hpp"
#include "model/choice.hpp"
#include "realloop/state.hpp"
#include "scenario/scenario.hpp"
#include "sim/world.hpp"

namespace loopsim::explore {

// How an execution ended: the verdicts of its properties, and the names of those violated.
struct Outcome {
  std::vector<checker::Verdict> verdicts;
  std::vector<std::string> violated;
  // The execution stopped before its horizon at a run limit (its trace's size), with nothing
  // decided against it: the search names the bound.
  std::string cut;
  // The target program died of its own fault under this execution's schedule (killed by
  // SIGSEGV, say: sim::TargetDied), after at least one decision: how it died. `violated` is
  // then {sim::target_died} and there are no verdicts.
  std::string died;
};

// Where an execution stops for the explorer: after each step of its scheduler, at each
// decision (a choice point with two or more alternatives), and at its end.
struct Stop {
  enum class Kind : std::uint8_t { step, decision, end };
  Kind kind = Kind::step;
  model::ChoiceKind choice = model::ChoiceKind::order;  // a decision's
  std::uint32_t options = 0;                            // a decision's: pick in [0, options)
  // The state, times relative to now, for the state graph: equal shapes have equal futures if
  // time had no end (an idle loop's ticks are one shape).
  std::uint64_t shape = 0;
  // The state as a search merges on it: the shape, the time left to the horizon and, at a
  // decision, what is asked. Equal keys have equal futures.
  std::uint64_t key = 0;
  // Something in the state lies past the horizon (a deadline, a pending happening): the
  // shape then says nothing of what comes after the horizon, and is no place for a cycle.
  bool beyond = false;
  bool backlog = false;       // connections wait in an accept queue or a hand-off channel
  std::uint64_t accepted = 0;  // connections accepted so far (never decreases)
  Instant now{};
  bool quiescent = false;  // at the end: nothing at all was left to happen
};

// A saved state of an execution, to resume it from (Execution::save).
class Saved {
 public:
  virtual ~Saved() = default;
  virtual std::size_t bytes() const = 0;
};

// One execution. advance() runs it to its next stop; a decision stop waits for decide().
class Execution {
 public:
  virtual ~Execution() = default;
  virtual Stop advance() = 0;
  // The pick for the decision advance() just stopped at.
  virtual void decide(std::uint32_t pick) = 0;
  // At a stop: the whole state, to resume from; null when this execution cannot be saved.
  virtual std::unique_ptr<Saved> save() { return nullptr; }
  // Puts the execution back at the stop `saved` was taken at (one of this execution's own).
  virtual void restore(const Saved& /*saved*/) {}
  // A saved state no longer wanted: its memory may serve the next save().
  virtual void recycle(std::unique_ptr<Saved> /*saved*/) {}
  // At a step or decision stop: what its shape hashed, value by value with each value's field,
  // for the digest audit; none where the state cannot be written down (a target program's).
  virtual std::optional<state::Transcript> transcript() const { return std::nullopt; }
  // At a step or decision stop: the stop it stands at, its shape and key read from the state as
  // it is now, for the explorer to check that a restored execution stands where it was saved;
  // none where the state cannot be read again. `afresh`: the digest taken again in full (the
  // audit's); otherwise the one kept for the step, which a restore brings back with the state.
  virtual std::optional<Stop> stands_at(bool /*afresh*/) const { return std::nullopt; }
  // After the end stop: its judged outcome.
  virtual Outcome outcome() = 0;
  // Stops it where it is (its end is not wanted): it may finish quietly, or just end.
  virtual void abandon() = 0;
  virtual std::uint64_t steps() const = 0;  // scheduler steps run
};

class System {
 public:
  virtual ~System() = default;
  virtual std::unique_ptr<Execution> start() const = 0;
  // Whether an execution's states may be merged: every judged property a function of the state
  // reached and of what follows (not of how it got there), and a state that says everything
  // (a server that declares its own). Otherwise `why_not` says what stands in the way, and
  // the search is a tree.
  struct Merging {
    bool on = true;
    std::string why_not;
  };
  virtual Merging merging() const = 0;
};

// A scenario (already resolved for one arm) on the simulated kernel with the real loop, or with
// its [target]. With `symmetry`, interchangeable clients' same-instant orders and windowed
// landings are explored once. With `snapshots`, executions run in an arena (explore/arena.hpp)
// and are saved and restored; otherwise a branch replays from time 0. `servers` says what serves
// a scenario without a [target] (sim::ServerFactories: the built-in loop, or one of your own).
std::unique_ptr<System> world_system(const sim::Scenario& scenario, const checker::Costs& costs,
                                     bool symmetry = true, bool snapshots = true,
                                     const sim::ServerFactories& servers = {});

// Judges a whole run's trace-free outcome: runs the scenario with `choices` and returns it.
Outcome judge_choices(const sim::Scenario& scenario, const checker::Costs& costs,
                      const std::vector<model::Choice>& choices);

// The states (shapes) one execution passes through with `choices`, from the start to its end.
// `choices` becomes the execution's whole record: a prefix is completed with natural picks.
std::vector<std::uint64_t> path_of(const System& system, std::vector<model::Choice>& choices);

}  // namespace loopsim::explore
