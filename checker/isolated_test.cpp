#include "checker/isolated.hpp"

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdlib>

#include "checker/suite.hpp"
#include "reports/check_report.hpp"

using namespace loopsim;

TEST_CASE("isolated work hands back its bytes, or how its process died") {
  auto fine = checker::run_isolated([] { return std::string(200000, 'x'); });  // more than a pipe holds
  REQUIRE(std::holds_alternative<std::string>(fine));
  CHECK(std::get<std::string>(fine).size() == 200000);

  auto aborted = checker::run_isolated([]() -> std::string { std::abort(); });
  REQUIRE(std::holds_alternative<checker::Crashed>(aborted));
  CHECK_THAT(std::get<checker::Crashed>(aborted).how, Catch::StartsWith("died of signal 6"));

  auto segfault = checker::run_isolated([]() -> std::string {
    std::raise(SIGSEGV);
    return "unreachable";
  });
  REQUIRE(std::holds_alternative<checker::Crashed>(segfault));
  CHECK_THAT(std::get<checker::Crashed>(segfault).how, Catch::StartsWith("died of signal 11"));

  auto thrown = checker::run_isolated([]() -> std::string { throw 42; });
  REQUIRE(std::holds_alternative<checker::Crashed>(thrown));
  CHECK(std::get<checker::Crashed>(thrown).how == "exited 2 without a result");
}

TEST_CASE("an outcome survives the trip from a child process unchanged") {
  const std::string file = LOOPSIM_SOURCE_DIR "/scenarios/accept-burst.toml";
  reports::ScenarioOutcome outcome{file, checker::run_suite(file, {}).report, "", ""};
  // Sabotaged arms make violated verdicts with details and replays: every field is exercised.
  REQUIRE(outcome.report->arms.size() > 1);
  reports::ScenarioOutcome back = reports::decode_outcome(reports::encode_outcome(outcome));
  CHECK(reports::check_json({back}).dump() == reports::check_json({outcome}).dump());
  CHECK(reports::encode_outcome(back) == reports::encode_outcome(outcome));

  reports::ScenarioOutcome error{"x.toml", std::nullopt, "x.toml:3:1: bad", "fix it", false};
  CHECK(reports::encode_outcome(reports::decode_outcome(reports::encode_outcome(error))) ==
        reports::encode_outcome(error));
  CHECK_THROWS_AS(reports::decode_outcome("{\"file\": 3}"), std::invalid_argument);
}
