// JUnit XML for CI systems, from `loopsim check`: one <testsuite> per scenario file, one
// <testcase> per arm (classname "loopsim.SCENARIO", name the arm). An arm that was not judged
// held carries a <failure> naming each property with its measured figure and bound, and the
// command that reproduces it; a scenario that could not be run is one <testcase> with an <error>.
#pragma once

#include <string>
#include <vector>

#include "reports/check_report.hpp"

namespace loopsim::reports {

std::string junit_xml(const std::vector<ScenarioOutcome>& outcomes);

}  // namespace loopsim::reports
