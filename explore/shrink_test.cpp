// Shrinking and minimizing: they make a counterexample smaller while it still fails, and stop
// when --time-limit's budget runs out, keeping what still fails.
#include <catch2/catch.hpp>

#include "explore/explorer.hpp"
#include "explore/shrink.hpp"
#include "explore/system.hpp"

using namespace loopsim;
using namespace loopsim::explore;
using loopsim::checker::Costs;

namespace {

// Six arrivals at one instant, accept_batch 2, nothing owed: the natural order strands one.
const char* const stranding = R"(
name = "shrinkable"
horizon = "200ms"
[loop]
accept_batch = 2
owe_unfinished_batch = false
idle_timeout = "10s"
[[clients]]
name = "burst"
count = 6
connect_at = "5ms"
requests = [{ at = "0ms", path = "/fast" }]
[[clients]]
name = "bystanders"
count = 4
connect_at = "100ms"
requests = [{ at = "0ms", path = "/fast" }]
[[expect]]
property = "no_stranded_backlog"
)";

}  // namespace

TEST_CASE("shrink drops and halves groups while the search still fails, and stops when the budget is out") {
  sim::Scenario scenario = sim::parse_scenario(stranding, "shrinkable.toml", {});
  ExploreOptions options;
  auto counts = shrink(scenario, Costs{}, options);
  // Either group alone strands (three at one instant, a batch of 2): one goes, the other is trimmed.
  int burst = counts.count("burst") ? counts.at("burst") : 6;
  int bystanders = counts.count("bystanders") ? counts.at("bystanders") : 4;
  CHECK(burst + bystanders == 3);
  CHECK(search(with_counts(scenario, counts), Costs{}, options).verdict == ExploreResult::Verdict::violated);

  std::int64_t clock = 100;
  Budget spent;
  spent.wall_ns = [&clock] { return clock; };
  spent.deadline_ns = 50;  // already past
  CHECK(shrink(scenario, Costs{}, options, &spent).empty());
  CHECK(spent.cut);

  Budget ample;
  ample.wall_ns = [&clock] { return clock; };
  ample.deadline_ns = 1000;
  CHECK(shrink(scenario, Costs{}, options, &ample) == counts);
  CHECK_FALSE(ample.cut);
}

TEST_CASE("minimize keeps a budget-cut counterexample failing, as it was") {
  sim::Scenario scenario = sim::parse_scenario(stranding, "shrinkable.toml", {});
  ExploreResult found = search(scenario, Costs{}, ExploreOptions{});
  REQUIRE(found.counterexample);
  auto choices = found.counterexample->choices;
  std::int64_t clock = 100;
  Budget spent;
  spent.wall_ns = [&clock] { return clock; };
  spent.deadline_ns = 50;
  auto kept = minimize(scenario, Costs{}, choices, &spent);
  CHECK(kept.size() == choices.size());
  CHECK_FALSE(judge_choices(scenario, Costs{}, kept).violated.empty());
}
