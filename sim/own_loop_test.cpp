// sim::ServerFactories::own_loop: a loop written against loopsim::Kernel (the out-of-tree example's,
// examples/own-kernel-loop/) runs in a World in place of the built-in loop and is judged; its
// sabotage arms are caught.
#include <catch2/catch.hpp>

#include "checker/suite.hpp"
#include "examples/own-kernel-loop/tiny_loop.hpp"

namespace {

using namespace loopsim;

const std::string burst = std::string(LOOPSIM_SOURCE_DIR) + "/examples/own-kernel-loop/burst.toml";

// Suite options that run the example's loop in place of the built-in one.
checker::SuiteOptions tiny_loop() {
  checker::SuiteOptions options;
  options.servers.own_loop = [](Kernel& kernel, LoopObserver& observer, const LoopConfig& config) {
    return std::make_unique<tiny::TinyLoop>(kernel, observer, config);
  };
  return options;
}

const checker::ArmReport& arm(const checker::RunReport& report, const std::string& name) {
  for (const auto& a : report.arms)
    if (a.name == name) return a;
  FAIL("no arm " << name);
  throw;
}

}  // namespace

TEST_CASE("own loop: the example's loop holds on its burst, and each sabotage arm is caught") {
  auto result = checker::run_suite(burst, tiny_loop());
  CHECK(result.report.held());
  CHECK(arm(result.report, "base").expect_violated.empty());
  CHECK(arm(result.report, "base").stats.accepted == 102);
  // The arms are judged by what they expect violated: caught, not merely held.
  const auto& owed = arm(result.report, "nothing-owed");
  CHECK(owed.stats.accepted < 102);
  CHECK(owed.expect_violated.size() == 2);
  CHECK(owed.judgement.held);  // exactly what it expects violated was violated
  CHECK(arm(result.report, "unbounded").judgement.held);
}

TEST_CASE("own loop: the same scenario on the built-in loop is another run") {
  auto builtin = checker::run_suite(burst, {});
  auto own = checker::run_suite(burst, tiny_loop());
  // The built-in loop answers through its own HTTP handler and counts passes its own way.
  CHECK(builtin.report.arms.front().stats.passes != own.report.arms.front().stats.passes);
}

TEST_CASE("own loop: a scenario it cannot run says where") {
  checker::SuiteOptions options = tiny_loop();
  options.overrides.push_back(sim::parse_override("loop.workers=2"));
  try {
    checker::run_suite(burst, options);
    FAIL("ran with two workers");
  } catch (const sim::ScenarioError& e) {
    CHECK(std::string(e.what()).find("an own loop") != std::string::npos);
  }
}
