// The loop's rules R4-R11 end to end in simulation: each scenario's figures, and each rule's
// sabotage caught by the property that guards it.
#include <catch2/catch.hpp>

#include "checker/suite.hpp"

using namespace loopsim;
using namespace std::chrono_literals;

namespace {

std::string scenario(const std::string& name) {
  return std::string(LOOPSIM_SOURCE_DIR) + "/scenarios/" + name + ".toml";
}

checker::ArmReport run_arm(const std::string& name, const std::string& arm,
                           std::vector<sim::Override> set = {}) {
  checker::SuiteOptions options;
  options.only_arm = arm;
  options.overrides = std::move(set);
  return checker::run_suite(scenario(name), options).report.arms.at(0);
}

const checker::Verdict& verdict(const checker::ArmReport& arm, const std::string& property) {
  for (const auto& v : arm.verdicts) {
    if (v.property == property) return v;
  }
  FAIL("no verdict for " << property);
  throw;
}

std::string inline_scenario(const std::string& name, const std::string& text) {
  std::string path = "/tmp/loopsim-test-" + name + ".toml";
  std::FILE* f = std::fopen(path.c_str(), "w");
  std::fputs(text.c_str(), f);
  std::fclose(f);
  return path;
}

}  // namespace

TEST_CASE("every scenario in scenarios/ holds, and every arm is caught by what it names") {
  for (const char* name : {"accept-burst", "accept-burst-5ms", "drain-chunk", "emfile",
                           "handle-ceiling", "shutdown"}) {
    INFO(name);
    auto result = checker::run_suite(scenario(name), checker::SuiteOptions{});
    for (const auto& arm : result.report.arms) {
      INFO(arm.name);
      CHECK(arm.judgement.held);
    }
  }
}

TEST_CASE("R7 drain-chunk: post latencies of 0.44, 2.36 and 40.76 ms for chunks 8, 32 and 0") {
  CHECK(verdict(run_arm("drain-chunk", "base"), "post_latency").measured == Duration(440us).count());
  CHECK(verdict(run_arm("drain-chunk", "chunk-32"), "post_latency").measured == Duration(2360us).count());
  CHECK(verdict(run_arm("drain-chunk", "chunk-0"), "post_latency").measured == Duration(40760us).count());
  CHECK(verdict(run_arm("drain-chunk", "kqueue"), "post_latency").measured == Duration(440us).count());
}

TEST_CASE("R9 handle-ceiling: 4,096 fixed handles hold exactly 2,048, and rlimit sizing holds 10,000") {
  auto fixed = run_arm("handle-ceiling", "fixed-refuse");
  CHECK(verdict(fixed, "capacity").measured == 2048);
  CHECK(fixed.stats.refused == 10000 - 2048);
  auto pressured = run_arm("handle-ceiling", "fixed-backpressure");
  CHECK(verdict(pressured, "capacity").measured == 2048);
  CHECK(pressured.stats.refused == 0);  // they wait in the backlog instead
  CHECK(verdict(run_arm("handle-ceiling", "base"), "capacity").measured == 10000);
}

TEST_CASE("R4 emfile: without the retry the burst strands, and with it every request is answered") {
  CHECK(run_arm("emfile", "base").stats.answered == 38);
  auto stranded = run_arm("emfile", "no-retry");
  CHECK(stranded.stats.answered == 18);
  CHECK(verdict(stranded, "no_stranded_backlog").measured == 20);
  auto spin = run_arm("emfile", "owed-after-emfile");
  CHECK_FALSE(verdict(spin, "no_spin").held);
}

TEST_CASE("R6 inverted: owed passes run inside the callback, and one pass a call waits for the tick") {
  auto inverted = run_arm("accept-burst", "base", {{"loop.inverted", "true"}});
  CHECK(inverted.judgement.held);
  CHECK(verdict(inverted, "latency").measured == Duration(150ms).count());
  auto one_pass = run_arm("accept-burst", "base",
                          {{"loop.inverted", "true"}, {"loop.inverted_owed_passes", "false"}});
  CHECK_FALSE(verdict(one_pass, "max_gap").held);
}

TEST_CASE("R8 a pipelining client is served a yield batch per turn, and others are not held up") {
  std::string text = R"(
horizon = "1s"
[[clients]]
name = "pipeliner"
keep_alive = true
connect_at = "10ms"  # its 40 requests leave with the handshake, in one write
requests = [)";
  for (int i = 0; i < 40; ++i) text += std::string(i ? ", " : "") + "{ at = \"10ms\", path = \"/slow?us=100\" }";
  text += R"(]
[[clients]]
name = "other"
keep_alive = true
requests = [{ at = "10001us", path = "/fast" }]  # just after the pipeline, whatever the seed's order
[[expect]]
property = "answered"
[[expect]]
property = "latency"
of = "other"
max = "2ms"
[[arms]]
name = "no-yield"
set = { "loop.yield_batch" = 0 }
expect_violated = ["latency"]
)";
  checker::SuiteOptions options;
  auto result = checker::run_suite(inline_scenario("yield", text), options);
  auto& base = result.report.arms.at(0);
  CHECK(base.judgement.held);
  CHECK(verdict(base, "latency").measured <= Duration(1600us).count());  // one turn of 16 at most
  CHECK(result.report.arms.at(1).judgement.held);  // the sabotage is caught
}

TEST_CASE("R11 in pool mode a slow handler does not hold up the loop") {
  auto pool = run_arm("accept-burst", "base", {{"loop.mode", "pool"}});
  // /fast is answered long before the blocker, whose 600 ms run on a pool thread.
  CHECK(verdict(pool, "latency").measured < 0);
  CHECK(pool.stats.answered == 122);
}

TEST_CASE("R10 two workers share the accepts, and shutdown admits what was handed over") {
  auto base = run_arm("shutdown", "base");
  CHECK(base.judgement.held);
  CHECK(verdict(base, "shutdown_clean").held);
  CHECK_FALSE(verdict(run_arm("shutdown", "owed-kept"), "shutdown_clean").held);
}
