// The explorer: model-checks a system's nondeterministic choices. Depth-first (iterative,
// with an explicit stack of choice prefixes, each resumed from a snapshot or replayed from the
// start: explore/runner.hpp) or at random by seed. Every execution is judged by the system's properties; the states it passes through
// (digests with times relative to now) prune revisits and form a state graph, whose strongly
// connected components show liveness failures: a cycle or dead end in which a backlog waits
// and nothing is ever accepted. It sees the system only through explore/system.hpp.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "explore/system.hpp"
#include "model/choice.hpp"

namespace loopsim::explore {

struct ExploreProgress {
  std::uint64_t executions = 0;
  std::uint64_t states = 0;
  std::uint64_t transitions = 0;
  std::size_t stack = 0;  // prefixes left to run
};

struct ExploreOptions {
  enum class Strategy : std::uint8_t { dfs, random };
  Strategy strategy = Strategy::dfs;
  std::uint32_t depth = 64;  // choice points branched on, counted from the run's start
  std::uint64_t max_executions = 20000;
  std::uint64_t max_states = 2000000;
  std::uint64_t seed_first = 1, seed_last = 100;  // random strategy
  std::uint32_t shard = 0, shards = 1;  // DFS: the root's alternatives, dealt round robin
  bool prune = true;                    // skip branching from states seen before
  bool symmetry = true;                 // interchangeable clients' orders explored once
  // State matching within an instant: an execution past its replayed prefix that reaches a
  // state an earlier execution reached at the same virtual time stops there, when the system's
  // properties are judged by state (System::judged_by_state): its future, and so its verdict,
  // is the earlier one's, whose alternatives are on the stack already.
  bool cut = true;
  // DFS: how many snapshots (forked processes paused at a decision) may be alive at once. A
  // branch resumes from its decision's snapshot instead of replaying from time 0; past the
  // limit it replays. 0: every branch replays, in this process.
  std::uint32_t snapshots = 128;
  // A snapshot only where it saves replaying at least this many steps (see ForkingOptions).
  std::uint64_t snapshot_steps = 256;
  std::int64_t time_limit_ns = 0;       // 0: none; checked inside executions too
  std::uint64_t max_steps = 0;          // steps in one execution; 0: none (a livelock guard)
  std::function<std::int64_t()> wall_ns;
  std::function<void(const ExploreProgress&)> progress;
  // Worst-case mode: judge every execution, stop at none, and keep the one whose verdict on
  // `maximize` (about group `maximize_of`, if given) measured the most.
  std::string maximize;
  std::string maximize_of;
};

// The worst case found in worst-case mode.
struct Worst {
  std::int64_t measured = 0;
  checker::Verdict verdict;
  std::vector<model::Choice> choices;  // the execution that measured it
  std::uint64_t execution = 0;         // which one, counting from 0
};

struct Counterexample {
  std::vector<model::Choice> choices;   // the whole run's
  std::vector<std::string> violated;    // property names, or "liveness"
  std::string detail;
  std::vector<std::uint64_t> path;      // state digests from the start to the failure
};

struct ExploreResult {
  // none_found: the search was exhaustive within its depth and fault bounds. bound_reached: a
  // limit (executions, states, time, depth, or the count of seeds of a random search) cut it
  // short, which proves nothing.
  enum class Verdict : std::uint8_t { violated, none_found, bound_reached };
  Verdict verdict = Verdict::none_found;
  std::string bound;  // which bound was reached
  std::uint64_t executions = 0;
  std::uint64_t states = 0;
  std::uint64_t transitions = 0;
  std::uint64_t cut = 0;  // executions stopped at a state matched within its instant
  std::uint64_t steps = 0;           // steps run, in all executions
  std::uint64_t replayed_steps = 0;  // of them, steps that retraced a prefix already explored
  std::uint64_t snapshots = 0;       // processes forked to resume branches from (0: replays)
  std::optional<Counterexample> counterexample;
  std::optional<Worst> worst;  // worst-case mode: the largest figure measured
  std::uint64_t judged = 0;    // worst-case mode: executions that measured the property
};

const char* verdict_name(ExploreResult::Verdict verdict);

ExploreResult search(const System& system, const ExploreOptions& options);

// The scenario on the simulated kernel, searched.
ExploreResult search(const sim::Scenario& scenario, const checker::Costs& costs,
                     const ExploreOptions& options);

}  // namespace loopsim::explore
