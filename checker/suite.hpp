// A suite: one scenario file, its base and each of its arms, run and judged.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "checker/judge.hpp"
#include "checker/properties.hpp"
#include "scenario/scenario.hpp"
#include "sim/world.hpp"

namespace loopsim::checker {

struct ArmReport {
  std::string name;
  std::vector<std::string> expect_violated;
  std::vector<Verdict> verdicts;
  ArmJudgement judgement;
  sim::RunStats stats;
  std::int64_t wall_ns = 0;
  std::string replay;  // the command that reproduces this arm
  std::string cut;     // the run stopped before its horizon: why (Trace::cut)
  std::string cut_at;  // and the horizon it did not reach: "file:line:column"
  // --replay, or a scenario's pinned choices: the choices did not fit this run. Where first:
  bool replay_diverged = false;
  std::string divergence;
  // The arm could not be run to its end (its target could not start, or called what the seam
  // refuses): why, "file:line:column: ...", and a hint. It has no verdicts; the other arms keep
  // theirs.
  std::string error, error_hint;
  // An arm with a violated property: its run told in words (checker/story.hpp).
  std::vector<std::string> story;

  // Whether this arm expects `property` violated (a sabotage arm's claim).
  bool expects(const std::string& property) const {
    for (const std::string& p : expect_violated) {
      if (p == property) return true;
    }
    return false;
  }
};

// An arm's outcome: a base arm held or was violated, a sabotage arm (one that expects a
// violation) was caught or not, and an arm a limit stopped is neither.
enum class ArmOutcome : std::uint8_t { limit, held, violated, caught, not_caught, error };
ArmOutcome outcome_of(const ArmReport& arm);

struct RunReport {
  std::string scenario;
  std::string file;
  std::uint64_t seed = 0;
  std::vector<ArmReport> arms;
  bool held() const;
  // Held on everything decided, but an arm stopped before its horizon left something undecided.
  bool limited() const;
  bool errored() const;  // an arm could not be run (ArmReport::error)
};

struct SuiteOptions {
  std::vector<sim::Override> overrides;  // --set, applied to the base and to every arm
  std::optional<std::uint64_t> seed;     // --seed
  std::optional<std::string> only_arm;   // --arm: run just this one ("base" for the base)
  // --replay: the choices of a recorded run, taken instead of the seed's (with only_arm).
  std::optional<std::vector<model::Choice>> replay;
  // Reads a wall clock for the report's wall_ns; the engine itself never does.
  std::function<std::int64_t()> wall_ns;
  // --trace-level verdicts: each arm's trace keeps only what its expectations read
  // (events_needed); false: all of it.
  bool verdicts_only = false;
  // What serves: the built-in loop unless these say otherwise (a loop of your own).
  sim::ServerFactories servers;
  // Where a target's stdout and stderr go (sim::TargetSpec::output); empty: out/targets/NAME.
  std::string target_output;
};

struct SuiteResult {
  RunReport report;
  std::vector<sim::Trace> traces;  // one per arm run, in report order
};

// Loads, validates, runs and judges. Throws sim::ScenarioError for a bad scenario or override.
SuiteResult run_suite(const std::string& path, const SuiteOptions& options);

// What bounds in "batches" count: the batch the scenario file sets for its base, so an arm or a
// --set that changes the batch is held to the same bound; a batch of 0 counts as the default.
Costs costs_for(const std::string& text, const std::string& path);

// Rejects expectations the checker cannot judge (unknown property, missing `of` or `max`).
void validate(const sim::Scenario& scenario);

}  // namespace loopsim::checker
