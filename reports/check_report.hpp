// What `loopsim check` reports about many scenarios: one line per arm in a table, the same as
// JSON (every scenario's run document, reports::to_json, and a summary), and the verdict that
// becomes the exit status.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "checker/suite.hpp"

namespace loopsim::reports {

// One scenario file: its report, or why it could not be run.
struct ScenarioOutcome {
  std::string file;
  std::optional<checker::RunReport> report;
  std::string error;  // "file:line:column: message", when there is no report
  std::string hint;
  bool ok() const { return report.has_value(); }
};

enum class CheckVerdict { held, violated, error, limit };

struct CheckTotals {
  int scenarios = 0, arms = 0, held = 0, violated = 0, errors = 0, limits = 0;
  // Of those errors and limits, the scenarios that gave no report at all (one JUnit testcase
  // each), and the arms that could not be run (checker::ArmReport::error).
  int unreported = 0, arm_errors = 0;
  // Bad input outranks a violation: exit 2 means some scenario was not even judged. A limit
  // (exit 3) ranks below a violation and above a pass.
  CheckVerdict verdict() const;
};

CheckTotals totals(const std::vector<ScenarioOutcome>& outcomes);
// An arm's verdict in one word: held, caught, VIOLATED, NOT-CAUGHT.
std::string arm_verdict(const checker::ArmReport& arm);
// What broke, for people: "latency of fast: measured 1200.0 ms, bound 240.0 ms (1.5 batches)".
std::vector<std::string> arm_problems(const checker::ArmReport& arm);
// The scenario's name for reports: the report's, or the file's stem.
std::string scenario_name(const ScenarioOutcome& outcome);

// One outcome as bytes and back, every field kept: how a scenario run in a child process
// (checker::run_isolated) hands its outcome to the parent. Not a published format.
std::string encode_outcome(const ScenarioOutcome& outcome);
// Throws std::invalid_argument when the bytes are not an encoded outcome.
ScenarioOutcome decode_outcome(const std::string& bytes);

void print_check_table(const std::vector<ScenarioOutcome>& outcomes, std::ostream& out);
nlohmann::ordered_json check_json(const std::vector<ScenarioOutcome>& outcomes);

}  // namespace loopsim::reports
