// loopsim seeds: the seed notes' tables beside loopsim's figures, as a Markdown document; with
// --live, each row that a client can measure also run against loopsim live.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "checker/properties.hpp"
#include "cli/commands.hpp"
#include "probe/figures.hpp"
#include "probe/live_clients.hpp"
#include "probe/self_server.hpp"
#include "checker/seed_tables.hpp"

namespace loopsim::cli {

namespace {

std::string read_text(const std::string& path) { return sim::read_scenario_file(path); }

// One live run per scenario and arm, shared by the rows that read it.
class LiveRuns {
 public:
  std::string figure(const checker::LiveAsk& ask) {
    if (!ask.answers_of_group && !probe::judged_from_clients(ask.property)) return "(server side)";
    const auto key = std::pair(ask.scenario, ask.arm);
    if (!runs_.count(key)) runs_.emplace(key, run(ask));
    const Run& r = runs_.at(key);
    if (!r.error.empty()) return "(" + r.error + ")";
    if (ask.answers_of_group) {
      const auto f = probe::group_figures(r.live.trace, ask.property);
      return std::to_string(f.answered) + " of " + std::to_string(f.asked);
    }
    for (const sim::Expectation& e : r.scenario.expect) {
      if (e.property != ask.property) continue;
      const checker::Verdict v = checker::evaluate(r.live.trace, {e}, {}).at(0);
      if (v.measured < 0) return "never";
      if (!ask.in_ms) return std::to_string(v.measured);
      char text[32];
      std::snprintf(text, sizeof text, "%.2f ms", double(v.measured) / 1e6);
      return text;
    }
    return "(no such property)";
  }

 private:
  struct Run {
    sim::Scenario scenario;
    probe::LiveRun live;
    std::string error;
  };

  static Run run(const checker::LiveAsk& ask) {
    Run r;
    const std::string text = read_text(ask.scenario);
    r.scenario = sim::parse_scenario(text, ask.scenario);
    std::vector<std::string> set;
    for (const sim::Arm& arm : r.scenario.arms) {
      if (arm.name != ask.arm) continue;
      for (const sim::Override& o : arm.set) set.push_back(o.key + "=" + o.value);
      r.scenario = sim::scenario_for_arm(text, ask.scenario, arm);
    }
    std::cerr << "seeds: " << ask.scenario << " (" << ask.arm << ") live\n";
    probe::SelfServer server;
    probe::LiveOptions options;
    options.port = server.start(ask.scenario, set);
    options.time_limit = since_start(r.scenario.horizon);
    r.live = probe::drive_live(r.scenario, options);
    server.stop();
    r.error = r.live.error;
    return r;
  }

  std::map<std::pair<std::string, std::string>, Run> runs_;
};

}  // namespace

void add_seeds(CLI::App& app, int& status) {
  auto out = std::make_shared<std::string>("docs/seed-tables.md");
  auto dir = std::make_shared<std::string>("scenarios");
  auto live = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("seeds", "Regenerate the seed notes' tables from simulation runs");
  cmd->add_option("--out", *out, "The document to write")->capture_default_str();
  cmd->add_option("--scenarios", *dir, "Where the scenarios are")->capture_default_str();
  cmd->add_flag("--live", *live,
                "Add a loopsim live column: each row a client can measure, run once against loopsim live on loopback");
  cmd->callback([out, dir, live, &status] {
    try {
      check_output("--out", *out, {});
      LiveRuns runs;
      checker::LiveFigure figure;
      if (*live) figure = [&runs](const checker::LiveAsk& ask) { return runs.figure(ask); };
      std::ostringstream text;  // whole, or not at all: a row that cannot be read writes nothing
      checker::write_seed_tables(*dir, text, figure);
      write_output_file("--out", *out, [&](std::ostream& file) { file << text.str(); }, {});
      std::cout << "wrote " << *out << '\n';
      status = exit_held;
    } catch (const sim::ScenarioError& e) {
      status = report_error(e);
    }
  });
}

}  // namespace loopsim::cli
