// The explorer's view of a sim::World: the scenario on the simulated kernel with the real loop,
// or a target program's run driven step by step in its own process.
#include <algorithm>
#include <optional>

#include "base/assert.hpp"
#include "checker/loop_properties.hpp"
#include "checker/monitoring.hpp"
#include "explore/explorer.hpp"
#include "explore/fiber_execution.hpp"
#include "explore/system.hpp"
#include "model/sim_kernel.hpp"
#include "realloop/state.hpp"
#include "scenario/properties.hpp"
#include "sim/run_guard.hpp"
#include "sim/world.hpp"
#include "target/run.hpp"
#include "target/target.hpp"

namespace loopsim::explore {

namespace {

using state::fold;

Outcome judged(const sim::Trace& trace, const sim::Scenario& scenario, const checker::Costs& costs) {
  Outcome outcome;
  outcome.verdicts = checker::evaluate(trace, scenario.expect, costs);
  for (const checker::Verdict& v : outcome.verdicts) {
    if (!v.held) outcome.violated.push_back(v.property);
  }
  if (!trace.cut.empty() && !trace.stalled && outcome.violated.empty()) outcome.cut = trace.cut;
  return outcome;
}

// A target program that died under a schedule (sim::TargetDied): a failure of its own, with no
// trace to judge.
Outcome died(const std::string& how) {
  Outcome outcome;
  outcome.violated = {std::string(sim::target_died)};
  outcome.died = how;
  return outcome;
}

// The key a search merges on: the shape, the time left to the horizon (a state nearer the end
// has fewer futures), and at a decision what it asks.
std::uint64_t key_of(const Stop& stop, Instant horizon) {
  std::uint64_t key = fold(fold(stop.shape, std::uint64_t((horizon - stop.now).count())), std::uint64_t(stop.kind));
  if (stop.kind == Stop::Kind::decision) key = fold(fold(key, std::uint64_t(stop.choice)), stop.options);
  return key;
}

// The properties a run's end state decides: what every client sent and was answered (its
// state holds both), and what waits in a backlog at the end. Liveness is the state graph's.
// A property a monitor keeps (checker::monitorable) is decided by the state with its monitor's.
// Every other one measures times or events along the way: history, which two executions that
// meet in one state need not share.
std::vector<std::string> history_properties(const sim::Scenario& scenario) {
  std::vector<std::string> out;
  for (const sim::Expectation& e : scenario.expect) {
    bool by_state = e.property == "answered" || e.property == "liveness" ||
                    (e.property == "no_stranded_backlog" && !e.max) || checker::monitorable(e);
    if (!by_state && std::find(out.begin(), out.end(), e.property) == out.end()) out.push_back(e.property);
  }
  return out;
}

class WorldExecution final : public FiberExecution, private model::Chooser {
 public:
  WorldExecution(const sim::Scenario& scenario, const checker::Costs& costs, bool symmetry, bool snapshots,
                 const sim::ServerFactories& servers)
      : FiberExecution(snapshots ? std::make_unique<Arena>() : nullptr),
        scenario_(scenario),
        costs_(costs),
        symmetry_(symmetry),
        snapshots_(snapshots),
        servers_(servers) {}

  Outcome outcome() override { return judged(result_->trace, scenario_, costs_); }
  // (Asked at step and decision stops only, where the world is alive and its digest fresh.)
  std::optional<state::Transcript> transcript() const override {
    if (world_ == nullptr) return std::nullopt;
    return world_->horizon_transcript();
  }
  std::optional<Stop> stands_at(bool afresh) const override {
    if (world_ == nullptr) return std::nullopt;
    // Either way allocating nothing in the world's arena.
    Stop stop;
    stop.kind = paused_at().kind;
    if (afresh) {
      stop.shape = world_->horizon_digest_afresh(stop.beyond);
    } else if (auto kept = world_->horizon_digest_kept(stop.beyond)) {
      stop.shape = *kept;
    } else {
      return std::nullopt;
    }
    stop.now = world_->now();
    stop.choice = paused_at().choice;
    stop.options = paused_at().options;
    stop.key = key_of(stop, scenario_.horizon);
    return stop;
  }

