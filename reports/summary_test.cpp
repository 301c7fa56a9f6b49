// The verdict table: its columns stay apart whatever the names in them.
#include "reports/summary.hpp"

#include <catch2/catch.hpp>

#include <sstream>

#include "checker/suite.hpp"

using namespace loopsim;

TEST_CASE("the table's columns are as wide as the longest group name: a measurement never runs into it") {
  checker::RunReport report;
  checker::ArmReport arm;
  arm.name = "base";
  checker::Verdict v;
  v.property = "latency";
  v.of = "keepalive-clients";
  v.unit = checker::Unit::ns;
  v.measured = 1'000'000;
  v.bound = 5'000'000;
  v.held = true;
  v.decided = true;
  arm.verdicts.push_back(v);
  report.arms.push_back(arm);
  std::ostringstream out;
  reports::print_table(report, out);
  INFO(out.str());
  CHECK(out.str().find("keepalive-clients  1.0 ms") != std::string::npos);
}
