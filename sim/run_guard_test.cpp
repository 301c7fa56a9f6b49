// One guard holds every run to its limits, each with its own sentence: a livelock (steps at one
// instant), a trace too long to write down, and a budget of steps.
#include <catch2/catch.hpp>

#include <optional>

#include "scenario/scenario.hpp"
#include "sim/run_guard.hpp"
#include "sim/world.hpp"

using namespace loopsim;

namespace {

const char* const busy = R"(
[[clients]]
name = "many"
count = 4
requests = [{ at = "1ms", path = "/fast" }]
)";

// Steps `world` under `limits` until the guard cuts it or the run ends.
std::optional<sim::Cut> cut_of(sim::RunLimits limits) {
  sim::Scenario scenario = sim::parse_scenario(busy, "guard.toml");
  sim::World world(scenario, "base", nullptr);
  sim::RunGuard guard(world, limits);
  while (world.step()) {
    if (std::optional<sim::Cut> cut = guard.check(world)) return cut;
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("run guard: a run within its limits is never cut") { CHECK_FALSE(cut_of(sim::RunLimits{}).has_value()); }

TEST_CASE("run guard: steps at one instant past the limit are a livelock") {
  std::optional<sim::Cut> cut = cut_of(sim::RunLimits{.at_instant = 1});
  REQUIRE(cut.has_value());
  CHECK(cut->stalled());
  CHECK(cut->message.find("livelock: virtual time stood still for 1 steps at ") == 0);
}

TEST_CASE("run guard: a trace past its limit stops the run, which is no livelock") {
  std::optional<sim::Cut> cut = cut_of(sim::RunLimits{.trace_events = 3});
  REQUIRE(cut.has_value());
  CHECK_FALSE(cut->stalled());
  CHECK(cut->message.find("its trace passed 3 events at ") == 0);
}

TEST_CASE("run guard: a budget of steps stops a run that is only long") {
  std::optional<sim::Cut> cut = cut_of(sim::RunLimits{.steps = 5});
  REQUIRE(cut.has_value());
  CHECK(cut->why == sim::Cut::Why::steps);
  CHECK(cut->message.find("the run took 5 steps (its budget) and stopped at ") == 0);
}