 private:
  void body() override {
    world_ = new sim::World(scenario_, "explore", this, symmetry_, servers_);
    for (const sim::Expectation& e : scenario_.expect) checker::watch(world_->monitors(), e, costs_);
    // The limits of sim::run, under the same guard.
    std::string cut;
    bool stalled = false;
    sim::RunGuard guard(*world_);
    for (;;) {
      pause(observe(Stop::Kind::step));
      if (!world_->step()) break;
      ++steps_;
      if (std::optional<sim::Cut> limit = guard.check(*world_)) {
        cut = limit->message;
        stalled = limit->stalled();
        break;
      }
    }
    Stop end = observe(Stop::Kind::end);
    end.quiescent = !cut.empty() ? false : world_->quiescent();
    // In an arena nothing is unwound: the arena goes, or is restored, as a whole.
    result_ = new sim::RunResult(cut.empty() ? world_->finish(!snapshots_) : world_->stop_short(cut, stalled, false, !snapshots_));
    pause(end);
    delete result_;
    delete world_;
  }

  std::uint32_t choose(model::ChoiceKind kind, std::uint32_t options) override {
    if (world_ == nullptr) return 0;  // while the world is made: nothing is asked yet
    Stop stop = observe(Stop::Kind::decision);
    stop.choice = kind;
    stop.options = options;
    stop.key = key_of(stop, scenario_.horizon);
    probe(stop);
    LOOPSIM_ASSERT(options >= 1);
    const std::uint32_t pick = pause(stop);
    LOOPSIM_ASSERT_OP(pick, <, options);  // the search answers within the question
    return pick;
  }
  bool explores_windows() const override { return true; }

  Stop observe(Stop::Kind kind) const {
    Stop stop;
    stop.kind = kind;
    stop.shape = world_->horizon_digest(stop.beyond);
    stop.now = world_->now();
    LOOPSIM_ASSERT(stop.now <= scenario_.horizon);  // no stop is past the run's end
    stop.backlog = world_->backlog() > 0;
    stop.accepted = world_->accepted();
    stop.key = key_of(stop, scenario_.horizon);
    if (kind != Stop::Kind::decision) probe(stop);
    return stop;
  }

  // The digest-drop test's probe (explore/explorer.hpp).
  void probe(const Stop& stop) const {
    if (key_probe_for_tests == nullptr) [[likely]] return;
    key_probe_for_tests->stopped(
        stop.key,
        [&](std::uint64_t shape) {
          Stop again = stop;
          again.shape = shape;
          return key_of(again, scenario_.horizon);
        },
        [&](state::Trail& trail, const std::function<void(std::int64_t)>& add) { world_->horizon_walk(trail, add); });
  }

  const sim::Scenario& scenario_;
  const checker::Costs& costs_;
  bool symmetry_;
  bool snapshots_;
  const sim::ServerFactories& servers_;  // the system's, which outlives its executions
  sim::World* world_ = nullptr;
  sim::RunResult* result_ = nullptr;
};

// An execution of a target program, in its own process, driven a step at a time. Its digest
// cannot hold the program's memory, so it holds the decisions taken so far as well: two
// executions meet in a state only when they got there the same way, and the search is a tree.
class TargetExecution final : public FiberExecution, private model::Chooser {
 public:
  TargetExecution(const sim::Scenario& scenario, const checker::Costs& costs)
      : FiberExecution(nullptr), scenario_(scenario), costs_(costs) {}

  Outcome outcome() override {
    if (!died_.empty()) return died(died_);
    return judged(result_->trace, scenario_, costs_);
  }

 private:
  void body() override {
    sim::TargetProcess process(scenario_, "explore", sim::TargetMode::steps);
    try {
      drive(process);
    } catch (const sim::TargetDied& e) {
      // Before any decision the program dies whatever the schedule, as `loopsim run` sees it:
      // the scenario's error. After one, it died under this schedule: a finding.
      if (decisions_ == 0) throw;
      died_ = e.how;
      pause(observe(Stop::Kind::end));
    }
  }

  // The program's run, a step at a time, to its end stop.
  void drive(sim::TargetProcess& process) {
    report_ = process.begin(*this);
    for (;;) {
      pause(observe(Stop::Kind::step));
      report_ = process.step(*this);
      if (report_.stepped == 0) break;
      ++steps_;
    }
    Stop end = observe(Stop::Kind::end);
    end.quiescent = report_.quiescent != 0;
    sim::RunResult run = process.finish(*this);
    result_ = &run;
    pause(end);
    result_ = nullptr;
  }

  std::uint32_t choose(model::ChoiceKind kind, std::uint32_t options) override {
    Stop stop = observe(Stop::Kind::decision);
    stop.choice = kind;
    stop.options = options;
    stop.key = key_of(stop, scenario_.horizon);
    ++decisions_;
    std::uint32_t pick = pause(stop);
    path_ = fold(fold(fold(fold(path_, steps_), std::uint64_t(kind)), options), pick);
    return pick;
  }
  bool explores_windows() const override { return true; }

