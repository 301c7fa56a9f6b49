#include "checker/suite.hpp"

#include "checker/story.hpp"

#include "scenario/properties.hpp"
#include "target/run.hpp"
#include "target/target.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <sstream>

namespace loopsim::checker {

namespace {

std::string read_file(const std::string& path) { return sim::read_scenario_file(path); }

[[noreturn]] void bad_expectation(const sim::Scenario& s, const sim::Expectation& e,
                                  const std::string& what, const std::string& hint) {
  throw sim::ScenarioError(s.file + ":" + std::to_string(e.line) + ":1: " + what, hint);
}

// `word` as the shell reads it back: bare when it is plain, else in single quotes.
std::string shell_quoted(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || std::strchr("-_./=:,+@%", ch) != nullptr;
  });
  if (plain) return word;
  std::string out = "'";
  for (char ch : word) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

std::string replay_command(const std::string& path, std::uint64_t seed, const std::string& arm,
                           const std::vector<sim::Override>& overrides) {
  std::string command = "loopsim run " + shell_quoted(path) + " --seed " + std::to_string(seed);
  for (const auto& o : overrides) command += " --set " + shell_quoted(o.key + "=" + o.value);
  return command + " --arm " + shell_quoted(arm);
}

bool is_count(const std::optional<sim::Bound>& bound) {
  return bound && bound->unit == sim::Bound::Unit::count;
}

// What the property's kind asks of an expectation: a group, a bound, and bounds in its unit.
void check_kind(const sim::Scenario& s, const sim::Expectation& e, const sim::PropertyKind& kind) {
  if (kind.needs_of && e.of.empty()) {
    bad_expectation(s, e, e.property + " needs `of`", "name a client group: of = \"fast\"");
  }
  if (kind.needs_max && !e.max) {
    bad_expectation(s, e, e.property + " needs `max`",
                    kind.measures == sim::Measures::count ? "for example max = 100" : "for example max = \"500ms\"");
  }
  if (kind.needs_min && !e.min) {
    bad_expectation(s, e, e.property + " needs `min`", "for example min = 2048");
  }
  for (const auto* bound : {&e.min, &e.max}) {
    if (!*bound) continue;
    if (kind.measures == sim::Measures::count && !is_count(*bound)) {
      bad_expectation(s, e, e.property + "'s bounds are counts, not \"" + (*bound)->text + "\"",
                      "write a whole number without quotes: " + std::string(bound == &e.min ? "min = 2048" : "max = 100"));
    }
    if (kind.measures == sim::Measures::time && is_count(*bound)) {
      bad_expectation(s, e, e.property + "'s " + (bound == &e.min ? "min" : "max") + " is a time, not a count",
                      "for example max = \"2ms\" or max = \"3 requests\"");
    }
  }
}

// Choices pinned by a counterexample or recorded (--replay): the run is one schedule that a
// search found, and a target's death under it is that schedule's failure.
bool pins_choices(const sim::Scenario& scenario, const SuiteOptions& options) {
  return options.replay ? !options.replay->empty() : !scenario.choices.empty();
}

Verdict target_died(const sim::TargetDied& e) {
  Verdict verdict;
  verdict.property = std::string(sim::target_died);
  verdict.held = false;
  verdict.unit = Unit::count;
  verdict.measured = 1;  // one death, where none is allowed
  verdict.detail = std::string("under the pinned choices: ") + e.what();
  return verdict;
}

}  // namespace

Costs costs_for(const std::string& text, const std::string& path) {
  Costs costs;
  int batch = sim::file_accept_batch(text, path);
  costs.batch = batch > 0 ? batch : LoopConfig{}.accept_batch;
  return costs;
}

ArmOutcome outcome_of(const ArmReport& arm) {
  if (!arm.error.empty()) return ArmOutcome::error;
  if (arm.judgement.limited()) return ArmOutcome::limit;
  if (arm.expect_violated.empty()) return arm.judgement.held ? ArmOutcome::held : ArmOutcome::violated;
  return arm.judgement.held ? ArmOutcome::caught : ArmOutcome::not_caught;
}

bool RunReport::held() const {
  return std::all_of(arms.begin(), arms.end(), [](const ArmReport& a) { return a.judgement.held; });
}

bool RunReport::errored() const {
  return std::any_of(arms.begin(), arms.end(), [](const ArmReport& a) { return !a.error.empty(); });
}

