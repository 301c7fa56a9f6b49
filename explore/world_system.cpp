// The explorer's view of a sim::World: the scenario on the simulated kernel with the real loop.
#include <algorithm>
#include <optional>

#include "explore/system.hpp"
#include "model/digest.hpp"
#include "sim/target.hpp"
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

// An execution of a target program, in its own process, driven a step at a time. Its digest
// cannot hold the program's memory, so it holds the decisions taken so far as well: two
// executions meet in a state only when they got there the same way, and the search is a tree.
class TargetExecution final : public Execution, private model::Chooser {
 public:
  TargetExecution(const sim::Scenario& scenario, const checker::Costs& costs, model::Chooser& chooser)
      : scenario_(scenario), costs_(costs), chooser_(chooser), process_(scenario, "explore", sim::TargetMode::steps) {
    report_ = process_.begin(*this);
  }

  bool step() override {
    report_ = process_.step(*this);
    ++steps_;
    return report_.stepped != 0;
  }
  std::uint64_t digest() const override {
    model::Digest d;
    d.add(std::int64_t(report_.digest));
    d.add(std::int64_t(path_));
    return d.value();
  }
  bool backlog() const override { return report_.backlog != 0; }
  std::uint64_t accepted() const override { return report_.accepted; }
  Nanos now() const override { return Nanos(report_.now); }
  bool quiescent() const override { return report_.quiescent != 0; }
  Outcome finish() override {
    sim::RunResult run = process_.finish(*this);
    return judged(run.trace, scenario_, costs_);
  }

 private:
  std::uint32_t choose(model::ChoiceKind kind, std::uint32_t options) override {
    std::uint32_t pick = chooser_.choose(kind, options);
    model::Digest d;
    for (std::int64_t v : {std::int64_t(path_), std::int64_t(steps_), std::int64_t(kind), std::int64_t(options), std::int64_t(pick)}) d.add(v);
    path_ = d.value();
    return pick;
  }

  const sim::Scenario& scenario_;
  const checker::Costs& costs_;
  model::Chooser& chooser_;
  sim::TargetProcess process_;
  sim::wire::Report report_;
  std::uint64_t path_ = 0;
  std::uint64_t steps_ = 0;
};

class TargetSystem final : public System {
 public:
  TargetSystem(const sim::Scenario& scenario, const checker::Costs& costs) : scenario_(scenario), costs_(costs) {}
  std::unique_ptr<Execution> start(model::Chooser& chooser) const override {
    return std::make_unique<TargetExecution>(scenario_, costs_, chooser);
  }
  bool judged_by_state() const override { return false; }  // its states are paths (above)
  bool forkable() const override { return false; }          // its execution is another process

 private:
  const sim::Scenario& scenario_;
  const checker::Costs& costs_;
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
  if (scenario.target) return std::make_unique<TargetSystem>(scenario, costs);
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
