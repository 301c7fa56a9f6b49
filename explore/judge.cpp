// Judging one generated scenario: a run within a step budget, its verdicts, and a livelock told
// from a long run.
#include <memory>
#include <sstream>

#include "checker/loop_properties.hpp"
#include "checker/suite.hpp"
#include "explore/generate.hpp"
#include "sim/run_guard.hpp"
#include "sim/world.hpp"
#include "target/run.hpp"

namespace loopsim::explore {

// Judging one scenario, with the step budget.

namespace {

// A world and the scenario it refers to. A livelocked world cannot be finished (finish() runs
// to the horizon, which a run without virtual progress never reaches): it is abandoned.
struct Held {
  sim::Scenario scenario;
  std::unique_ptr<sim::World> world;
};

// The verdicts of a whole run: the properties violated, the first one's detail.
void judge_trace(Judged& j, const sim::Trace& trace, const sim::Scenario& scenario, const checker::Costs& costs) {
  j.virtual_time = since_start(trace.horizon);
  for (const checker::Verdict& v : checker::evaluate(trace, scenario.expect, costs)) {
    if (v.held) continue;
    if (j.violated.empty()) j.detail = v.property + ": " + v.detail;
    j.violated.push_back(v.property);
  }
  if (!j.violated.empty()) j.verdict = Judged::Verdict::violated;
}

// A target runs in its own process (target/target.hpp), to its horizon: no step budget, but loopsim
// gives up on a process that says nothing for 120 s, and a run limit stops a runaway trace.
Judged judge_target(const sim::Scenario& scenario, const checker::Costs& costs) {
  Judged j;
  sim::RunResult run = sim::run(scenario, "base");
  j.steps = run.stats.steps;
  judge_trace(j, run.trace, scenario, costs);
  return j;
}

}  // namespace

Judged judge_text(const std::string& text, const std::string& name, const StepBudget& budget) {
  auto out_of_time = [&budget] { return budget.out_of_time && budget.out_of_time(); };
  Judged timed_out;
  timed_out.verdict = Judged::Verdict::out_of_time;
  timed_out.detail = "the time limit stopped the run";
  auto held = std::make_unique<Held>();
  held->scenario = sim::parse_scenario(text, name);
  held->scenario.file = name;
  if (out_of_time()) return timed_out;  // between the phases too: a long shape loads slowly
  checker::validate(held->scenario);
  checker::Costs costs = checker::costs_for(text, name);
  if (out_of_time()) return timed_out;
  if (held->scenario.target) return judge_target(held->scenario, costs);
  held->world = std::make_unique<sim::World>(held->scenario, "base", nullptr);
  sim::World& world = *held->world;
  Judged j;
  sim::RunGuard guard(world, sim::RunLimits{budget.at_instant, sim::trace_events_max, budget.total});
  while (world.step()) {
    ++j.steps;
    if (j.steps % out_of_time_every == 0 && out_of_time()) {
      world.abandon();
      return timed_out;
    }
    std::optional<sim::Cut> limit = guard.check(world);
    if (!limit) continue;
    j.virtual_time = since_start(world.now());
    if (limit->stalled()) {
      j.verdict = Judged::Verdict::livelock;
      j.violated = {"livelock"};
      j.detail = limit->message;
      j.livelock_trace = world.trace();
      world.abandon();
      return j;
    }
    // Only long (its step budget, or its trace): what the run so far decides still counts.
    sim::RunResult cut = world.stop_short(limit->message, false, false);
    judge_trace(j, cut.trace, held->scenario, costs);
    j.virtual_time = cut.stats.virtual_time;  // where it stopped, not the horizon
    if (j.verdict == Judged::Verdict::held) {
      j.verdict = Judged::Verdict::bound;
      j.detail = cut.trace.cut;
    }
    return j;
  }
  if (out_of_time()) {
    world.abandon();
    return timed_out;
  }
  sim::RunResult run = world.finish();
  judge_trace(j, run.trace, held->scenario, costs);
  return j;
}
}  // namespace loopsim::explore
