// The two ways of running a branch agree: resumed from forked snapshots, or replayed from time 0
// in this process, a search reaches the same states, runs the same executions and finds the
// same counterexample. A toy system (coins flipped a few at a step) shows the mechanics; the
// simulated world shows that snapshots are taken where replays are long, and save them.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <stdexcept>

#include "explore/explorer.hpp"
#include "model/digest.hpp"

using namespace loopsim;
using namespace loopsim::explore;
using loopsim::checker::Costs;

namespace {

// Each step flips `per_step` coins, each a choice; the state is the step count and the heads so
// far. `bad_step` fails an execution whose coins in that step were all heads; `crash_step`
// aborts the process there instead.
struct Coins final : System {
  int steps = 4, per_step = 2, bad_step = 2, crash_step = -1;

  class Run final : public Execution {
   public:
    Run(const Coins& coins, model::Chooser& chooser) : coins_(coins), chooser_(chooser) {}
    bool step() override {
      if (at_ == coins_.steps) return false;
      int heads = 0;
      for (int i = 0; i < coins_.per_step; ++i) heads += int(chooser_.choose(model::ChoiceKind::order, 2));
      if (at_ == coins_.crash_step && heads == coins_.per_step) std::abort();
      if (at_ == coins_.bad_step && heads == coins_.per_step) bad_ = true;
      total_ += heads;
      ++at_;
      return true;
    }
    std::uint64_t digest() const override {
      model::Digest d;
      d.add(std::int64_t(at_));
      d.add(std::int64_t(total_));
      d.add(std::int64_t(bad_));
      return d.value();
    }
    bool backlog() const override { return false; }
    std::uint64_t accepted() const override { return 0; }
    Nanos now() const override { return Nanos{at_}; }
    bool quiescent() const override { return at_ == coins_.steps; }
    Outcome finish() override {
      Outcome o;
      checker::Verdict v;
      v.property = "all_heads";
      v.held = !bad_;
      v.detail = "the coins of step " + std::to_string(coins_.bad_step) + " were all heads";
      o.verdicts.push_back(v);
      if (bad_) o.violated.push_back("all_heads");
      return o;
    }

   private:
    const Coins& coins_;
    model::Chooser& chooser_;
    int at_ = 0, total_ = 0;
    bool bad_ = false;
  };

  std::unique_ptr<Execution> start(model::Chooser& chooser) const override {
    return std::make_unique<Run>(*this, chooser);
  }
  bool judged_by_state() const override { return true; }
};

ExploreOptions with_snapshots(std::uint32_t snapshots, std::uint64_t every = 1) {
  ExploreOptions o;
  o.depth = 1000;
  o.max_executions = 100000;
  o.snapshots = snapshots;
  o.snapshot_steps = every;
  return o;
}

void check_same(const ExploreResult& a, const ExploreResult& b) {
  CHECK(a.verdict == b.verdict);
  CHECK(a.executions == b.executions);
  CHECK(a.states == b.states);
  CHECK(a.transitions == b.transitions);
  CHECK(a.cut == b.cut);
  CHECK(a.steps == b.steps);
  REQUIRE(a.counterexample.has_value() == b.counterexample.has_value());
  if (a.counterexample) {
    CHECK(a.counterexample->violated == b.counterexample->violated);
    REQUIRE(a.counterexample->choices.size() == b.counterexample->choices.size());
    for (std::size_t i = 0; i < a.counterexample->choices.size(); ++i) {
      CHECK(a.counterexample->choices[i].pick == b.counterexample->choices[i].pick);
    }
  }
}

}  // namespace

TEST_CASE("a branch explores the decisions after its own in the same step") {
  // Two coins a step: all heads in step 2 needs both of that step's alternatives at once. A
  // branch taking the first coin's alternative must still branch on the second.
  Coins coins;
  for (std::uint32_t snapshots : {0u, 64u}) {
    ExploreResult r = search(coins, with_snapshots(snapshots));
    REQUIRE(r.verdict == ExploreResult::Verdict::violated);
    CHECK(r.counterexample->violated == std::vector<std::string>{"all_heads"});
  }
}