  Stop observe(Stop::Kind kind) const {
    Stop stop;
    stop.kind = kind;
    stop.shape = fold(report_.digest, path_);
    stop.now = Instant{Duration(report_.now)};
    stop.backlog = report_.backlog != 0;
    stop.accepted = report_.accepted;
    stop.key = key_of(stop, scenario_.horizon);
    return stop;
  }

  const sim::Scenario& scenario_;
  const checker::Costs& costs_;
  sim::wire::Report report_;
  std::uint64_t path_ = 0;
  std::uint64_t decisions_ = 0;
  sim::RunResult* result_ = nullptr;
  std::string died_;  // how the program died, if it did: the execution's finding
};

class TargetSystem final : public System {
 public:
  TargetSystem(const sim::Scenario& scenario, const checker::Costs& costs) : scenario_(scenario), costs_(costs) {}
  std::unique_ptr<Execution> start() const override { return std::make_unique<TargetExecution>(scenario_, costs_); }
  Merging merging() const override {
    return Merging{false, "a target program's memory is not in the state: each state is the path to it"};
  }

 private:
  const sim::Scenario& scenario_;
  const checker::Costs& costs_;
};

class WorldSystem final : public System {
 public:
  WorldSystem(const sim::Scenario& scenario, const checker::Costs& costs, bool symmetry, bool snapshots,
              sim::ServerFactories servers)
      : scenario_(scenario), costs_(costs), symmetry_(symmetry), snapshots_(snapshots), servers_(std::move(servers)) {
    // A search's runs keep what their properties read, as --trace-level verdicts does: the
    // verdicts are the same, and a snapshot is smaller.
    scenario_.trace_keep = checker::events_needed(scenario_.expect);
    sim::World probe(scenario_, "explore", nullptr, symmetry_, servers_);
    declares_state_ = probe.declares_state();
    probe.abandon();
  }
  std::unique_ptr<Execution> start() const override {
    return std::make_unique<WorldExecution>(scenario_, costs_, symmetry_, snapshots_, servers_);
  }
  Merging merging() const override {
    if (!declares_state_) {
      return Merging{false, "the loop does not declare its state (sim::OwnLoop::declares_state): each state is the path to it"};
    }
    std::vector<std::string> history = history_properties(scenario_);
    if (history.empty()) return Merging{};
    std::string names;
    for (const std::string& p : history) names += (names.empty() ? "" : ", ") + p;
    return Merging{false, names + " measure" + (history.size() == 1 ? "s" : "") +
                              " history that a state does not hold: no two executions are merged"};
  }

 private:
  sim::Scenario scenario_;
  const checker::Costs& costs_;
  bool symmetry_;
  bool snapshots_;
  sim::ServerFactories servers_;
  bool declares_state_ = true;
};

}  // namespace

std::unique_ptr<System> world_system(const sim::Scenario& scenario, const checker::Costs& costs, bool symmetry,
                                     bool snapshots, const sim::ServerFactories& servers) {
  if (scenario.target) return std::make_unique<TargetSystem>(scenario, costs);
  // Without the program routing allocations into arenas, branches are replayed (explore/arena.hpp).
  return std::make_unique<WorldSystem>(scenario, costs, symmetry, snapshots && arena_routing_installed(), servers);
}

Outcome judge_choices(const sim::Scenario& scenario, const checker::Costs& costs,
                      const std::vector<model::Choice>& choices) {
  model::ReplayChooser chooser(choices);
  try {
    sim::RunResult run = sim::run(scenario, "explore", &chooser);
    return judged(run.trace, scenario, costs);
  } catch (const sim::TargetDied& e) {
    if (choices.empty()) throw;  // as in the search: no decision, no finding
    return died(e.how);
  }
}

std::vector<std::uint64_t> path_of(const System& system, std::vector<model::Choice>& choices) {
  std::unique_ptr<Execution> execution = system.start();
  std::vector<std::uint64_t> path;
  std::vector<model::Choice> made;
  for (;;) {
    Stop stop = execution->advance();
    if (stop.kind == Stop::Kind::end) break;
    if (stop.kind == Stop::Kind::step) {
      path.push_back(stop.shape);
      continue;
    }
    std::size_t next = made.size();
    bool fits = next < choices.size() && choices[next].kind == stop.choice && choices[next].options == stop.options;
    std::uint32_t pick = fits ? choices[next].pick : 0;
    made.push_back(model::Choice{stop.choice, stop.options, pick});
    execution->decide(pick);
  }
  execution->abandon();
  choices = std::move(made);
  return path;
}

}  // namespace loopsim::explore
