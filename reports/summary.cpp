#include "reports/summary.hpp"

#include "checker/story.hpp"

#include <algorithm>
#include <cstdio>
#include <ostream>

namespace loopsim::reports {

namespace {

// An arm's outcome as JSON spells it: the check table's words, in lower case.
const char* json_name(checker::ArmOutcome outcome) {
  switch (outcome) {
    case checker::ArmOutcome::limit: return "limit";
    case checker::ArmOutcome::held: return "held";
    case checker::ArmOutcome::violated: return "violated";
    case checker::ArmOutcome::caught: return "caught";
    case checker::ArmOutcome::not_caught: return "not_caught";
    case checker::ArmOutcome::error: return "error";
  }
  return "?";
}

const char* unit_name(checker::Unit unit) { return unit == checker::Unit::ns ? "ns" : "count"; }

std::string verdict_word(const ArmReport& arm, const checker::Verdict& v) {
  if (!v.decided) return "undecided (limit)";
  if (v.held) return arm.expects(v.property) ? "held (expected violated!)" : "held";
  return arm.expects(v.property) ? "violated (expected)" : "VIOLATED";
}

// A run's verdict: an arm that could not run makes it an error, whatever the others said.
const char* verdict_text(const RunReport& report) {
  if (report.errored()) return "error";
  return report.limited() ? "limit" : report.held() ? "held" : "violated";
}

std::string pad(std::string s, std::size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string arm_summary(const ArmReport& arm) {
  const auto& j = arm.judgement;
  std::string line = arm.name + ": ";
  if (!arm.error.empty()) return line + "ERROR: " + arm.error;
  if (j.limited()) {
    line += "LIMIT: stopped before its horizon";
    if (!j.undecided.empty()) line += ", undecided:";
    for (const auto& p : j.undecided) line += " " + p;
    return line;
  }
  if (arm.expect_violated.empty()) return line + (j.held ? "held" : "VIOLATED");
  if (j.held) {
    line += "caught by";
    for (const auto& p : arm.expect_violated) line += " " + p;
    return line;
  }
  line += "NOT CAUGHT as expected";
  for (const auto& p : j.missed_violations) line += "; " + p + " held";
  for (const auto& p : j.unexpected_violations) line += "; " + p + " also violated";
  return line;
}

}  // namespace

std::string show(std::int64_t value, checker::Unit unit) {
  // Below 0: nothing honest to measure (never answered, no shutdown asked): the detail says why.
  if (value < 0) return "none";
  if (unit == checker::Unit::count) return std::to_string(value);
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f ms", double(value) / 1e6);
  return buffer;
}

void print_table(const RunReport& report, std::ostream& out) {
  // The arm and `of` columns are as wide as their widest name: a group named "keepalive" ran
  // into its measurement when `of` was fixed at 8.
  std::size_t arm_width = 5, of_width = 8;
  for (const ArmReport& arm : report.arms) {
    arm_width = std::max(arm_width, arm.name.size() + 2);
    for (const checker::Verdict& v : arm.verdicts) of_width = std::max(of_width, v.of.size() + 2);
  }
  out << pad("arm", arm_width) << pad("property", 21) << pad("of", of_width) << pad("measured", 12)
      << pad("bound", 26) << "verdict\n";
  for (const ArmReport& arm : report.arms) {
    if (!arm.error.empty()) out << pad(arm.name, arm_width) << pad("-", 21) << pad("", of_width) << pad("-", 12) << pad("-", 26) << "ERROR (below)\n";
    for (const checker::Verdict& v : arm.verdicts) {
      std::string bound = v.property == "answered" ? "0" : show(v.bound, v.unit);
      // Bounds written in requests or batches also show what they came to.
      if (v.bound_text.find(' ') != std::string::npos) bound += " (" + v.bound_text + ")";
      out << pad(arm.name, arm_width) << pad(v.property, 21) << pad(v.of, of_width)
          << pad(show(v.measured, v.unit), 12) << pad(bound, 26) << verdict_word(arm, v) << '\n';
    }
  }
  out << '\n';
  for (const ArmReport& arm : report.arms) {
    out << "  " << arm_summary(arm);
    if (arm.error.empty()) {
      out << "  [" << arm.stats.passes << " passes, " << arm.stats.accepted << " accepted, " << arm.stats.answered
          << " answered, " << arm.stats.refused << " refused]";
    }
    out << '\n';
    if (!arm.error_hint.empty()) out << "    hint: " << arm.error_hint << '\n';
    if (arm.stats.exit_status) out << "    " << sim::exit_text(arm.stats) << '\n';
    // The story of a run that went other than expected, which ends with why the properties say
    // so; of a caught sabotage too when it was the one arm asked for (--arm).
    const bool told = !arm.story.empty() && (!arm.judgement.held || report.arms.size() == 1);
    for (const checker::Verdict& v : arm.verdicts) {
      if (!told && !v.held && !arm.expects(v.property)) out << "    " << v.property << ": " << v.detail << '\n';
    }
    if (!arm.cut.empty())
      out << "    " << arm.cut_at << ": the run stopped before its horizon: " << arm.cut << '\n';
    if (told) checker::write_story(out, arm.story, "    ", "      ");
    if (!arm.judgement.held) out << "    reproduce: " << arm.replay << '\n';
  }
  out << "\nverdict: " << verdict_text(report) << '\n';
}

nlohmann::ordered_json to_json(const RunReport& report) {
  nlohmann::ordered_json doc;
  doc["scenario"] = report.scenario;
  doc["seed"] = report.seed;
  doc["verdict"] = verdict_text(report);
  doc["arms"] = nlohmann::ordered_json::array();
  for (const ArmReport& arm : report.arms) {
    nlohmann::ordered_json a;
    a["name"] = arm.name;
    a["verdict"] = json_name(checker::outcome_of(arm));
    if (!arm.error.empty()) a["error"] = arm.error, a["hint"] = arm.error_hint;
    a["expect_violated"] = arm.expect_violated;
    a["properties"] = nlohmann::ordered_json::array();
    for (const checker::Verdict& v : arm.verdicts) {
      nlohmann::ordered_json p;
      p["property"] = v.property;
      if (!v.of.empty()) p["of"] = v.of;
      p["verdict"] = !v.decided ? "undecided" : v.held ? "held" : "violated";
      p["measured"] = v.measured;
      p["bound"] = v.bound;
      p["unit"] = unit_name(v.unit);
      if (!v.detail.empty()) p["detail"] = v.detail;
      if (v.first_bad) p["first_bad_event"] = *v.first_bad;
      a["properties"].push_back(std::move(p));
    }
    a["stats"] = {{"passes", arm.stats.passes},     {"accepted", arm.stats.accepted},
                  {"answered", arm.stats.answered}, {"refused", arm.stats.refused},
                  {"virtual_ns", arm.stats.virtual_time.count()}, {"wall_ns", arm.wall_ns}};
    if (!arm.cut.empty()) a["cut"] = arm.cut, a["cut_at"] = arm.cut_at;
    if (arm.stats.exit_status) {
      a["exit"] = {{"status", *arm.stats.exit_status}, {"at_ns", since_start(arm.stats.exited_at).count()},
                   {"last_stderr", arm.stats.last_stderr}};
      if (arm.stats.exit_signal != 0) a["exit"]["signal"] = arm.stats.exit_signal;
    }
    if (!arm.story.empty()) a["story"] = arm.story;
    if (!arm.judgement.held) a["replay"] = arm.replay;
    doc["arms"].push_back(std::move(a));
  }
  return doc;
}

}  // namespace loopsim::reports
