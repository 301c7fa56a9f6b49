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
  int burst = counts.clients.count("burst") ? counts.clients.at("burst") : 6;
  int bystanders = counts.clients.count("bystanders") ? counts.clients.at("bystanders") : 4;
  CHECK(burst + bystanders == 3);
  CHECK(search(sim::with_shrinks(scenario, counts), Costs{}, options).verdict == ExploreResult::Verdict::violated);

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

TEST_CASE("shrink leaves out each scripted request the failure does not need: five become the two that strand") {
  // R13 sabotaged: a request pipelined behind a 1 MB answer is stranded. Of five requests only
  // the large answer and one request after it are needed.
  sim::Scenario scenario = sim::parse_scenario(R"(
name = "script"
horizon = "5s"
[kernel]
send_buffer_max = 4194304
[loop]
resume_after_flush = false
[[clients]]
name = "pipeliner"
keep_alive = true
requests = [{ at = "0ms", path = "/fast" }, { at = "0ms", path = "/bytes?n=1000000" }, { at = "0ms", path = "/hello" },
            { at = "0ms", path = "/fast" }, { at = "0ms", path = "/fast" }]
[[expect]]
property = "answered"
)", "script.toml", {});
  ExploreOptions options;
  sim::Shrinks shrinks = shrink(scenario, Costs{}, options);
  REQUIRE(shrinks.script.count("pipeliner") == 1);
  CHECK(shrinks.script.at("pipeliner") == std::vector<std::size_t>{1, 2});
  CHECK(describe(scenario, shrinks) == "pipeliner: 5 -> 2 requests");
  sim::Scenario small = sim::with_shrinks(scenario, shrinks);
  CHECK(small.clients.front().requests.size() == 2);
  CHECK(search(small, Costs{}, options).verdict == ExploreResult::Verdict::violated);
  // The file written keeps those two requests, and runs as the search judged it.
  const std::string pinned = sim::pinned_scenario(R"(
name = "script"
[[clients]]
name = "pipeliner"
requests = [{ at = "0ms", path = "/a" }, { at = "1ms", path = "/b" }, { at = "2ms", path = "/c" }]
)", "script.toml", sim::Arm{"base", {}, {}}, {}, {}, [] {
    sim::Shrinks kept;
    kept.script["pipeliner"] = {0, 2};
    return kept;
  }());
  sim::Scenario reread = sim::parse_scenario(pinned, "pinned.toml", {});
  REQUIRE(reread.clients.front().requests.size() == 2);
  CHECK(reread.clients.front().requests[1].path == "/c");
}

TEST_CASE("shrink narrows each window to one instant, drops a body and leaves out each fault the failure does not need") {
  const char* const windowed = R"(
name = "windows"
horizon = "200ms"
[loop]
accept_batch = 2
owe_unfinished_batch = false
idle_timeout = "10s"
[[clients]]
name = "burst"
count = 3
connect_at = "5ms..20ms"
body = 100
requests = [{ at = "0ms..3ms", path = "/fast" }]
[[faults]]
kind = "rlimit"
at = "150ms"
value = 1000
[[expect]]
property = "no_stranded_backlog"
)";
  sim::Scenario scenario = sim::parse_scenario(windowed, "windows.toml", {});
  std::optional<Counterexample> found;
  sim::Shrinks shrinks = shrink(scenario, Costs{}, ExploreOptions{}, nullptr, &found);
  CHECK(describe(scenario, shrinks) ==
        "burst: body 100 -> 0 bytes; burst: connect_at 5ms..20ms -> 5ms; burst: request 1 at 0s..3ms -> 0s; fault 1 (rlimit) left "
        "out");
  // The last trial that failed is handed back: the smallest case, with no search again.
  REQUIRE(found);
  sim::Scenario small = sim::with_shrinks(scenario, shrinks);
  CHECK(small.faults.empty());
  CHECK(small.clients.front().connect_at == model::at_instant(Instant{std::chrono::milliseconds(5)}));
  CHECK_FALSE(judge_choices(small, Costs{}, found->choices).violated.empty());
  // The file written says the same, and reads back as the search judged it.
  const std::string pinned = sim::pinned_scenario(windowed, "windows.toml", sim::Arm{"base", {}, {}}, {}, found->choices, shrinks);
  INFO(pinned);
  CHECK(pinned.find("connect_at = \"5ms\"") != std::string::npos);
  CHECK(pinned.find("{ at = \"0s\", path = \"/fast\" }") != std::string::npos);
  CHECK(pinned.find("[[faults]]") == std::string::npos);
  CHECK(pinned.find("body") == std::string::npos);
  sim::Scenario reread = sim::parse_scenario(pinned, "pinned.toml", {});
  CHECK(reread.clients.front().connect_at.fixed());
  CHECK(reread.faults.empty());
  CHECK_FALSE(judge_choices(reread, Costs{}, found->choices).violated.empty());
}

TEST_CASE("shrink keeps the fault a failure needs: the ENOBUFS that strands a loop with no retry") {
  const std::string file = std::string(LOOPSIM_SOURCE_DIR) + "/scenarios/enobufs-strand.toml";
  const std::string text = sim::read_scenario_file(file);
  sim::Scenario scenario = sim::scenario_for_arm(text, file, sim::Arm{"no-enobufs-retry", {{"loop.enobufs_retry", "false"}}, {}});
  REQUIRE(scenario.faults.size() == 1);
  sim::Shrinks shrinks = shrink(scenario, Costs{}, ExploreOptions{});
  CHECK(shrinks.faults_dropped.empty());
  CHECK(describe(scenario, shrinks).find("left out") == std::string::npos);
}
