// A run from start to end (sim::run), with the liveness watch and the limits that cut it: in
// this process, or in a target program's (target/target.hpp).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "model/choice.hpp"
#include "model/sim_kernel.hpp"
#include "sim/run_guard.hpp"
#include "sim/world.hpp"
#include "target/run.hpp"

namespace loopsim::sim {

namespace {

bool expects(const Scenario& scenario, const std::string& property) {
  return std::any_of(scenario.expect.begin(), scenario.expect.end(),
                     [&](const Expectation& e) { return e.property == property; });
}

// The states seen while connections wait, each with the accepts made by then: coming back to
// one with no accept since is a cycle that never takes them.
class LassoWatch {
 public:
  void look(const World& world) {
    if (found_) return;
    std::size_t backlog = world.backlog();
    if (backlog == 0) return;
    auto [it, fresh] = seen_.try_emplace(world.digest(), Seen{world.now(), world.accepted()});
    if (!fresh && it->second.accepted == world.accepted()) {
      found_ = ev::Lasso{world.now(), it->second.t, std::int64_t(backlog), false};
    }
  }
  void at_end(World& world) {
    if (!found_ && world.quiescent() && world.backlog() > 0) {
      found_ = ev::Lasso{world.now(), world.now(), std::int64_t(world.backlog()), true};
    }
    if (found_) world.note(*found_);
  }

 private:
  struct Seen {
    Instant t;
    std::uint64_t accepted;
  };
  std::unordered_map<std::uint64_t, Seen> seen_;  // by digest; looked up, never iterated
  std::optional<ev::Lasso> found_;
};

}  // namespace

RunResult run(const Scenario& scenario, const std::string& arm, model::Chooser* chooser,
              const ServerFactories& servers) {
  if (scenario.target && !servers.foreign) return run_target(scenario, arm, chooser);
  std::optional<model::ReplayChooser> pinned;  // a counterexample's choices
  if (chooser == nullptr && !scenario.choices.empty()) chooser = &pinned.emplace(scenario.choices);
  auto owned = std::make_unique<World>(scenario, arm, chooser, true, servers);
  World& world = *owned;
  // A target's thread is C code that nothing may unwind: its World outlives the run, and its
  // process ends once the trace is out (posix/host.cpp).
  if (scenario.target) (void)owned.release();
  std::optional<LassoWatch> watch;
  if (expects(scenario, "liveness")) watch.emplace();
  if (!watch) world.digests_unused();
  RunGuard guard(world);
  do {
    if (watch) watch->look(world);
    if (std::optional<Cut> cut = guard.check(world)) {
      return world.stop_short(cut->message, cut->stalled(), watch.has_value());
    }
  } while (world.step());
  if (watch) watch->at_end(world);
  RunResult result = world.finish();
  result.trace.liveness_watched = watch.has_value();
  return result;
}

}  // namespace loopsim::sim