TEST_CASE("snapshots and replays search alike, and snapshots replay nothing") {
  Coins coins;
  coins.steps = 7;
  coins.per_step = 2;
  coins.bad_step = 5;
  ExploreResult replayed = search(coins, with_snapshots(0));
  ExploreResult forked = search(coins, with_snapshots(64));
  check_same(replayed, forked);
  CHECK(replayed.snapshots == 0);
  CHECK(replayed.replayed_steps > 0);
  CHECK(forked.snapshots > 0);
  CHECK(forked.replayed_steps < replayed.replayed_steps);

  coins.bad_step = -1;  // nothing to find: the whole space, both ways
  replayed = search(coins, with_snapshots(0));
  forked = search(coins, with_snapshots(64));
  check_same(replayed, forked);
  CHECK(replayed.verdict == ExploreResult::Verdict::none_found);

  // With room for one snapshot at a time, the rest replay: still the same search.
  ExploreResult cramped = search(coins, with_snapshots(1));
  check_same(replayed, cramped);
}

TEST_CASE("an execution that dies in a forked process is reported, and the search ends") {
  Coins coins;
  coins.steps = 5;
  coins.bad_step = -1;
  coins.crash_step = 3;
  CHECK_THROWS_WITH(search(coins, with_snapshots(64)), Catch::Contains("died of signal"));
}

TEST_CASE("on the simulated world, snapshots save the replay of a long run's early part") {
  // A ticker's posts fill the first 300 ms; the choices come after, in an accept burst.
  std::string text = R"(
name = "late"
horizon = "2s"
[loop]
accept_batch = 2
[[posters]]
name = "ticker"
at = "0ms"
every = "1ms"
count = 300
cost = "10us"
[[clients]]
name = "blocker"
connect_at = "310ms"
requests = [{ at = "310ms", path = "/slow?ms=100" }]
[[clients]]
name = "burst"
count = 5
connect_at = "320ms"
requests = [{ at = "320ms", path = "/slow?ms=10" }]
[[expect]]
property = "answered"
[[expect]]
property = "no_stranded_backlog"
)";
  sim::Scenario scenario = sim::parse_scenario(text, "late.toml");
  ExploreOptions options = with_snapshots(0, 256);
  ExploreResult replayed = search(scenario, Costs{}, options);
  options.snapshots = 64;
  ExploreResult forked = search(scenario, Costs{}, options);
  check_same(replayed, forked);
  CHECK(replayed.verdict == ExploreResult::Verdict::none_found);
  CHECK(forked.snapshots > 0);
  // Most of every replay was the ticker's part, which the snapshots skip.
  CHECK(forked.replayed_steps * 10 < replayed.replayed_steps);

  // The defect is found the same way, and its counterexample is the same.
  sim::Scenario broken = sim::parse_scenario(text, "late.toml", {{"loop.owe_unfinished_batch", "false"}});
  options.snapshots = 0;
  replayed = search(broken, Costs{}, options);
  options.snapshots = 64;
  forked = search(broken, Costs{}, options);
  check_same(replayed, forked);
  CHECK(forked.verdict == ExploreResult::Verdict::violated);
}

TEST_CASE("a limit met before the first execution is a bound, with an empty graph judged safely") {
  Coins coins;
  ExploreOptions options = with_snapshots(0);
  std::int64_t clock = 0;
  options.wall_ns = [&clock] { return clock += 1000; };
  options.time_limit_ns = 1;
  ExploreResult r = search(coins, options);
  CHECK(r.verdict == ExploreResult::Verdict::bound_reached);
  CHECK(r.bound == "time limit");
  CHECK(r.executions == 0);
  CHECK(r.states == 0);
}
