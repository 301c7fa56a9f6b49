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

  reports::ScenarioOutcome error{"x.toml", std::nullopt, "x.toml:3:1: bad", "fix it"};
  CHECK(reports::encode_outcome(reports::decode_outcome(reports::encode_outcome(error))) ==
        reports::encode_outcome(error));
  CHECK_THROWS_AS(reports::decode_outcome("{\"file\": 3}"), std::invalid_argument);
}

TEST_CASE("isolated work, several at once: each result reaches its own index, a crash its own row") {
  std::vector<std::string> got(6);
  std::vector<int> calls(6, 0);
  checker::run_isolated_all(
      6, 3,
      [](std::size_t i) -> std::string {
        if (i == 4) std::abort();
        return std::string(i == 2 ? 300000 : 10, char('a' + i));  // one more than a pipe holds
      },
      [&](std::size_t i, std::variant<std::string, checker::Crashed> result) {
        ++calls[i];
        if (auto* bytes = std::get_if<std::string>(&result)) got[i] = *bytes;
        else got[i] = "crashed: " + std::get<checker::Crashed>(result).how;
      });
  for (int c : calls) CHECK(c == 1);
  CHECK(got[0] == std::string(10, 'a'));
  CHECK(got[2] == std::string(300000, 'c'));
  CHECK(got[4].rfind("crashed: died of signal 6", 0) == 0);
  CHECK(got[5] == std::string(10, 'f'));
}
