// loopsim explore FILE: model-check the scenario's choices; write a replayable counterexample.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "checker/story.hpp"
#include "checker/suite.hpp"
#include "cli/commands.hpp"
#include "explore/explorer.hpp"
#include "explore/shrink.hpp"

namespace loopsim::cli {

namespace {

struct ExploreArgs {
  std::string file;
  std::string strategy = "deviations";
  std::uint32_t depth = explore::ExploreOptions{}.depth;
  std::uint32_t faults = 0;
  std::string fault_errno = "EMFILE";
  std::string seeds = "1..100";
  std::string shard = "0/1";
  std::string time_limit = "60s";
  std::uint64_t max_executions = explore::ExploreOptions{}.max_executions;
  std::string out = "out/explore";
  std::vector<std::string> set;
  bool no_prune = false;
  bool no_symmetry = false;
  std::uint64_t snapshot_mib = explore::ExploreOptions{}.snapshot_bytes >> 20;
  std::string arm = "base";
  std::string maximize;
  std::string judge;  // "": every expectation
  bool shrink = true;
  std::string shrink_time_limit = "60s";
  bool json = false;
  bool audit = false;
};

// The name explore's files start with: the scenario's and the arm's, so that searches of
// different arms may share an --out.
std::string file_stem(const sim::Scenario& scenario, const sim::Arm& arm) {
  return scenario.name + "-" + arm.name;
}

// Each accept in the run may fail, within the budget: where they land is a choice point. The
// budget goes into the scenario's text, so that a counterexample file carries it too.
std::string with_fault_budget(const std::string& text, const sim::Scenario& scenario, const ExploreArgs& args) {
  return text + "\n# added by explore --faults " + std::to_string(args.faults) +
         "\n[[faults]]\nkind = \"accept_error\"\nerrno = \"" + args.fault_errno +
         "\"\nat = \"0ns\"\nuntil = \"" + std::to_string(since_start(scenario.horizon).count()) +
         "ns\"\ncount = " + std::to_string(args.faults) + "\n";
}

// --judge: keeps the expectations whose property is named in `list` (comma-separated), each
// name one the scenario expects.
void judge_only(sim::Scenario& scenario, const std::string& list) {
  std::vector<std::string> names;
  std::size_t column = 1;
  for (std::size_t start = 0; start <= list.size();) {
    std::size_t comma = std::min(list.find(',', start), list.size());
    std::string name = list.substr(start, comma - start);
    bool expected = std::any_of(scenario.expect.begin(), scenario.expect.end(),
                                [&](const sim::Expectation& e) { return e.property == name; });
    if (!expected) {
      std::string known;
      for (const sim::Expectation& e : scenario.expect) {
        if (known.find(e.property) == std::string::npos) known += (known.empty() ? "" : ", ") + e.property;
      }
      throw sim::ScenarioError("--judge:1:" + std::to_string(column) + ": the scenario expects no \"" + name + "\"",
                               "it expects: " + (known.empty() ? std::string("nothing") : known));
    }
    names.push_back(name);
    column += comma - start + 1;
    start = comma + 1;
  }
  std::erase_if(scenario.expect, [&](const sim::Expectation& e) {
    return std::find(names.begin(), names.end(), e.property) == names.end();
  });
}

// --maximize PROPERTY[:OF]: the property and its group, one of the expectations judged.
// `expected` is every expectation of the arm, --judge's choice among them in `scenario`.
std::pair<std::string, std::string> maximized(const ExploreArgs& args, const sim::Scenario& scenario,
                                              const std::vector<sim::Expectation>& expected) {
  const std::size_t colon = args.maximize.find(':');
  std::string property = args.maximize.substr(0, colon);
  std::string of = colon == std::string::npos ? std::string() : args.maximize.substr(colon + 1);
  if (colon != std::string::npos && of.empty()) {
    throw sim::ScenarioError("--maximize:1:" + std::to_string(colon + 2) + ": \"" + args.maximize +
                                 "\" names no group after the colon",
                             "name the group, e.g. --maximize " + property + ":fast, or leave out the colon");
  }
  auto names = [&](const sim::Expectation& e) { return e.property == property && (of.empty() || e.of == of); };
  if (std::none_of(expected.begin(), expected.end(), names)) {
    throw sim::ScenarioError("--maximize:1:1: the scenario expects no " + args.maximize,
                             "name one of its [[expect]] entries, e.g. --maximize latency:fast");
  }
  if (std::none_of(scenario.expect.begin(), scenario.expect.end(), names)) {
    throw sim::ScenarioError("--maximize:1:1: --judge " + args.judge + " leaves out " + args.maximize +
                                 ", which the scenario expects",
                             "add " + property + " to --judge, or drop --judge");
  }
  return {property, of};
}

int explore_file(const ExploreArgs& args) {
  std::string text = sim::read_scenario_file(args.file);
  auto overrides = parse_overrides(args.set);
  sim::Scenario scenario = sim::parse_scenario(text, args.file, overrides);
  if (args.faults > 0) {  // the budget's window is the horizon, known once the file is read
    text = with_fault_budget(text, scenario, args);
    scenario = sim::parse_scenario(text, args.file, overrides);
  }
  sim::Arm arm{"base", {}, {}};
  if (args.arm != "base") {
    auto it = std::find_if(scenario.arms.begin(), scenario.arms.end(),
                           [&](const sim::Arm& a) { return a.name == args.arm; });
    if (it == scenario.arms.end()) {
      throw sim::ScenarioError(args.file + ":1:1: no arm named \"" + args.arm + "\"",
                               "arms are \"base\" and the names under [[arms]]");
    }
    arm = *it;
    scenario = sim::scenario_for_arm(text, args.file, arm, overrides);
  }
  scenario.file = args.file;
  const std::vector<sim::Expectation> expected = scenario.expect;  // before --judge keeps some
  if (!args.judge.empty()) judge_only(scenario, args.judge);
  checker::validate(scenario);
  checker::Costs costs = checker::costs_for(text, args.file);

  explore::ExploreOptions options;
  options.strategy = args.strategy == "random" ? explore::ExploreOptions::Strategy::random
                     : args.strategy == "dfs" ? explore::ExploreOptions::Strategy::dfs
                                              : explore::ExploreOptions::Strategy::deviations;
  options.depth = args.depth;
  options.max_executions = args.max_executions;
  options.prune = !args.no_prune;
  options.symmetry = !args.no_symmetry;
  options.snapshots = args.snapshot_mib > 0;
  options.snapshot_bytes = args.snapshot_mib << 20;
  std::tie(options.seed_first, options.seed_last) = parse_pair(args.seeds, "..", "seeds");
  if (options.seed_first > options.seed_last) {
    throw sim::ScenarioError("--seeds:1:1: " + args.seeds + " is an empty range", "the first seed comes first: --seeds 1..100");
  }
  std::tie(options.shard, options.shards) = parse_shard(args.shard);
  options.time_limit_ns = option_duration("--time-limit", args.time_limit).count();
  const std::int64_t shrink_ns = option_duration("--shrink-time-limit", args.shrink_time_limit).count();
  if (!args.maximize.empty()) std::tie(options.maximize, options.maximize_of) = maximized(args, scenario, expected);
  options.audit = args.audit;
  make_output_folder("--out", args.out);
  // The files it may write, checked before the search: a bad one costs no search.
  for (const char* end : {"-counterexample.toml", "-counterexample.dot", "-worst.toml"}) {
    refuse_unsafe_output("--out", args.out + "/" + file_stem(scenario, arm) + end, {args.file});
  }
  options.wall_ns = wall_ns;
  if (!args.json && isatty(STDERR_FILENO)) {
    options.progress = [](const explore::ExploreProgress& p) {
      std::cerr << "\rexplore: " << p.executions << " executions, " << p.states << " states, "
                << p.transitions << " transitions, " << p.stack << " to go   " << std::flush;
    };
  }
  std::int64_t started = wall_ns();
  explore::ExploreResult result = explore::search(scenario, costs, options);
  sim::Shrinks shrunk;
  std::int64_t elapsed = wall_ns() - started;
  if (options.progress) std::cerr << '\n';

  std::string cex_path, removed, worst_path;
  std::vector<std::string> story;  // the counterexample's, in words
  // A target's program by the path found here: the file written may live in another folder.
  std::vector<sim::Override> written = overrides;
  if (scenario.target) {
    std::vector<std::string> exec = scenario.target->exec;
    exec.front() = scenario.target->program;
    written.push_back(sim::Override{"target.exec", sim::toml_strings(exec)});
  }
  if (result.worst) {
    worst_path = args.out + "/" + file_stem(scenario, arm) + "-worst.toml";
    write_output_file("--out", worst_path, [&](std::ostream& out) {
      out << "# loopsim explore --maximize " << args.maximize << ": the worst of " << result.judged
          << " executions measured " << result.worst->verdict.measured
          << (result.worst->verdict.unit == checker::Unit::ns ? " ns" : "") << "\n# replay: loopsim run "
          << worst_path << "\n" << sim::pinned_scenario(text, args.file, arm, written, result.worst->choices, {}, worst_path);
    }, {args.file});
  }
  if (!result.diverged.empty()) {
    // The search could not repeat its own execution: nothing it says can be trusted.
    nlohmann::ordered_json doc;
    doc["scenario"] = scenario.name;
    doc["verdict"] = "diverged";
    doc["diverged"] = result.diverged;
    doc["command"] = "explore";
    if (args.json) std::cout << doc.dump(2) << '\n';
    std::cerr << "loopsim explore: " << args.file << ": " << result.diverged
              << "\n  the search stopped: a run of this scenario did not repeat itself. Please report it.\n";
    return exit_audit_failed;
  }
  if (!result.audit_failure.empty()) {
    // A loopsim bug, not the scenario's: no counterexample is shrunk or written.
    nlohmann::ordered_json doc;
    doc["scenario"] = scenario.name;
    doc["verdict"] = "audit_failed";
    doc["audit_failure"] = result.audit_failure;
    doc["audit_compared"] = result.audit_compared;
    doc["command"] = "explore";
    if (args.json) std::cout << doc.dump(2) << '\n';
    std::cerr << "loopsim explore: digest audit of " << args.file << ": " << result.audit_failure
              << "\n  two states the search would merge are not equal: a field the digest reads wrongly or misses."
              << " Please report it.\n";
    return exit_audit_failed;
  }
  // Shrinking and minimizing have a budget of their own (--shrink-time-limit), from when the
  // search ends: a search that used all of --time-limit still gets a small counterexample.
  explore::Budget budget;
  budget.wall_ns = wall_ns;
  if (shrink_ns > 0) budget.deadline_ns = wall_ns() + shrink_ns;
  // Each trial search may take what is left of the shrinking's budget.
  options.time_limit_ns = 0;
  if (result.counterexample && args.shrink) {
    // The last trial that failed is the smallest case found so far: its counterexample is the
    // one written, even when the budget ran out before the next trial.
    std::optional<explore::Counterexample> smaller;
    sim::Shrinks counts = explore::shrink(scenario, costs, options, &budget, &smaller);
    const bool applied = !counts.empty() && smaller;
    removed = explore::describe(scenario, applied ? counts : sim::Shrinks{});
    if (applied) {
      result.counterexample = std::move(smaller);
      scenario = sim::with_shrinks(scenario, counts);
      shrunk = counts;
    }
  }
  if (result.counterexample) {
    auto& cex = *result.counterexample;
    // A liveness failure is a cycle, which one run shows only when it is watched for: the
    // counterexample expects "liveness", so that `loopsim run` judges it there too.
    if (cex.violated == std::vector<std::string>{"liveness"}) {
      text += "\n# added by explore: the failure it found\n[[expect]]\nproperty = \"liveness\"\n";
      sim::Expectation live;
      live.property = "liveness";
      scenario.expect.push_back(live);
    }
    cex.choices = explore::minimize(scenario, costs, cex.choices, &budget);
    cex.path = explore::path_of(*explore::world_system(scenario, costs, options.symmetry), cex.choices);
    std::string stem = args.out + "/" + file_stem(scenario, arm) + "-counterexample";
    cex_path = stem + ".toml";
    auto write_cex = [&](const std::vector<std::string>& told) {
      write_output_file("--out", cex_path, [&](std::ostream& out) {
        out << "# loopsim explore found this: " << sim::escape_controls(cex.detail) << "\n# replay: loopsim run "
            << cex_path << "\n";
        checker::write_story(out, told, "#\n# ", "#   ");
        out << sim::pinned_scenario(text, args.file, arm, written, cex.choices, shrunk, cex_path);
      }, {args.file});
    };
    write_cex({});
    // The story comes from the file as written, run once more: what a reader replays is what
    // it tells.
    Retold retold = retell(cex_path);
    story = retold.story;
    if (!story.empty()) write_cex(story);
    if (!retold.graph.empty())
      write_output_file("--out", stem + ".dot", [&](std::ostream& out) { out << retold.graph; }, {args.file});
  }
  nlohmann::ordered_json doc;
  doc["scenario"] = scenario.name;
  doc["verdict"] = explore::verdict_name(result.verdict);
  if (!result.bound.empty()) doc["bound"] = result.bound;
  if (!result.bounds.empty()) doc["bounds"] = result.bounds;
  doc["merged"] = result.merged;
  if (!result.merging_note.empty()) doc["merging"] = result.merging_note;
  doc["executions"] = result.executions;
  if (scenario.target) {
    doc["preemption_bound"] = scenario.target->preemptions;  // [target] preemptions
    doc["preempted_executions"] = result.preempted;
  }
  doc["states"] = result.states;
  doc["transitions"] = result.transitions;
  doc["cut"] = result.cut;
  if (options.strategy == explore::ExploreOptions::Strategy::deviations) {
    // Every execution with at most this many non-natural choices was searched (-1: none).
    doc["deviations_completed"] = result.deviations_completed;
    doc["deviations_max"] = result.deviations_max;
  }
  doc["steps"] = result.steps;
  doc["replayed_steps"] = result.replayed_steps;
  doc["snapshots"] = result.snapshots;
  doc["restores"] = result.restores;
  doc["snapshot_bytes_peak"] = result.snapshot_bytes_peak;
  if (args.audit) {
    doc["audit_compared"] = result.audit_compared;
    if (result.audit_unwritten > 0) doc["audit_unwritten"] = result.audit_unwritten;
  }
  if (!args.arm.empty() && args.arm != "base") doc["arm"] = args.arm;
  if (result.worst) {
    doc["maximize"] = args.maximize;
    doc["worst"] = result.worst->measured;
    doc["worst_text"] = result.worst->verdict.unit == checker::Unit::ns
                            ? checker::ms_text(Duration(result.worst->measured))
                            : std::to_string(result.worst->measured);
    doc["worst_execution"] = result.worst->execution;
    doc["judged"] = result.judged;
    doc["worst_replay"] = worst_path;
    doc["worst_choices_not_natural"] = model::not_natural(result.worst->choices);
  } else if (!args.maximize.empty()) {
    doc["maximize"] = args.maximize;
    doc["worst"] = nullptr;  // no execution measured it
  }
  doc["wall_ns"] = elapsed;
  if (result.counterexample) {
    doc["counterexample"] = cex_path;
    doc["violated"] = result.counterexample->violated;
    doc["choices"] = result.counterexample->choices.size();
    doc["choices_not_natural"] = model::not_natural(result.counterexample->choices);
    if (args.shrink) doc["shrunk"] = removed;
    // The counterexample fails either way; cut short, it is only less small than it could be.
    if (budget.cut) doc["shrink_cut"] = "--shrink-time-limit ran out while shrinking: the counterexample is the smallest found so far";
    if (!story.empty()) doc["story"] = story;
  }
  doc["command"] = "explore";
  doc["shard"] = {{"index", options.shard}, {"count", options.shards}};
  // What every shard of one search must share, so that `loopsim merge` can refuse a mix.
  doc["search"] = {{"file", args.file},           {"arm", args.arm},         {"strategy", args.strategy},
                   {"depth", args.depth},         {"faults", args.faults},   {"fault_errno", args.fault_errno},
                   {"seeds", args.seeds},         {"prune", !args.no_prune},
                   {"symmetry", !args.no_symmetry}, {"max_executions", args.max_executions},
                   {"maximize", args.maximize},   {"shrink", args.shrink},   {"set", args.set},
                   {"judge", args.judge}};
  if (args.json) {
    std::cout << doc.dump(2) << '\n';
  } else {
    std::cout << "explore " << scenario.name << " (" << args.file << ")\n";
    for (auto& [key, value] : doc.items()) {
      if (key == "command" || key == "search" || key == "story" || (key == "shard" && options.shards == 1)) continue;
      std::cout << "  " << key << ": " << value.dump() << '\n';
    }
    checker::write_story(std::cout, story, "", "  ");
    if (result.counterexample) std::cout << "replay: loopsim run " << cex_path << '\n';
    if (result.worst) std::cout << "worst case: loopsim run " << worst_path << '\n';
  }
  switch (result.verdict) {
    case explore::ExploreResult::Verdict::violated: return exit_violated;
    case explore::ExploreResult::Verdict::bound_reached: return exit_bound_reached;
    case explore::ExploreResult::Verdict::none_found: break;
  }
  return exit_held;
}

}  // namespace

void add_explore(CLI::App& app, int& status) {
  auto args = std::make_shared<ExploreArgs>();
  auto* cmd = app.add_subcommand("explore", "Model-check a scenario's choices; write a replayable counterexample");
  cmd->add_option("file", args->file, "Scenario file (TOML)")->required()->check(non_empty);
  cmd->add_option("--strategy", args->strategy,
                  "deviations: every schedule within bounds, fewest non-natural choices first (the natural\n"
                  "run, then each with one, then two, ...; deviations_completed says how far it got);\n"
                  "dfs: every schedule, depth first; random: one schedule per seed, a sample")
      ->check(CLI::IsMember({"deviations", "dfs", "random"}))->capture_default_str();
  cmd->add_option("--depth", args->depth, "Decisions branched on in one execution, from its start (later ones take\n"
                  "their natural alternative, and the search says the bound cut it)")->capture_default_str();
  cmd->add_option("--faults", args->faults, "Fault budget: accepts that may fail (where is a choice)")
      ->capture_default_str();
  cmd->add_option("--fault-errno", args->fault_errno, "What those accepts fail with: EMFILE, ENFILE, ENOBUFS or ECONNABORTED")
      ->check(CLI::Validator(
          [](std::string& value) {
            for (const char* fault : {"EMFILE", "ENFILE", "ENOBUFS", "ECONNABORTED"})
              if (value == fault) return std::string();
            if (value == "EAGAIN" || value == "EWOULDBLOCK")
              return value + " is not a fault: it ends every drain; faults are EMFILE, ENFILE, ENOBUFS, ECONNABORTED";
            return "\"" + value + "\" is not one of EMFILE, ENFILE, ENOBUFS, ECONNABORTED";
          },
          "", "errno"))
      ->capture_default_str();
  cmd->add_option("--seeds", args->seeds, "Seeds A..B for the random strategy")->capture_default_str();
  cmd->add_option("--shard", args->shard,
                  "I/N: this run's share of the search (DFS: of the first execution's alternatives, dealt\n"
                  "round robin; random: every Nth seed from the Ith); loopsim merge combines the shards' --json")
      ->capture_default_str();
  cmd->add_option("--time-limit", args->time_limit, "Stop after this much wall time (0s: no limit)")->capture_default_str();
  cmd->add_option("--max-executions", args->max_executions, "Stop after this many runs")
      ->check(whole_number(1))
      ->capture_default_str();
  cmd->add_option("--out", args->out, "Where counterexamples go (none written through a link, nor over the scenario)")->capture_default_str();
  cmd->add_option("--set", args->set, "Override a key (repeatable)")->take_all();
  cmd->add_flag("--no-prune", args->no_prune, "Merge no states: explore every execution as a tree");
  cmd->add_option("--snapshot-mib", args->snapshot_mib,
                  "DFS: at most this many MiB of snapshots at once (a branch resumes from the snapshot of\n"
                  "its decision, or from the nearest one before it and replays the rest); 0 replays every\n"
                  "branch from time 0")
      ->check(CLI::Range(std::uint64_t(0), std::uint64_t(1) << 20))
      ->capture_default_str();
  cmd->add_flag("--no-symmetry", args->no_symmetry,
                "Try every order of interchangeable clients' same-instant happenings, not one");
  cmd->add_flag("!--no-shrink", args->shrink, "Keep the scenario's client groups, requests, faults and windows as they are");
  cmd->add_option("--shrink-time-limit", args->shrink_time_limit,
                  "Wall time for shrinking and minimizing a counterexample, apart from --time-limit (0s: no\n"
                  "limit); when it runs out, the smallest failing case found so far is written")
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "Print one JSON document");
  cmd->add_flag("--audit", args->audit,
                "Check the state digest: write every state down too, and each time a digest is met\n"
                "again compare the two states value by value; a difference stops with exit 4 and\n"
                "names the field (slow: for CI at small bounds)");
  cmd->add_option("--arm", args->arm, "Search this arm of the scenario (\"base\" for the base)")->check(non_empty)
      ->capture_default_str();
  cmd->add_option("--judge", args->judge,
                  "P[,P...]: judge only these of the scenario's expectations (by property). Judging\n"
                  "only properties a state decides (answered, no_stranded_backlog without max,\n"
                  "liveness, latency without after, max_gap, batch_bound) lets the search merge\n"
                  "states where"
                  " the others would make it a tree")
      ->check(non_empty);
  cmd->add_option("--maximize", args->maximize,
                  "PROPERTY[:OF]: the worst case. Measure that expectation on every execution,\n"
                  "stop at none, and write the one that measured the most (NAME-ARM-worst.toml)")
      ->check(non_empty);
  cmd->footer(
      "Exit status:\n"
      "  0  none_found: every execution within --faults and the scenario's horizon was explored,\n"
      "     for every judged property, and none failed. What an execution may do: the order of\n"
      "     same-instant happenings, where each windowed time (\"A..B\") lands, between any two\n"
      "     kernel calls of the server included, where budgeted faults land, timer slack\n"
      "  1  violated: a counterexample was found, shrunk and written (replay it with loopsim run);\n"
      "     a livelock (virtual time standing still for a million kernel calls) is one, and so is\n"
      "     a target killed by its own fault (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP,\n"
      "     SIGSYS) after a decision: target_died, a crash under that schedule\n"
      "  2  bad input: the scenario, an option or --set; or a target's error, as loopsim run\n"
      "     reports it and with its message: it does not start or listen on its port, a call\n"
      "     the seam refuses (fork, dup, a futex operation), a spin, another signal, a crash\n"
      "     before the first decision (one that no schedule avoids)\n"
      "  3  bound_reached: --depth, --max-executions, the state limit, --time-limit, a run's\n"
      "     step limit or its trace limit cut the search short (\"bounds\" names each); this\n"
      "     proves nothing. A random search (--strategy random) samples one schedule per seed,\n"
      "     so it ends here unless it finds something. By deviations (the default), it still\n"
      "     says which level it finished: deviations_completed = 2 means no schedule with two\n"
      "     or fewer non-natural choices fails.\n"
      "  4  --audit: two states with one digest differ (a loopsim bug; the field is named); or,\n"
      "     audit or not, a replay or restore did not stand where the execution it repeats stood\n"
      "     (the decision is named)\n"
      "States are merged only where every judged property is decided by the state: answered,\n"
      "liveness, no_stranded_backlog, and latency, max_gap, batch_bound, no_spin, post_latency\n"
      "and shutdown_clean, whose monitors join the state (a bound in requests or batches is\n"
      "measured from the run itself, and has none). Otherwise (capacity, such a bound) the\n"
      "search is a tree, and says so (\"merging\").\n"
      "With --maximize, 0 means the worst case is over every execution; 3 that a bound cut some.");
  cmd->callback([args, &status] {
    try {
      status = explore_file(*args);
    } catch (const sim::ScenarioError& e) {
      status = report_error(e);
    }
  });
}

}  // namespace loopsim::cli
