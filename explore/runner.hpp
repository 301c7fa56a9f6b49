// How the explorer runs an execution from a branch point. Two ways, alike in what they report:
//
// - `replaying_runners`: in this process, replaying the branch's prefix of decisions from time 0;
// - `forking_runners`: in forked processes. A process that takes a decision the explorer will
//   branch on forks a snapshot of itself first, paused at that decision; an alternative taken
//   there later resumes a copy of the snapshot, instead of replaying every step before it. A
//   fork copies the whole process, fibers' stacks included, which no copy of the objects can do.
//
// Either way the explorer sees a stream of reports, one per step, and judges, branches and
// prunes on them exactly as before (explore/explorer.cpp). The forking runners replay a branch
// that has no snapshot in this process, as the replaying ones do.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "explore/system.hpp"
#include "model/choice.hpp"

namespace loopsim::explore {

// A paused copy of an execution, taken just before one of its decisions: each alternative of
// that decision resumes a copy of it. Held by the explorer's branches; the last one to let go
// of it ends the process.
class Snapshot {
 public:
  virtual ~Snapshot() = default;
};

// The state an execution is in after a step (or at its start), and the decisions that step made.
struct Report {
  bool stepped = true;  // false: nothing was left before the horizon, and nothing happened
  std::uint64_t digest = 0;
  bool backlog = false;
  std::uint64_t accepted_before = 0;  // accepted before the step
  std::uint64_t accepted = 0;
  Nanos now{0};
  bool quiescent = false;
  std::uint64_t steps = 0;     // steps the execution has run, this one included
  std::uint64_t replayed = 0;  // of them, steps run again to reach the branch point
  std::size_t first = 0;       // the index of decisions[0] among the execution's decisions
  std::vector<model::Choice> decisions;
  // Beside decisions: the snapshot taken before each, or null.
  std::vector<std::shared_ptr<Snapshot>> snapshots;
};

class Runner {
 public:
  virtual ~Runner() = default;
  // Runs the next step. `snapshots` is how many of its decisions may be snapshotted (the ones
  // the explorer will branch on, before the depth bound).
  virtual Report step(std::uint32_t snapshots) = 0;
  virtual Outcome finish() = 0;
};

class Runners {
 public:
  virtual ~Runners() = default;
  // An execution that makes the decisions of `prefix` (the last one an alternative): resumed
  // from `base`, a snapshot taken before decision `base_at` of the prefix, replaying the
  // decisions from there on; from time 0 without one. The first report is the state after the
  // step that made the prefix's last decision, or the start's state for an empty prefix.
  // `snapshots` is as for Runner::step, for the decisions after the prefix in that step.
  virtual std::unique_ptr<Runner> begin(const std::vector<model::Choice>& prefix,
                                        const std::shared_ptr<Snapshot>& base, std::size_t base_at,
                                        std::uint32_t snapshots, Report& first) = 0;
  // How many more snapshots may be taken now.
  virtual std::uint32_t room() const = 0;
  virtual std::uint64_t taken() const = 0;  // snapshots taken so far
};

std::unique_ptr<Runners> replaying_runners(const System& system);

// An execution in this process whose decisions are drawn at random from `seed`.
std::unique_ptr<Runner> seeded_runner(const System& system, std::uint64_t seed, Report& first);

struct ForkingOptions {
  std::uint32_t depth = 64;    // no snapshot of a decision past the explorer's depth bound
  std::uint32_t limit = 128;   // snapshots alive at once (a process and a socket each)
  // A snapshot only where it saves replaying at least this many steps from the one before: a
  // fork and the pages it copies cost about as much as replaying a hundred steps.
  std::uint64_t steps = 256;
  // Forks between the origin and a process. Each generation makes the next fork dearer (the
  // kernel links a child's memory areas to every ancestor's); past it, a branch replays.
  std::uint32_t generations = 24;
};

// Throws std::runtime_error when the first process cannot be forked, or the descriptor limit
// leaves no room for `limit` snapshots.
std::unique_ptr<Runners> forking_runners(const System& system, const ForkingOptions& options);

}  // namespace loopsim::explore
