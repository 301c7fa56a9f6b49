// loopsim explore FILE: model-check the scenario's choices; write a replayable counterexample.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "checker/explore.hpp"
#include "checker/suite.hpp"
#include "cli/commands.hpp"

namespace loopsim::cli {

namespace {

struct ExploreArgs {
  std::string file;
  std::string strategy = "dfs";
  std::uint32_t depth = 64;
  std::uint32_t faults = 0;
  std::string fault_errno = "EMFILE";
  std::string seeds = "1..100";
  std::string shard = "0/1";
  std::string time_limit = "60s";
  std::uint64_t max_executions = 20000;
  std::string out = "out/explore";
  std::vector<std::string> set;
  bool no_prune = false;
  bool shrink = true;
  bool json = false;
};

std::pair<std::uint64_t, std::uint64_t> parse_pair(const std::string& text, const std::string& sep,
                                                   const std::string& what) {
  auto at = text.find(sep);
  try {
    if (at == std::string::npos) throw std::invalid_argument("");
    return {std::stoull(text.substr(0, at)), std::stoull(text.substr(at + sep.size()))};
  } catch (const std::exception&) {
    throw sim::ScenarioError("--" + what + ":1:1: cannot read \"" + text + "\"",
                             what == "seeds" ? "e.g. --seeds 1..100" : "e.g. --shard 0/4");
  }
}

// Each accept in the run may fail, within the budget: where they land is a choice point.
void add_fault_budget(sim::Scenario& scenario, const ExploreArgs& args) {
  if (args.faults == 0) return;
  sim::FaultSpec fault;
  fault.kind = sim::FaultSpec::Kind::accept_error;
  fault.error = sim::errno_from_name(args.fault_errno);
  if (fault.error == 0) throw sim::ScenarioError("--fault-errno:1:1: unknown errno " + args.fault_errno, "e.g. EMFILE");
  fault.until = scenario.horizon;
  fault.count = int(args.faults);
  scenario.faults.push_back(fault);
}

// Natural alternatives where they keep the failure: fewer decisions for a person to follow.
std::vector<model::Choice> minimize(const sim::Scenario& scenario, const checker::Costs& costs,
                                    std::vector<model::Choice> choices) {
  if (checker::judge_choices(scenario, costs, choices).empty()) return choices;  // liveness only
  for (std::size_t i = choices.size(); i-- > 0;) {
    if (choices[i].pick == 0) continue;
    auto trial = choices;
    trial[i].pick = 0;
    if (!checker::judge_choices(scenario, costs, trial).empty()) choices = std::move(trial);
  }
  return choices;
}

// Shrinks the scenario while the explorer still finds a failure: groups no expectation names are
// dropped, the others halved (then trimmed by one) while it fails. Returns the new counts.
std::map<std::string, int> shrink(const sim::Scenario& scenario, const checker::Costs& costs,
                                  checker::ExploreOptions options) {
  options.progress = nullptr;
  options.max_executions = std::min<std::uint64_t>(options.max_executions, 2000);
  std::map<std::string, int> counts;
  auto shrunk = [&](const std::map<std::string, int>& trial) {
    sim::Scenario s = scenario;
    std::erase_if(s.clients, [&](const sim::ClientGroup& g) {
      auto it = trial.find(g.name);
      return it != trial.end() && it->second == 0;
    });
    for (auto& g : s.clients) {
      if (auto it = trial.find(g.name); it != trial.end()) g.count = it->second;
    }
    return checker::explore(s, costs, options).verdict == checker::ExploreResult::Verdict::violated;
  };
  auto named = [&](const std::string& group) {
    return std::any_of(scenario.expect.begin(), scenario.expect.end(),
                       [&](const sim::Expectation& e) { return e.of == group || e.after == group; });
  };
  for (const auto& group : scenario.clients) {
    auto trial = counts;
    trial[group.name] = 0;
    if (!named(group.name) && scenario.clients.size() > 1 && shrunk(trial)) counts = trial;
  }
  for (const auto& group : scenario.clients) {
    if (counts.count(group.name)) continue;  // removed
    int n = group.count;
    while (n > 1) {
      auto trial = counts;
      trial[group.name] = n / 2;
      if (!shrunk(trial)) {
        trial[group.name] = n - 1;
        if (!shrunk(trial)) break;
      }
      counts = trial;
      n = trial[group.name];
    }
  }
  return counts;
}

std::string describe(const sim::Scenario& scenario, const std::map<std::string, int>& counts) {
  std::string text;
  for (const auto& group : scenario.clients) {
    auto it = counts.find(group.name);
    if (it == counts.end()) continue;
    if (!text.empty()) text += "; ";
    text += it->second == 0 ? group.name + " removed"
                            : group.name + ": " + std::to_string(group.count) + " -> " +
                                  std::to_string(it->second) + " clients";
  }
  return text.empty() ? "nothing could be removed" : text;
}

void write_dot(const std::string& path, const checker::Counterexample& cex) {
  std::ofstream out(path);
  out << "digraph counterexample {\n  rankdir=TB; node [shape=box, fontname=\"monospace\"];\n";
  for (std::size_t i = 0; i < cex.path.size(); ++i) {
    char label[32];
    std::snprintf(label, sizeof label, "%016llx", static_cast<unsigned long long>(cex.path[i]));
    out << "  s" << i << " [label=\"step " << i << "\\n" << label << "\"];\n";
    if (i > 0) out << "  s" << i - 1 << " -> s" << i << ";\n";
  }
  out << "}\n";
}

int explore_file(const ExploreArgs& args) {
  std::ifstream in(args.file, std::ios::binary);
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  auto overrides = parse_overrides(args.set);
  sim::Scenario scenario = sim::parse_scenario(text, args.file, overrides);
  scenario.file = args.file;
  checker::validate(scenario);
  add_fault_budget(scenario, args);
  checker::Costs costs = checker::costs_for(text, args.file);

  checker::ExploreOptions options;
  options.strategy = args.strategy == "random" ? checker::ExploreOptions::Strategy::random
                                               : checker::ExploreOptions::Strategy::dfs;
  options.depth = args.depth;
  options.max_executions = args.max_executions;
  options.prune = !args.no_prune;
  std::tie(options.seed_first, options.seed_last) = parse_pair(args.seeds, "..", "seeds");
  auto [shard, shards] = parse_pair(args.shard, "/", "shard");
  if (shards == 0 || shard >= shards) throw sim::ScenarioError("--shard:1:1: I/N needs I < N", "e.g. --shard 0/4");
  options.shard = std::uint32_t(shard);
  options.shards = std::uint32_t(shards);
  options.time_limit_ns = sim::parse_duration(args.time_limit).count();
  options.wall_ns = wall_ns;
  if (!args.json && isatty(STDERR_FILENO)) {
    options.progress = [](const checker::ExploreProgress& p) {
      std::cerr << "\rexplore: " << p.executions << " executions, " << p.states << " states, "
                << p.transitions << " transitions, " << p.stack << " to go   " << std::flush;
    };
  }
  std::int64_t started = wall_ns();
  checker::ExploreResult result = checker::explore(scenario, costs, options);
  std::map<std::string, int> shrunk_counts;
  std::int64_t elapsed = wall_ns() - started;
  if (options.progress) std::cerr << '\n';

  std::string cex_path, removed;
  if (result.counterexample && args.shrink) {
    auto counts = shrink(scenario, costs, options);
    removed = describe(scenario, counts);
    if (!counts.empty()) {
      sim::Scenario small = scenario;
      std::erase_if(small.clients, [&](const sim::ClientGroup& g) {
        auto it = counts.find(g.name);
        return it != counts.end() && it->second == 0;
      });
      for (auto& g : small.clients) {
        if (auto it = counts.find(g.name); it != counts.end()) g.count = it->second;
      }
      options.progress = nullptr;
      auto again = checker::explore(small, costs, options);
      if (again.counterexample) {
        result.counterexample = again.counterexample;
        scenario = small;
        shrunk_counts = counts;
      }
    }
  }
  if (result.counterexample) {
    auto& cex = *result.counterexample;
    cex.choices = minimize(scenario, costs, cex.choices);
    std::filesystem::create_directories(args.out);
    std::string stem = args.out + "/" + scenario.name + "-counterexample";
    cex_path = stem + ".toml";
    sim::Arm base{"base", {}, {}};
    std::ofstream(cex_path) << "# loopsim explore found this: " << cex.detail << "\n# replay: loopsim run "
                            << cex_path << "\n" << sim::pinned_scenario(text, args.file, base, overrides, cex.choices, shrunk_counts);
    write_dot(stem + ".dot", cex);
  }
  nlohmann::ordered_json doc;
  doc["scenario"] = scenario.name;
  doc["verdict"] = checker::verdict_name(result.verdict);
  if (!result.bound.empty()) doc["bound"] = result.bound;
  doc["executions"] = result.executions;
  doc["states"] = result.states;
  doc["transitions"] = result.transitions;
  doc["wall_ns"] = elapsed;
  if (result.counterexample) {
    doc["counterexample"] = cex_path;
    doc["violated"] = result.counterexample->violated;
    std::size_t natural = 0;
    for (const auto& c : result.counterexample->choices) natural += c.pick == 0;
    doc["choices"] = result.counterexample->choices.size();
    doc["choices_not_natural"] = result.counterexample->choices.size() - natural;
    if (args.shrink) doc["shrunk"] = removed;
  }
  if (args.json) {
    std::cout << doc.dump(2) << '\n';
  } else {
    std::cout << "explore " << scenario.name << " (" << args.file << ")\n";
    for (auto& [key, value] : doc.items()) std::cout << "  " << key << ": " << value.dump() << '\n';
    if (result.counterexample) std::cout << "replay: loopsim run " << cex_path << '\n';
  }
  if (result.verdict == checker::ExploreResult::Verdict::violated) return exit_violated;
  return exit_held;
}

}  // namespace

void add_explore(CLI::App& app, int& status) {
  auto args = std::make_shared<ExploreArgs>();
  auto* cmd = app.add_subcommand("explore", "Model-check a scenario's choices; write a replayable counterexample");
  cmd->add_option("file", args->file, "Scenario file (TOML)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--strategy", args->strategy, "dfs (every schedule within bounds) or random (one per seed)")
      ->check(CLI::IsMember({"dfs", "random"}))->capture_default_str();
  cmd->add_option("--depth", args->depth, "Choice points branched on, from the start")->capture_default_str();
  cmd->add_option("--faults", args->faults, "Fault budget: accepts that may fail (where is a choice)")
      ->capture_default_str();
  cmd->add_option("--fault-errno", args->fault_errno, "What those accepts fail with")->capture_default_str();
  cmd->add_option("--seeds", args->seeds, "Seeds A..B for the random strategy")->capture_default_str();
  cmd->add_option("--shard", args->shard, "I/N: this run's share of the search")->capture_default_str();
  cmd->add_option("--time-limit", args->time_limit, "Stop after this much wall time")->capture_default_str();
  cmd->add_option("--max-executions", args->max_executions, "Stop after this many runs")->capture_default_str();
  cmd->add_option("--out", args->out, "Where counterexamples go")->capture_default_str();
  cmd->add_option("--set", args->set, "Override a key (repeatable)")->take_all();
  cmd->add_flag("--no-prune", args->no_prune, "Branch again from states seen before");
  cmd->add_flag("!--no-shrink", args->shrink, "Keep the scenario's client groups as they are");
  cmd->add_flag("--json", args->json, "Print one JSON document");
  cmd->footer("Exit status: 0 nothing found (verdict none_found, or bound_reached: a bound cut the\n"
              "search short, which is not a pass), 1 a counterexample was found and written, 2 bad input.");
  cmd->callback([args, &status] {
    try {
      status = explore_file(*args);
    } catch (const sim::ScenarioError& e) {
      status = report_error(e);
    }
  });
}

}  // namespace loopsim::cli
