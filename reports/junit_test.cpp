// JUnit XML from check's outcomes: well-formed, one testcase per arm, failures that name the
// property, its figures and the command that reproduces it; unreadable scenarios as errors.
#include "reports/junit.hpp"

#include <catch2/catch.hpp>

#include "reports/xml.hpp"
#include "reports/xml_check_for_tests.hpp"

namespace {

using namespace loopsim;

reports::ScenarioOutcome accept_burst(std::vector<sim::Override> set = {}) {
  checker::SuiteOptions options;
  options.overrides = std::move(set);
  std::string file = LOOPSIM_SOURCE_DIR "/scenarios/accept-burst.toml";
  return {file, checker::run_suite(file, options).report, "", ""};
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("JUnit XML for accept-burst is well-formed with one testcase per arm") {
  std::string xml = reports::junit_xml({accept_burst()});
  auto check = testing::check_xml(xml);
  INFO(check.error);
  REQUIRE(check.ok());
  CHECK(check.count("testsuites") == 1);
  CHECK(check.count("testsuite") == 1);
  CHECK(check.count("testcase") == 5);
  CHECK(check.count("failure") == 0);
  for (const auto& e : check.elements) {
    if (e.name == "testcase") CHECK(e.attributes.at("classname") == "loopsim.accept-burst");
  }
  CHECK(xml.find("name=\"unbounded-drain\"") != std::string::npos);
}

TEST_CASE("a failed arm's failure names the property, measured, bound and the replay command") {
  std::string xml = reports::junit_xml({accept_burst({{"loop.accept_batch", "0"}})});
  auto check = testing::check_xml(xml);
  INFO(check.error);
  REQUIRE(check.ok());
  CHECK(check.count("testcase") == 5);
  CHECK(check.count("failure") == 3);
  std::string message;
  for (const auto& e : check.elements) {
    if (e.name == "failure" && message.empty()) message = e.attributes.at("message");
  }
  CHECK(message.find("latency of fast violated: measured 1200.0 ms, bound 240.0 ms") != std::string::npos);
  CHECK(message.find("reproduce: loopsim run") != std::string::npos);
  CHECK(message.find("--arm base") != std::string::npos);
  CHECK(count_of(xml, "failures=\"3\"") == 2);  // the suite and the whole
}

TEST_CASE("a scenario that could not be read is a testsuite with one error") {
  reports::ScenarioOutcome bad{"dir/bad <1>.toml", std::nullopt, "dir/bad <1>.toml:3:1: unknown key \"x\"", "fix it"};
  std::string xml = reports::junit_xml({accept_burst(), bad});
  auto check = testing::check_xml(xml);
  INFO(check.error);
  REQUIRE(check.ok());
  CHECK(check.count("testcase") == 6);
  CHECK(check.count("error") == 1);
  CHECK(xml.find("errors=\"1\"") != std::string::npos);
  CHECK(xml.find("classname=\"loopsim.bad &lt;1&gt;\"") != std::string::npos);
}

TEST_CASE("XML escaping leaves nothing that breaks a document") {
  std::string nasty = "a<b>&\"c'\n\x01";
  CHECK(reports::xml_escape(nasty) == "a&lt;b&gt;&amp;&quot;c&apos;&#10;?");
  CHECK(testing::check_xml("<x a=\"" + reports::xml_escape(nasty) + "\">" + reports::xml_escape(nasty) + "</x>").ok());
}

TEST_CASE("the XML checker used by these tests rejects what is not well-formed") {
  CHECK_FALSE(testing::check_xml("<a><b></a></b>").ok());
  CHECK_FALSE(testing::check_xml("<a>").ok());
  CHECK_FALSE(testing::check_xml("<a x=1/>").ok());
  CHECK_FALSE(testing::check_xml("<a/><b/>").ok());
  CHECK_FALSE(testing::check_xml("<a>x & y</a>").ok());
  CHECK(testing::check_xml("<?xml version=\"1.0\"?><!-- c --><a><b x='1'/>t &amp; u</a>").ok());
}

TEST_CASE("an arm stopped at a limit is an error of type limit, counted in the totals too") {
  const std::string file = std::string(LOOPSIM_SOURCE_DIR) + "/tests/data/bad-input/idle-1ns.toml";
  reports::ScenarioOutcome stopped{file, checker::run_suite(file, {}).report, "", ""};
  REQUIRE(stopped.ok());
  REQUIRE(stopped.report->arms.front().judgement.limited());
  std::string xml = reports::junit_xml({accept_burst(), stopped});
  auto check = testing::check_xml(xml);
  INFO(check.error);
  REQUIRE(check.ok());
  CHECK(xml.find("type=\"limit\"") != std::string::npos);
  CHECK(xml.find("its trace passed 10000000 events") != std::string::npos);
  CHECK(xml.find("<testsuites name=\"loopsim check\" tests=\"6\" failures=\"0\" errors=\"1\"") != std::string::npos);
}

TEST_CASE("an arm that could not run is an error testcase, its suite's other arms as they were") {
  reports::ScenarioOutcome outcome = accept_burst();
  checker::ArmReport& arm = outcome.report->arms.back();
  arm.verdicts.clear();
  arm.judgement.held = false;
  arm.error = "accept-burst.toml:5:8: the target exited with status 71 before it listened";
  arm.error_hint = "see its stderr";
  std::string xml = reports::junit_xml({outcome});
  auto check = testing::check_xml(xml);
  INFO(check.error);
  REQUIRE(check.ok());
  CHECK(check.count("testcase") == outcome.report->arms.size());
  CHECK(check.count("error") == 1);
  CHECK(check.count("failure") == 0);
  CHECK(xml.find("type=\"could not run\"") != std::string::npos);
  CHECK(xml.find("failures=\"0\" errors=\"1\"") != std::string::npos);
  const reports::CheckTotals totals = reports::totals({outcome});
  CHECK((totals.errors == 1 && totals.arm_errors == 1 && totals.held == int(outcome.report->arms.size()) - 1));
  CHECK(totals.verdict() == reports::CheckVerdict::error);
}
