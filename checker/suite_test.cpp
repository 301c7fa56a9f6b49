// validate(): the expectations the checker cannot judge are scenario errors with file:line and
// a hint, before anything runs.
#include "checker/suite.hpp"

#include "checker/judge.hpp"
#include "checker/properties.hpp"
#include "sim/world.hpp"
#include "target/run.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>

using namespace loopsim;
using namespace loopsim::sim;

namespace {

Bound count(double n) { return Bound{Bound::Unit::count, n, std::to_string(int(n))}; }
Bound ms(double n) { return Bound{Bound::Unit::time, n * 1e6, std::to_string(int(n)) + "ms"}; }

Expectation expect(std::string property, std::optional<Bound> min = {}, std::optional<Bound> max = {}) {
  Expectation e;
  e.property = std::move(property);
  e.min = min;
  e.max = max;
  e.line = 7;
  return e;
}

// The message validate() gives for a scenario with this one expectation, or "valid".
std::string problem(const Expectation& e) {
  Scenario s;
  s.file = "s.toml";
  s.expect = {e};
  try {
    checker::validate(s);
  } catch (const ScenarioError& error) {
    return error.what();
  }
  return "valid";
}

}  // namespace

TEST_CASE("validate takes the loop rules' properties with the bounds they need") {
  CHECK(problem(expect("capacity", count(2048))) == "valid");
  CHECK(problem(expect("capacity", count(2048), count(4096))) == "valid");
  CHECK(problem(expect("post_latency", {}, ms(2))) == "valid");
  CHECK(problem(expect("no_spin")) == "valid");
  CHECK(problem(expect("no_spin", {}, count(10))) == "valid");
  CHECK(problem(expect("shutdown_clean")) == "valid");
  CHECK(problem(expect("batch_bound")) == "valid");
}

TEST_CASE("validate rejects a missing bound or a bound in the wrong unit") {
  CHECK(problem(expect("capacity")) == "s.toml:7:1: capacity needs `min`");
  CHECK(problem(expect("capacity", ms(10))) == "s.toml:7:1: capacity's bounds are counts, not \"10ms\"");
  CHECK(problem(expect("post_latency")) == "s.toml:7:1: post_latency needs `max`");
  CHECK(problem(expect("post_latency", {}, count(3))) ==
        "s.toml:7:1: post_latency's max is a time, not a count");
  CHECK(problem(expect("no_spin", {}, ms(5))) == "s.toml:7:1: no_spin's bounds are counts, not \"5ms\"");
  CHECK(problem(expect("latency")) == "s.toml:7:1: latency needs `of`");
  CHECK(problem(expect("spin")).starts_with("s.toml:7:1: unknown property \"spin\""));
}

TEST_CASE("no_spin holds on the busy shapes that are not spins: wrk, the floods, a slow reader, an idle crowd") {
  for (const char* name : {"wrk", "flood", "flood-abort", "flood-syn", "stalled-reader", "idle-crowd", "slowloris"}) {
    INFO(name);
    Scenario s = load_scenario(std::string(LOOPSIM_SOURCE_DIR) + "/scenarios/" + name + ".toml");
    RunResult r = run(s);
    Expectation spin;
    spin.property = "no_spin";
    checker::Verdict v = checker::evaluate(r.trace, {spin}, checker::Costs{}).at(0);
    CHECK(v.held);
    CHECK(v.measured < 10);
  }
}

TEST_CASE("what generate found is kept: every expectation of tests/data/generated/ holds") {
  for (const auto& entry : std::filesystem::directory_iterator(std::string(LOOPSIM_SOURCE_DIR) + "/tests/data/generated")) {
    INFO(entry.path().string());
    checker::RunReport report = checker::run_suite(entry.path().string(), checker::SuiteOptions{}).report;
    CHECK(report.held());
  }
}

namespace {

// A scenario whose run stops at its trace limit: an idle timeout of 1 ns wakes the loop a
// billion times a second, for nothing.
std::string cut_short(const std::string& expectations, const std::string& arms = "") {
  std::string dir = std::filesystem::temp_directory_path().string();
  std::string path = dir + "/loopsim-cut-short-" + std::to_string(std::hash<std::string>{}(expectations + arms)) + ".toml";
  std::ofstream(path) << "name = \"cut\"\nhorizon = \"1s\"\n[loop]\nidle_timeout = \"1ns\"\n" << expectations << arms;
  return path;
}

}  // namespace

TEST_CASE("a limit never hides a finding: a run stopped at its trace limit is judged on the trace so far") {
  // One run (each costs 10,000,000 events): the spin is certain on the trace so far, so it is
  // violated with the limit named; answered needs the end, so it is undecided.
  checker::RunReport report =
      checker::run_suite(cut_short("[[expect]]\nproperty = \"answered\"\n[[expect]]\nproperty = \"no_spin\"\n"), {}).report;
  REQUIRE(report.arms.size() == 1);
  const checker::Verdict& answered = report.arms[0].verdicts.at(0);
  const checker::Verdict& spin = report.arms[0].verdicts.at(1);
  CHECK_FALSE(answered.decided);
  CHECK(answered.detail.find("undecided: the run stopped before its horizon (its trace passed 10000000 events") == 0);
  CHECK_FALSE(spin.held);
  CHECK(spin.decided);
  CHECK(spin.detail.find("(the run stopped before its horizon: its trace passed 10000000 events") != std::string::npos);
  CHECK_FALSE(report.held());
  CHECK(report.arms[0].judgement.undecided == std::vector<std::string>{"answered"});
  CHECK(report.arms[0].cut.find("its trace passed 10000000 events") == 0);
}

TEST_CASE("judging a run cut short: the base with anything undecided is a limit, a sabotage caught is caught") {
  checker::Verdict undecided, violated, held;
  undecided.property = "answered";
  undecided.decided = false;
  violated.property = "no_spin";
  violated.held = false;
  held.property = "latency";
  checker::ArmJudgement base = checker::judge({undecided, held}, {}, true);
  CHECK(base.held);
  CHECK(base.limited());
  CHECK(checker::judge({}, {}, true).limited());         // cut with nothing to judge
  CHECK_FALSE(checker::judge({}, {}, false).limited());  // ran whole
  checker::ArmJudgement caught = checker::judge({undecided, violated}, {"no_spin"}, true);
  CHECK(caught.held);
  CHECK_FALSE(caught.limited());
  checker::ArmJudgement open = checker::judge({undecided, held}, {"answered"}, true);
  CHECK(open.held);
  CHECK(open.limited());  // its sabotage's property is undecided
  CHECK(checker::judge({violated, undecided}, {}, true).held == false);
}

TEST_CASE("a loop that keeps an EMFILE accept owed spins, and no_spin says so over a 10 s horizon within the default limits") {
  checker::SuiteOptions options;
  options.only_arm = "owed-after-emfile";
  options.overrides = {{"horizon", "\"10s\""}};
  checker::RunReport report = checker::run_suite(std::string(LOOPSIM_SOURCE_DIR) + "/scenarios/emfile.toml", options).report;
  REQUIRE(report.arms.size() == 1);
  CHECK(report.arms[0].judgement.held);  // caught, as the arm expects
  CHECK_FALSE(report.arms[0].judgement.limited());
  CHECK(report.arms[0].cut.empty());
}
