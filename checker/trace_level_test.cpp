// --trace-level verdicts keeps only what the expected properties read: every verdict must be
// the one the whole trace gives, on every scenario and arm, or a property would hold (or fail)
// for want of an event.
#include <catch2/catch.hpp>
#include <filesystem>

#include "checker/suite.hpp"

using namespace loopsim;

TEST_CASE("trace level verdicts: every scenario's every verdict is the whole trace's, with fewer events", "[long]") {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(LOOPSIM_SOURCE_DIR) + "/scenarios")) {
    if (entry.path().extension() == ".toml") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() > 20);
  std::size_t smaller = 0;
  for (const std::string& file : files) {
    INFO(file);
    checker::SuiteOptions full, verdicts;
    verdicts.verdicts_only = true;
    const auto a = checker::run_suite(file, full), b = checker::run_suite(file, verdicts);
    REQUIRE(a.report.arms.size() == b.report.arms.size());
    for (std::size_t i = 0; i < a.report.arms.size(); ++i) {
      const auto &x = a.report.arms[i], &y = b.report.arms[i];
      INFO(x.name);
      REQUIRE(x.verdicts.size() == y.verdicts.size());
      for (std::size_t v = 0; v < x.verdicts.size(); ++v) {
        INFO(x.verdicts[v].property);
        CHECK(x.verdicts[v].held == y.verdicts[v].held);
        CHECK(x.verdicts[v].measured == y.verdicts[v].measured);
        CHECK(x.verdicts[v].detail == y.verdicts[v].detail);
      }
      CHECK(x.judgement.held == y.judgement.held);
      CHECK(x.stats.accepted == y.stats.accepted);
      CHECK(x.stats.answered == y.stats.answered);
      CHECK(a.traces[i].events.size() >= b.traces[i].events.size());
      smaller += b.traces[i].events.size() < a.traces[i].events.size();
    }
  }
  CHECK(smaller >= 20);  // it keeps less where the properties allow (20 arms today)
}

TEST_CASE("events_needed: the client-side properties read the clients' events, the loop rules' all but the bytes") {
  sim::Expectation answered;
  answered.property = "answered";
  auto needed = checker::events_needed(std::vector{answered});
  CHECK((needed & sim::event_bit<sim::ev::Answer>()) != 0);
  CHECK((needed & sim::event_bit<sim::ev::RunEnd>()) != 0);
  CHECK((needed & sim::event_bit<sim::ev::PassBegin>()) == 0);
  CHECK((needed & sim::event_bit<sim::ev::Choice>()) == 0);
  sim::Expectation spin;
  spin.property = "no_spin";
  CHECK(checker::events_needed(spin) == (sim::all_events & ~sim::byte_events));
  CHECK((sim::byte_events & sim::event_bit<sim::ev::Read>()) != 0);
  sim::Expectation costed;
  costed.property = "latency";
  costed.max = sim::Bound{sim::Bound::Unit::batches, 1.5, "1.5 batches"};
  CHECK((checker::events_needed(costed) & sim::event_bit<sim::ev::RequestEnd>()) != 0);
}
