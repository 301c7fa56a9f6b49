#include "reports/junit.hpp"

#include <cstdio>

#include "reports/xml.hpp"

namespace loopsim::reports {

namespace {

std::string seconds(std::int64_t ns) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6f", double(ns) / 1e9);
  return buffer;
}

std::string attribute(const char* name, const std::string& value) {
  return std::string(" ") + name + "=\"" + xml_escape(value) + "\"";
}

std::string join(const std::vector<std::string>& lines, const char* separator) {
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) out += (i ? separator : "") + lines[i];
  return out;
}

std::string arm_case(const std::string& scenario, const checker::ArmReport& arm) {
  std::string xml = "    <testcase" + attribute("classname", "loopsim." + scenario) + attribute("name", arm.name) +
                    attribute("time", seconds(arm.wall_ns));
  if (!arm.error.empty()) {
    return xml + ">\n      <error" + attribute("message", arm.error) + attribute("type", "could not run") + ">" +
           xml_escape(arm.error + (arm.error_hint.empty() ? "" : "\nhint: " + arm.error_hint)) +
           "</error>\n    </testcase>\n";
  }
  if (arm.judgement.limited()) {
    return xml + ">\n      <error" + attribute("message", arm.cut) + attribute("type", "limit") + ">" +
           xml_escape(arm.cut) + "</error>\n    </testcase>\n";
  }
  if (arm.judgement.held) return xml + "/>\n";
  std::vector<std::string> problems = arm_problems(arm);
  std::string message = join(problems, "; ") + "; reproduce: " + arm.replay;
  return xml + ">\n      <failure" + attribute("message", message) + attribute("type", "violated") + ">" +
         xml_escape(join(problems, "\n") + "\nreproduce: " + arm.replay) + "</failure>\n    </testcase>\n";
}

std::string scenario_suite(const ScenarioOutcome& o) {
  std::string name = scenario_name(o);
  std::string head = "  <testsuite" + attribute("name", name) + attribute("file", o.file);
  if (!o.ok()) {
    return head + attribute("tests", "1") + attribute("failures", "0") + attribute("errors", "1") +
           attribute("time", "0") + ">\n    <testcase" + attribute("classname", "loopsim." + name) +
           attribute("name", "load") + attribute("time", "0") + ">\n      <error" +
           attribute("message", o.error) + attribute("type", "bad input") + ">" +
           xml_escape(o.error + (o.hint.empty() ? "" : "\nhint: " + o.hint)) +
           "</error>\n    </testcase>\n  </testsuite>\n";
  }
  int failures = 0, errors = 0;
  std::int64_t wall = 0;
  std::string cases;
  for (const checker::ArmReport& arm : o.report->arms) {
    errors += !arm.error.empty() || arm.judgement.limited();
    failures += !arm.judgement.held && arm.error.empty();
    wall += arm.wall_ns;
    cases += arm_case(name, arm);
  }
  return head + attribute("tests", std::to_string(o.report->arms.size())) +
         attribute("failures", std::to_string(failures)) + attribute("errors", std::to_string(errors)) +
         attribute("time", seconds(wall)) + ">\n" + cases + "  </testsuite>\n";
}

}  // namespace

std::string junit_xml(const std::vector<ScenarioOutcome>& outcomes) {
  CheckTotals t = totals(outcomes);
  std::string suites;
  for (const ScenarioOutcome& o : outcomes) suites += scenario_suite(o);
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites" + attribute("name", "loopsim check") +
         attribute("tests", std::to_string(t.arms + t.unreported)) +
         attribute("failures", std::to_string(t.violated)) +
         attribute("errors", std::to_string(t.unreported + t.arm_errors + t.limits)) + ">\n" + suites + "</testsuites>\n";
}

}  // namespace loopsim::reports