bool RunReport::limited() const {
  return held() && std::any_of(arms.begin(), arms.end(), [](const ArmReport& a) { return a.judgement.limited(); });
}

void validate(const sim::Scenario& scenario) {
  for (const sim::Expectation& e : scenario.expect) {
    const sim::PropertyKind* kind = sim::property_kind(e.property);
    if (kind == nullptr) {
      std::string names;
      for (const auto& n : sim::property_names) names += (names.empty() ? "" : ", ") + std::string(n);
      bad_expectation(scenario, e, "unknown property \"" + e.property + "\"", "known: " + names);
    }
    check_kind(scenario, e, *kind);
  }
}

SuiteResult run_suite(const std::string& path, const SuiteOptions& options) {
  std::string text = read_file(path);
  sim::Scenario base = sim::parse_scenario(text, path, options.overrides);
  base.file = path;
  validate(base);
  Costs costs = costs_for(text, path);

  std::vector<sim::Arm> arms{sim::Arm{"base", {}, {}}};
  arms.insert(arms.end(), base.arms.begin(), base.arms.end());
  SuiteResult result;
  result.report.scenario = base.name;
  result.report.file = path;
  result.report.seed = options.seed.value_or(base.seed);
  bool found = false;
  for (const sim::Arm& arm : arms) {
    if (options.only_arm && *options.only_arm != arm.name) continue;
    found = true;
    sim::Scenario scenario = sim::scenario_for_arm(text, path, arm, options.overrides);
    scenario.file = path;
    scenario.seed = result.report.seed;
    if (options.verdicts_only) scenario.trace_keep = events_needed(scenario.expect);
    if (scenario.target) scenario.target->output = options.target_output;
    std::int64_t started = options.wall_ns ? options.wall_ns() : 0;
    // Recorded choices (--replay), or the ones a counterexample file pins: either way, a run
    // that leaves them is not the run they describe.
    std::optional<model::ReplayChooser> replay;
    if (options.replay) {
      replay.emplace(*options.replay);
    } else if (!scenario.choices.empty()) {
      replay.emplace(scenario.choices);
    }
    sim::RunResult run;
    std::optional<Verdict> died;
    ArmReport report;
    try {
      run = sim::run(scenario, arm.name, replay ? &*replay : nullptr, options.servers);
    } catch (const sim::TargetDied& e) {
      if (!pins_choices(scenario, options)) {
        report.error = e.what();
        report.error_hint = e.hint;
      } else {
        died = target_died(e);
      }
    } catch (const sim::ScenarioError& e) {
      report.error = e.what();
      report.error_hint = e.hint;
    }
    report.wall_ns = options.wall_ns ? options.wall_ns() - started : 0;
    report.name = arm.name;
    report.expect_violated = arm.expect_violated;
    report.replay = replay_command(path, result.report.seed, arm.name, options.overrides);
    if (!report.error.empty()) {
      report.judgement.held = false;
      result.report.arms.push_back(std::move(report));
      result.traces.emplace_back();
      continue;
    }
    report.verdicts = died ? std::vector<Verdict>{*died} : evaluate(run.trace, scenario.expect, costs);
    report.judgement = judge(report.verdicts, arm.expect_violated, !run.trace.cut.empty());
    if (std::any_of(report.verdicts.begin(), report.verdicts.end(), [](const Verdict& v) { return !v.held; }))
      report.story = story(run.trace, report.verdicts, replay.has_value());
    report.cut = run.trace.cut;
    if (!report.cut.empty()) report.cut_at = scenario.position_of({"horizon"});
    report.stats = run.stats;
    report.replay_diverged = !died && replay && (replay->divergences() > 0 || !replay->exhausted());
    if (report.replay_diverged) report.divergence = replay->first_divergence();
    result.report.arms.push_back(std::move(report));
    result.traces.push_back(std::move(run.trace));
  }
  if (!found) {
    throw sim::ScenarioError(path + ":1:1: no arm named \"" + *options.only_arm + "\"",
                             "arms are \"base\" and the names under [[arms]]");
  }
  // Where no arm could run, the scenario itself is in question: its first error is the error.
  const auto& arms_run = result.report.arms;
  if (std::all_of(arms_run.begin(), arms_run.end(), [](const ArmReport& a) { return !a.error.empty(); })) {
    throw sim::ScenarioError(arms_run.front().error, arms_run.front().error_hint);
  }
  return result;
}

}  // namespace loopsim::checker
