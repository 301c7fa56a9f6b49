// The explorer: model-checks a system's nondeterministic choices.
//
// Depth-first, iterative, with an explicit stack of decision points (frames). An execution runs
// from stop to stop (explore/system.hpp); at each decision it takes the natural alternative and
// leaves a frame holding the others and, where memory allows, a snapshot of the execution there.
// Backtracking restores the deepest frame's snapshot (or the nearest one below it, then replays
// the decisions in between; or replays from time 0) and takes its next alternative.
//
// States are merged where that is sound (System::merging): an execution that reaches a state
// (its key: the state, the time left to the horizon, what is asked) reached before stops there,
// since its futures are the earlier one's. Where a judged property measures history, or the
// state does not say everything, nothing is merged and the search is a tree, which it says.
//
// Every execution is judged at its end. The states (shapes, with relative times) form a graph
// whose strongly connected components show liveness failures: a cycle or dead end in which a
// backlog waits and nothing is ever accepted. Or at random by seed: a sample, never a proof.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "explore/system.hpp"
#include "model/choice.hpp"
#include "realloop/state.hpp"

namespace loopsim::explore {

struct ExploreProgress {
  std::uint64_t executions = 0;
  std::uint64_t states = 0;
  std::uint64_t transitions = 0;
  std::size_t stack = 0;  // decision points with alternatives left
};

struct ExploreOptions {
  // deviations: every execution with no non-natural choice, then every one with one, then two,
  // ... (iterative deviation bounding): a defect that needs k is found before any execution
  // with more than k is run. dfs: depth first. random: one execution per seed, a sample.
  enum class Strategy : std::uint8_t { deviations, dfs, random };
  Strategy strategy = Strategy::deviations;
  std::uint32_t depth = 1024;  // decisions branched on, counted from the run's start
  std::uint64_t max_executions = 1'000'000;
  std::uint64_t max_states = 20'000'000;
  std::uint64_t seed_first = 1, seed_last = 100;  // random strategy
  std::uint32_t shard = 0, shards = 1;  // DFS: the first execution's alternatives, dealt round robin
  bool prune = true;                    // merge states where that is sound (false: a tree)
  bool symmetry = true;                 // interchangeable clients' orders explored once
  // Resume branches from snapshots of the execution (explore/arena.hpp) instead of replaying
  // them from time 0; at most `snapshot_bytes` of them are kept at once, past which a branch
  // resumes from the nearest snapshot below it and replays the rest.
  bool snapshots = true;
  std::uint64_t snapshot_bytes = std::uint64_t(2) << 30;
  std::int64_t time_limit_ns = 0;       // 0: none; checked inside executions too
  std::uint64_t max_steps = 0;          // steps in one execution; 0: none (a livelock guard)
  std::function<std::int64_t()> wall_ns;
  std::function<void(const ExploreProgress&)> progress;
  // Worst-case mode: judge every execution, stop at none, and keep the one whose verdict on
  // `maximize` (about group `maximize_of`, if given) measured the most. Nothing is merged.
  std::string maximize;
  std::string maximize_of;
  // The digest audit: write every state down as well as digest it, and on every digest met
  // again compare the two; a difference stops the search (ExploreResult::audit_failure).
  bool audit = false;
  // What serves the scenario (a loop of your own, or the built-in one): sim::ServerFactories.
  sim::ServerFactories servers;
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
  // none_found: the search was exhaustive within its stated bounds, for every judged property.
  // bound_reached: a bound cut it short (each one hit is named in `bounds`), which proves
  // nothing.
  enum class Verdict : std::uint8_t { violated, none_found, bound_reached };
  Verdict verdict = Verdict::none_found;
  std::string bound;                // the first bound reached
  std::vector<std::string> bounds;  // every bound that cut something
  bool merged = true;               // states were merged (System::merging)
  std::string merging_note;         // why not, when they were not
  std::uint64_t executions = 0;
  // Executions that switched between a target's threads at least once (a `preempt` choice
  // taken): those the preemption bound let the search try beyond each thread running until it
  // blocks.
  std::uint64_t preempted = 0;
  std::uint64_t states = 0;
  std::uint64_t transitions = 0;
  std::uint64_t cut = 0;  // executions stopped at a state reached before
  // The search by deviations: every execution with at most this many non-natural choices was
  // searched (-1: not even the natural one; with none_found, every execution there was).
  std::int64_t deviations_completed = -1;
  std::uint64_t deviations_max = 0;  // the most any execution took
  std::uint64_t steps = 0;           // scheduler steps run, in all executions
  std::uint64_t replayed_steps = 0;  // of them, steps that retraced a prefix already explored
  std::uint64_t snapshots = 0;       // snapshots taken
  std::uint64_t restores = 0;        // branches resumed from one
  std::uint64_t snapshot_bytes_peak = 0;
  std::optional<Counterexample> counterexample;
  std::optional<Worst> worst;  // worst-case mode: the largest figure measured
  std::uint64_t judged = 0;    // worst-case mode: executions that measured the property
  // The digest audit: states met again and compared, states that could not be written down
  // (a target program's), and the first difference found (empty: none).
  std::uint64_t audit_compared = 0;
  std::uint64_t audit_unwritten = 0;
  std::string audit_failure;
  // A replay or a restore that did not stand where the path it repeats said (another question,
  // or the same in another state), with the decision it parted at: the search stopped there,
  // for it would have searched another branch than the one it meant (empty: none).
  std::string diverged;
};

const char* verdict_name(ExploreResult::Verdict verdict);

ExploreResult search(const System& system, const ExploreOptions& options);

// The digest-drop test's hook (explore/digest_drop_test.cpp), null in every real run: told of
// every stop of a world the search keys by its digest, with the stop's key, how the search
// keys this stop from a shape, and the walk the shape digests (value by value, with a trail
// following it). Called inside the execution, with the walk allocating nothing in it.
class KeyProbe {
 public:
  using Walk = std::function<void(state::Trail&, const std::function<void(std::int64_t)>&)>;
  virtual void stopped(std::uint64_t key, const std::function<std::uint64_t(std::uint64_t)>& key_of_shape,
                       const Walk& walk) = 0;

 protected:
  ~KeyProbe() = default;
};
inline KeyProbe* key_probe_for_tests = nullptr;

// The scenario on the simulated kernel, searched.
ExploreResult search(const sim::Scenario& scenario, const checker::Costs& costs,
                     const ExploreOptions& options);

}  // namespace loopsim::explore
