// The verdict of a run (one scenario, its base and its arms) as a table for people and as the
// stable JSON document for scripts (shape in README.md).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "checker/suite.hpp"

namespace loopsim::reports {

using checker::ArmReport;
using checker::RunReport;

void print_table(const RunReport& report, std::ostream& out);
nlohmann::ordered_json to_json(const RunReport& report);
// A measured figure or bound for people: "153.0 ms", "31".
std::string show(std::int64_t value, checker::Unit unit);

}  // namespace loopsim::reports
