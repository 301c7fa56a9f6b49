// The explorer's view of a sim::World: the scenario on the simulated kernel with the real loop.
#include <algorithm>
#include <optional>

#include "explore/system.hpp"
#include "sim/world.hpp"

namespace loopsim::explore {

namespace {

Outcome judged(const sim::Trace& trace, const sim::Scenario& scenario, const checker::Costs& costs) {
  Outcome outcome;
  outcome.verdicts = checker::evaluate(trace, scenario.expect, costs);
  for (const checker::Verdict& v : outcome.verdicts) {
    if (!v.held) outcome.violated.push_back(v.property);
  }
  return outcome;
}

class WorldExecution final : public Execution {
 public:
  WorldExecution(const sim::Scenario& scenario, const checker::Costs& costs, model::Chooser& chooser,
                 bool symmetry)
      : scenario_(scenario), costs_(costs), world_(scenario, "explore", &chooser, symmetry) {}

  bool step() override { return world_.step(); }
  std::uint64_t digest() const override { return world_.digest(); }
  bool backlog() const override { return world_.backlog() > 0; }
  std::uint64_t accepted() const override { return world_.accepted(); }
  Nanos now() const override { return world_.now(); }
  bool quiescent() const override { return world_.quiescent(); }
  Outcome finish() override {
    sim::RunResult run = world_.finish();
    return judged(run.trace, scenario_, costs_);
  }

 private:
  const sim::Scenario& scenario_;
  const checker::Costs& costs_;
  sim::World world_;
};

class WorldSystem final : public System {
 public:
  WorldSystem(const sim::Scenario& scenario, const checker::Costs& costs, bool symmetry)
      : scenario_(scenario), costs_(costs), symmetry_(symmetry) {}
  std::unique_ptr<Execution> start(model::Chooser& chooser) const override {
    return std::make_unique<WorldExecution>(scenario_, costs_, chooser, symmetry_);
  }
  // `answered` counts what each client sent and was answered, which its state holds; the end's
  // backlog is the state's; liveness is the state graph's. Every other property (and
  // no_stranded_backlog with a `max`) measures times or events along the way.
  bool judged_by_state() const override {
    return std::all_of(scenario_.expect.begin(), scenario_.expect.end(), [](const sim::Expectation& e) {
      return e.property == "answered" || e.property == "liveness" ||
             (e.property == "no_stranded_backlog" && !e.max);
    });
  }

 private:
  const sim::Scenario& scenario_;
  const checker::Costs& costs_;
  bool symmetry_;
};

}  // namespace

std::unique_ptr<System> world_system(const sim::Scenario& scenario, const checker::Costs& costs,
                                     bool symmetry) {
  return std::make_unique<WorldSystem>(scenario, costs, symmetry);
}

Outcome judge_choices(const sim::Scenario& scenario, const checker::Costs& costs,
                      const std::vector<model::Choice>& choices) {
  model::ReplayChooser chooser(choices);
  sim::RunResult run = sim::run(scenario, "explore", &chooser);
  return judged(run.trace, scenario, costs);
}

std::vector<std::uint64_t> path_of(const System& system, const std::vector<model::Choice>& choices) {
  model::ReplayChooser chooser(choices);
  std::unique_ptr<Execution> execution = system.start(chooser);
  std::vector<std::uint64_t> path;
  do {
    path.push_back(execution->digest());
  } while (execution->step());
  execution->finish();
  return path;
}

}  // namespace loopsim::explore
