// The search's monitors (sim/monitors.hpp) against the checker's judges: a monitor decides its
// part of a verdict from the state it keeps, the judge from the whole trace, and the two are
// written apart. Here both read the same runs, every arm of every shipped scenario of the
// built-in loop, and must agree; each monitor must also see its property both hold and break,
// so that the agreement is not vacuous.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <set>

#include "checker/monitoring.hpp"
#include "checker/suite.hpp"
#include "scenario/scenario.hpp"
#include "sim/world.hpp"
#include "target/run.hpp"

using namespace loopsim;

namespace {

std::vector<std::string> shipped_files() {
  std::vector<std::string> out;
  for (const char* dir : {"/scenarios", "/tests/data/explore"}) {
    for (const auto& entry : std::filesystem::directory_iterator(std::string(LOOPSIM_SOURCE_DIR) + dir)) {
      if (entry.path().extension() == ".toml") out.push_back(entry.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// What the monitor leaves to the end state, as the judge reads it: requests never answered
// (latency, max_gap), connections still waiting at the end (no_stranded_backlog), or open or
// handed over and not admitted (shutdown_clean).
bool end_state_holds(const sim::Trace& trace, const sim::Expectation& e) {
  if (e.property == "latency" || e.property == "max_gap") {
    bool ok = checker::answered(trace, e.of).held;
    if (!e.after.empty()) ok = ok && checker::answered(trace, e.after).held;
    return ok;
  }
  const auto* end = trace.events.empty() ? nullptr : std::get_if<sim::ev::RunEnd>(&trace.events.back());
  if (e.property == "no_stranded_backlog") return end != nullptr && end->backlog + end->handoffs == 0;
  if (e.property == "shutdown_clean") return end != nullptr && end->handoffs == 0 && end->open_connections == 0;
  return true;
}

}  // namespace

TEST_CASE("monitors agree with the checker's judges on every arm of every shipped scenario", "[long]") {
  std::map<std::string, std::set<bool>> seen;  // kind -> the monitor's verdicts seen
  int compared = 0;
  for (const std::string& path : shipped_files()) {
    const std::string text = sim::read_scenario_file(path);
    sim::Scenario base = sim::parse_scenario(text, path);
    if (base.target) continue;  // a target's run is a program's, not the built-in loop's
    const checker::Costs costs = checker::costs_for(text, path);
    std::vector<sim::Arm> arms{sim::Arm{"base", {}, {}}};
    arms.insert(arms.end(), base.arms.begin(), base.arms.end());
    for (const sim::Arm& arm : arms) {
      sim::Scenario scenario = sim::scenario_for_arm(text, path, arm);
      scenario.file = path;
      for (std::uint64_t seed : {scenario.seed, scenario.seed + 1}) {
        scenario.seed = seed;
        sim::RunResult run = sim::run(scenario, arm.name);
        if (!run.trace.cut.empty()) continue;
        const std::vector<checker::Verdict> verdicts = checker::evaluate(run.trace, scenario.expect, costs);
        for (std::size_t i = 0; i < scenario.expect.size(); ++i) {
          const sim::Expectation& e = scenario.expect[i];
          sim::Monitors monitors(run.trace);
          if (!checker::watch(monitors, e, costs)) continue;
          const bool monitor = monitors.held().at(0);
          const bool judge = verdicts.at(i).held;
          const std::string kind = e.property + (e.after.empty() ? "" : " after");
          INFO(path << " arm " << arm.name << " seed " << seed << ": " << kind << " of \"" << e.of << "\"; judge "
                    << judge << " (" << verdicts[i].detail << "), monitor " << monitor);
          // A monitor that says broken is right; where the end state has nothing to add, a
          // judge that says broken is the monitor's to say too.
          if (!monitor) CHECK_FALSE(judge);
          if (end_state_holds(run.trace, e)) CHECK(monitor == judge);
          seen[kind].insert(monitor);
          ++compared;
        }
      }
    }
  }
  INFO("verdicts compared: " << compared);
  for (const char* kind : {"latency", "latency after", "max_gap", "batch_bound", "no_spin", "post_latency",
                           "no_stranded_backlog", "shutdown_clean"}) {
    INFO(kind);
    CHECK(seen[kind] == std::set<bool>{false, true});
  }
}
