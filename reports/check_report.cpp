#include "reports/check_report.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <ostream>
#include <stdexcept>

#include "checker/story.hpp"
#include "reports/summary.hpp"

namespace loopsim::reports {

namespace {

std::string figures(const checker::Verdict& v) {
  std::string bound = show(v.bound, v.unit);
  if (v.bound_text.find(' ') != std::string::npos) bound += " (" + v.bound_text + ")";
  return "measured " + show(v.measured, v.unit) + ", bound " + bound;
}

std::string about(const checker::Verdict& v) { return v.of.empty() ? v.property : v.property + " of " + v.of; }

// The properties column: what was caught, or what went wrong.
std::string properties_cell(const checker::ArmReport& arm) {
  const auto& j = arm.judgement;
  if (!arm.error.empty()) return arm.error;
  std::string cell;
  auto add = [&cell](const std::string& prefix, const std::vector<std::string>& names) {
    if (names.empty()) return;
    cell += (cell.empty() ? "" : "; ") + prefix;
    for (std::size_t i = 0; i < names.size(); ++i) cell += (i ? ", " : "") + names[i];
  };
  if (j.held) {
    add("caught by ", arm.expect_violated);
    return cell;
  }
  add("violated: ", j.unexpected_violations);
  add("held but expected violated: ", j.missed_violations);
  return cell;
}

std::string column(std::string s, std::size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s + ' ';
}

std::string wall_ms(std::int64_t ns) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", double(ns) / 1e6);
  return buffer;
}

void print_problems(const std::vector<ScenarioOutcome>& outcomes, std::ostream& out) {
  for (const ScenarioOutcome& o : outcomes) {
    if (!o.ok()) {
      out << "  " << o.error << '\n';
      if (!o.hint.empty()) out << "    hint: " << o.hint << '\n';
      continue;
    }
    for (const checker::ArmReport& arm : o.report->arms) {
      if (!arm.error.empty()) {
        out << "  " << o.report->scenario << " / " << arm.name << ": " << arm.error << '\n';
        if (!arm.error_hint.empty()) out << "    hint: " << arm.error_hint << '\n';
        continue;
      }
      if (arm.judgement.limited()) {
        out << "  " << arm.cut_at << ": " << o.report->scenario << " / " << arm.name
            << ": stopped before its horizon (" << arm.cut << ")";
        if (!arm.judgement.undecided.empty()) out << "; undecided:";
        for (const std::string& p : arm.judgement.undecided) out << ' ' << p;
        out << '\n';
        continue;
      }
      if (arm.judgement.held) continue;
      out << "  " << o.report->scenario << " / " << arm.name << ":\n";
      for (const std::string& p : arm_problems(arm)) out << "    " << p << '\n';
      checker::write_story(out, arm.story, "    ", "      ");
      out << "    reproduce: " << arm.replay << '\n';
    }
  }
}

std::string count(int n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

const char* verdict_name(CheckVerdict v) {
  switch (v) {
    case CheckVerdict::held: return "held";
    case CheckVerdict::violated: return "violated";
    case CheckVerdict::error: return "error";
    case CheckVerdict::limit: return "limit";
  }
  return "error";
}

}  // namespace

CheckVerdict CheckTotals::verdict() const {
  if (errors > 0) return CheckVerdict::error;
  if (violated > 0) return CheckVerdict::violated;
  return limits > 0 ? CheckVerdict::limit : CheckVerdict::held;
}

CheckTotals totals(const std::vector<ScenarioOutcome>& outcomes) {
  CheckTotals t;
  for (const ScenarioOutcome& o : outcomes) {
    ++t.scenarios;
    if (!o.ok()) {
      ++t.errors;
      ++t.unreported;
      continue;
    }
    for (const checker::ArmReport& arm : o.report->arms) {
      ++t.arms;
      if (!arm.error.empty()) {
        ++t.errors;
        ++t.arm_errors;
        continue;
      }
      ++(arm.judgement.limited() ? t.limits : arm.judgement.held ? t.held : t.violated);
    }
  }
  return t;
}

std::string arm_verdict(const checker::ArmReport& arm) {
  switch (checker::outcome_of(arm)) {
    case checker::ArmOutcome::limit: return "LIMIT";
    case checker::ArmOutcome::held: return "held";
    case checker::ArmOutcome::violated: return "VIOLATED";
    case checker::ArmOutcome::caught: return "caught";
    case checker::ArmOutcome::not_caught: return "NOT-CAUGHT";
    case checker::ArmOutcome::error: return "ERROR";
  }
  return "?";
}

std::vector<std::string> arm_problems(const checker::ArmReport& arm) {
  std::vector<std::string> problems;
  for (const checker::Verdict& v : arm.verdicts) {
    if (v.held || arm.expects(v.property)) continue;
    problems.push_back(about(v) + " violated: " + figures(v) + (v.detail.empty() ? "" : "; " + v.detail));
  }
  for (const std::string& p : arm.judgement.missed_violations) {
    bool judged = false;
    for (const checker::Verdict& v : arm.verdicts) {
      if (v.property != p) continue;
      judged = true;
      problems.push_back(about(v) + " held but was expected to be violated: " + figures(v));
    }
    if (!judged) problems.push_back(p + " was expected to be violated, but the scenario does not check it");
  }
  return problems;
}

std::string scenario_name(const ScenarioOutcome& outcome) {
  if (outcome.ok()) return outcome.report->scenario;
  return std::filesystem::path(outcome.file).stem().string();
}

void print_check_table(const std::vector<ScenarioOutcome>& outcomes, std::ostream& out) {
  std::size_t name_width = 8, arm_width = 3;
  for (const ScenarioOutcome& o : outcomes) {
    name_width = std::max(name_width, scenario_name(o).size());
    if (o.ok()) {
      for (const auto& arm : o.report->arms) arm_width = std::max(arm_width, arm.name.size());
    }
  }
  out << column("scenario", name_width) << column("arm", arm_width) << column("verdict", 10) << column("wall ms", 8)
      << "properties\n";
  for (const ScenarioOutcome& o : outcomes) {
    if (!o.ok()) {
      out << column(scenario_name(o), name_width) << column("-", arm_width) << column("ERROR", 10) << column("-", 8)
          << o.error << '\n';
      continue;
    }
    for (const checker::ArmReport& arm : o.report->arms) {
      out << column(o.report->scenario, name_width) << column(arm.name, arm_width) << column(arm_verdict(arm), 10)
          << column(wall_ms(arm.wall_ns), 8) << properties_cell(arm) << '\n';
    }
  }
  CheckTotals t = totals(outcomes);
  out << '\n';
  print_problems(outcomes, out);
  if (t.violated + t.errors + t.limits > 0) out << '\n';
  out << count(t.scenarios, "scenario") << ", " << count(t.arms, "arm") << ": " << t.held << " held, "
      << t.violated << " violated, " << count(t.errors, "error");
  if (t.limits > 0) out << ", " << t.limits << " stopped at a limit";
  out << "\nverdict: " << verdict_name(t.verdict()) << '\n';
}

nlohmann::ordered_json check_json(const std::vector<ScenarioOutcome>& outcomes) {
  nlohmann::ordered_json doc;
  doc["scenarios"] = nlohmann::ordered_json::array();
  for (const ScenarioOutcome& o : outcomes) {
    nlohmann::ordered_json entry;
    if (o.ok()) {
      entry = to_json(*o.report);
      entry["file"] = o.file;
    } else {
      entry = {{"file", o.file}, {"verdict", "error"}, {"error", o.error}, {"hint", o.hint}};
    }
    doc["scenarios"].push_back(std::move(entry));
  }
  CheckTotals t = totals(outcomes);
  doc["summary"] = {{"scenarios", t.scenarios}, {"arms", t.arms},         {"held", t.held},
                    {"violated", t.violated},   {"errors", t.errors}, {"limits", t.limits}, {"verdict", verdict_name(t.verdict())}};
  return doc;
}

// ---- the outcome, for the wire between a child process and its parent ----------------------

namespace {

using nlohmann::json;

json encode_arm(const checker::ArmReport& arm) {
  json verdicts = json::array();
  for (const checker::Verdict& v : arm.verdicts) {
    verdicts.push_back({{"property", v.property}, {"of", v.of}, {"held", v.held}, {"measured", v.measured},
                        {"bound", v.bound}, {"unit", int(v.unit)}, {"bound_text", v.bound_text},
                        {"detail", v.detail}, {"first_bad", v.first_bad ? json(*v.first_bad) : json()}, {"decided", v.decided}});
  }
  const sim::RunStats& st = arm.stats;
  return {{"name", arm.name},
          {"expect_violated", arm.expect_violated},
          {"verdicts", std::move(verdicts)},
          {"held", arm.judgement.held},
          {"unexpected", arm.judgement.unexpected_violations},
          {"missed", arm.judgement.missed_violations},
          {"undecided", arm.judgement.undecided},
          {"limit", arm.judgement.limit},
          {"cut", arm.cut},
          {"cut_at", arm.cut_at},
          {"stats", {st.passes, st.accepted, st.answered, st.refused, st.steps, st.virtual_time.count()}},
          {"exit", st.exit_status ? json{*st.exit_status, since_start(st.exited_at).count(), st.last_stderr, st.exit_signal} : json()},
          {"wall_ns", arm.wall_ns},
          {"replay", arm.replay},
          {"replay_diverged", arm.replay_diverged},
          {"divergence", arm.divergence},
          {"error", arm.error},
          {"error_hint", arm.error_hint},
          {"story", arm.story}};
}

checker::ArmReport decode_arm(const json& a) {
  checker::ArmReport arm;
  arm.name = a.at("name").get<std::string>();
  arm.expect_violated = a.at("expect_violated").get<std::vector<std::string>>();
  for (const json& v : a.at("verdicts")) {
    checker::Verdict verdict;
    verdict.property = v.at("property").get<std::string>();
    verdict.of = v.at("of").get<std::string>();
    verdict.held = v.at("held").get<bool>();
    verdict.measured = v.at("measured").get<std::int64_t>();
    verdict.bound = v.at("bound").get<std::int64_t>();
    verdict.unit = checker::Unit(v.at("unit").get<int>());
    verdict.bound_text = v.at("bound_text").get<std::string>();
    verdict.detail = v.at("detail").get<std::string>();
    if (!v.at("first_bad").is_null()) verdict.first_bad = v.at("first_bad").get<std::size_t>();
    verdict.decided = v.at("decided").get<bool>();
    arm.verdicts.push_back(std::move(verdict));
  }
  arm.judgement.held = a.at("held").get<bool>();
  arm.judgement.unexpected_violations = a.at("unexpected").get<std::vector<std::string>>();
  arm.judgement.missed_violations = a.at("missed").get<std::vector<std::string>>();
  arm.judgement.undecided = a.at("undecided").get<std::vector<std::string>>();
  arm.judgement.limit = a.at("limit").get<bool>();
  arm.cut = a.at("cut").get<std::string>();
  arm.cut_at = a.at("cut_at").get<std::string>();
  const json& st = a.at("stats");
  arm.stats.passes = st.at(0).get<std::uint64_t>();
  arm.stats.accepted = st.at(1).get<std::uint64_t>();
  arm.stats.answered = st.at(2).get<std::uint64_t>();
  arm.stats.refused = st.at(3).get<std::uint64_t>();
  arm.stats.steps = st.at(4).get<std::uint64_t>();
  arm.stats.virtual_time = Duration(st.at(5).get<std::int64_t>());
  if (const json& x = a.at("exit"); !x.is_null()) {
    arm.stats.exit_status = x.at(0).get<int>();
    arm.stats.exited_at = Instant{Duration(x.at(1).get<std::int64_t>())};
    arm.stats.last_stderr = x.at(2).get<std::string>();
    arm.stats.exit_signal = x.size() > 3 ? x.at(3).get<int>() : 0;
  }
  arm.wall_ns = a.at("wall_ns").get<std::int64_t>();
  arm.replay = a.at("replay").get<std::string>();
  arm.replay_diverged = a.at("replay_diverged").get<bool>();
  arm.divergence = a.at("divergence").get<std::string>();
  arm.error = a.value("error", std::string());
  arm.error_hint = a.value("error_hint", std::string());
  arm.story = a.at("story").get<std::vector<std::string>>();
  return arm;
}

}  // namespace

std::string encode_outcome(const ScenarioOutcome& o) {
  json doc = {{"file", o.file}, {"error", o.error}, {"hint", o.hint}};
  if (o.report) {
    json arms = json::array();
    for (const checker::ArmReport& arm : o.report->arms) arms.push_back(encode_arm(arm));
    doc["report"] = {{"scenario", o.report->scenario}, {"file", o.report->file}, {"seed", o.report->seed},
                     {"arms", std::move(arms)}};
  }
  return doc.dump();
}

ScenarioOutcome decode_outcome(const std::string& bytes) {
  try {
    const json doc = json::parse(bytes);
    ScenarioOutcome o{doc.at("file").get<std::string>(), std::nullopt, doc.at("error").get<std::string>(),
                      doc.at("hint").get<std::string>()};
    if (doc.contains("report")) {
      const json& r = doc.at("report");
      checker::RunReport report;
      report.scenario = r.at("scenario").get<std::string>();
      report.file = r.at("file").get<std::string>();
      report.seed = r.at("seed").get<std::uint64_t>();
      for (const json& a : r.at("arms")) report.arms.push_back(decode_arm(a));
      o.report = std::move(report);
    }
    return o;
  } catch (const json::exception& e) {
    throw std::invalid_argument(std::string("not an encoded outcome: ") + e.what());
  }
}

}  // namespace loopsim::reports
