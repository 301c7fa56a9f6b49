// loopsim generate: draw scenarios, judge each with the rules on, shrink a failure to a file.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <toml++/toml.h>

#include "checker/story.hpp"
#include "cli/commands.hpp"
#include "explore/generate.hpp"
#include "explore/shaped.hpp"

namespace loopsim::cli {

namespace {

struct GenerateArgs {
  std::uint64_t runs = 100;
  std::uint64_t seed = 1;
  std::string time_limit = "60s";
  std::string out = "out/generate";
  std::vector<std::string> set;
  std::uint64_t max_steps = explore::StepBudget{}.total;
  std::uint64_t max_steps_at_instant = explore::StepBudget{}.at_instant;
  std::uint64_t max_shrinks = explore::GenerateOptions{}.max_shrinks;
  std::string shard = "0/1";
  std::string shape;  // --shape FILE
  bool json = false;
};

// The command that draws the same scenarios again.
std::string command_of(const GenerateArgs& args) {
  std::string command = "loopsim generate --seed " + std::to_string(args.seed) + " --runs " +
                        std::to_string(args.runs);
  if (args.shard != "0/1") command += " --shard " + args.shard;
  if (!args.shape.empty()) command += " --shape " + args.shape;
  for (const auto& s : args.set) command += " --set " + s;
  return command;
}

struct Written {
  std::string scenario, original, trace;
  std::vector<std::string> story;  // the shrunk scenario's failing run, in words
};

Written write_files(const GenerateArgs& args, const explore::GenerateResult& result) {
  std::string stem = args.out + "/" + explore::generated_name(args.seed, result.failing_run);
  Written w{stem + ".toml", stem + "-original.toml", "", {}};
  const explore::Judged& j = result.judged;
  const std::vector<std::string> inputs{args.shape};
  auto write_scenario = [&] {
    write_output_file("--out", w.scenario, [&](std::ostream& out) {
      out << "# " << command_of(args) << " found this at run " << result.failing_run << ", shrunk from "
          << result.clients_before << " to " << result.clients_after << " clients\n# "
          << sim::escape_controls(j.detail) << "\n# replay: loopsim run " << w.scenario << "\n";
      checker::write_story(out, w.story, "#\n# ", "#   ");
      out << result.shrunk;
    }, inputs);
  };
  write_scenario();
  // Told from the file as written, run once more (a livelock's run does not reach its end).
  if (!j.livelock_trace) {
    w.story = retell(w.scenario).story;
    if (!w.story.empty()) write_scenario();
  }
  write_output_file("--out", w.original, [&](std::ostream& out) {
    out << "# " << command_of(args) << ": run " << result.failing_run << " as drawn, before shrinking\n"
        << result.original;
  }, inputs);
  if (j.livelock_trace) {
    w.trace = stem + "-livelock.jsonl";
    write_output_file("--out", w.trace, [&](std::ostream& out) { sim::write_jsonl(*j.livelock_trace, out); }, inputs);
  }
  return w;
}

nlohmann::ordered_json document(const GenerateArgs& args, const explore::GenerateResult& result,
                                const Written& written, std::int64_t wall) {
  nlohmann::ordered_json doc;
  doc["seed"] = args.seed;
  doc["verdict"] = explore::verdict_name(result.verdict);
  doc["runs"] = result.runs;
  doc["runs_requested"] = args.runs;
  doc["wall_ns"] = wall;
  auto [shard, shards] = parse_shard(args.shard);
  doc["command"] = "generate";
  doc["shard"] = {{"index", shard}, {"count", shards}};
  // What every shard of one search must share, so that `loopsim merge` can refuse a mix.
  doc["search"] = {{"seed", args.seed}, {"runs", args.runs}, {"set", args.set}, {"max_steps", args.max_steps},
                   {"max_steps_at_instant", args.max_steps_at_instant}, {"max_shrinks", args.max_shrinks}};
  // What the runs checked: each property judged in how many runs, left out in how many, and why.
  nlohmann::ordered_json judged = nlohmann::ordered_json::object();
  for (const auto& [property, c] : result.coverage) {
    nlohmann::ordered_json why = nlohmann::ordered_json::object();
    for (const auto& [reason, n] : c.why) why[reason] = n;
    judged[property] = {{"judged", c.judged}, {"left_out", c.left_out}, {"why", std::move(why)}};
  }
  doc["judged"] = std::move(judged);
  doc["cut_runs"] = result.cut_runs;
  if (!result.first_cut.empty()) doc["first_cut"] = result.first_cut;
  if (result.verdict != explore::GenerateResult::Verdict::found) return doc;
  const explore::Judged& j = result.judged;
  doc["failing_run"] = result.failing_run;
  doc["livelock"] = j.verdict == explore::Judged::Verdict::livelock;
  doc["violated"] = j.violated;
  doc["detail"] = j.detail;
  doc["clients_before"] = result.clients_before;
  doc["clients_after"] = result.clients_after;
  doc["shrink_steps"] = result.shrink_steps;
  doc["shrink_tries"] = result.shrink_tries;
  doc["shrink_cut"] = result.shrink_cut;
  doc["scenario"] = written.scenario;
  doc["original"] = written.original;
  if (!written.trace.empty()) doc["trace"] = written.trace;
  doc["replay"] = "loopsim run " + written.scenario;
  if (!written.story.empty()) doc["story"] = written.story;
  return doc;
}

// "answered: judged in 1,412 runs, left out in 588 (412: a shutdown closes ..., 176: ...)"
void print_coverage(const explore::GenerateResult& result) {
  if (result.coverage.empty()) return;
  std::cout << "what the runs judged:\n";
  for (const auto& [property, c] : result.coverage) {
    std::cout << "  " << property << ": judged in " << c.judged << " of " << result.runs << " runs";
    if (c.left_out > 0) {
      std::cout << ", left out in " << c.left_out << " (";
      bool first = true;
      for (const auto& [reason, n] : c.why) {
        std::cout << (first ? "" : "; ") << n << ": " << reason;
        first = false;
      }
      std::cout << ")";
    }
    std::cout << '\n';
  }
}

void print_text(const GenerateArgs& args, const explore::GenerateResult& result, const Written& written) {
  using V = explore::GenerateResult::Verdict;
  std::cout << "seed " << args.seed << '\n';
  print_coverage(result);
  if (args.shard != "0/1") std::cout << "shard " << args.shard << ": the runs whose number is " << args.shard << " (I modulo N)\n";
  if (result.verdict == V::none_found) {
    std::cout << "generate: " << result.runs << " scenarios, every one held (a sample, not a proof)\n";
    return;
  }
  if (result.verdict == V::limit) {
    if (result.out_of_time) {
      std::cout << "generate: the time limit cut the runs short after " << result.runs << " of " << args.runs
                << " scenarios; none failed, which proves nothing\n";
    }
    if (result.cut_runs > 0) {
      std::cout << "generate: " << result.cut_runs << " of " << result.runs
                << " runs stopped at their step budget before their horizon, nothing decided against them"
                << " (first: " << result.first_cut << "); raise --max-steps to judge them whole\n";
    }
    return;
  }
  const explore::Judged& j = result.judged;
  bool livelock = j.verdict == explore::Judged::Verdict::livelock;
  std::cout << "generate: run " << result.failing_run << " of " << args.runs << " failed: ";
  for (std::size_t i = 0; i < j.violated.size(); ++i) std::cout << (i ? ", " : "") << j.violated[i];
  std::cout << "\n  " << j.detail << "\n  shrunk from " << result.clients_before << " to "
            << result.clients_after << " clients in " << result.shrink_steps << " steps ("
            << result.shrink_tries << " candidates tried" << (result.shrink_cut ? ", cut short" : "")
            << ")\n  scenario: " << written.scenario << "\n  as drawn: " << written.original << '\n';
  if (livelock) {
    std::cout << "  a livelock: the run made no progress within its step budget; the trace so far is "
              << written.trace << "\n  (loopsim run judges the same scenario to its horizon, which a run "
              << "that never moves the clock does not reach)\n";
  }
  checker::write_story(std::cout, written.story, "", "  ");
  std::cout << "reproduce: " << command_of(args) << "\nreplay: loopsim run " << written.scenario << '\n';
}

int generate(const GenerateArgs& args) {
  explore::GenerateOptions options;
  options.runs = args.runs;
  options.seed = args.seed;
  options.overrides = parse_overrides(args.set);
  // A relative program in --set target.exec is relative to here; the scenario files generate
  // writes live in --out, and a path in them is read from their folder: make it absolute.
  for (sim::Override& o : options.overrides) {
    if (o.key != "target.exec") continue;
    try {
      toml::table t = toml::parse("exec = " + o.value);
      toml::array* exec = t["exec"].as_array();
      if (exec == nullptr || exec->empty() || !exec->front().is_string()) continue;
      std::string program = exec->front().value_or(std::string());
      if (program.find('/') == std::string::npos || std::filesystem::path(program).is_absolute()) continue;
      exec->replace(exec->begin(), std::filesystem::absolute(program).lexically_normal().string());
      std::ostringstream text;
      text << *exec;
      o.value = text.str();
    } catch (const toml::parse_error&) {
      // Left as written: the scenario loader reports it at its column.
    }
  }
  // A target's relative arguments in --set target.exec are relative to here too: the target
  // runs here, named absolutely, since the scenarios are read both here and from --out.
  const bool target = std::any_of(options.overrides.begin(), options.overrides.end(),
                                  [](const sim::Override& o) { return o.key == "target.exec"; });
  const bool has_dir = std::any_of(options.overrides.begin(), options.overrides.end(),
                                   [](const sim::Override& o) { return o.key == "target.dir"; });
  if (target && !has_dir) {
    std::error_code error;
    options.overrides.push_back(sim::Override{"target.dir", sim::toml_string(std::filesystem::current_path(error).string())});
  }
  options.budget = explore::StepBudget{args.max_steps_at_instant, args.max_steps};
  options.max_shrinks = args.max_shrinks;
  std::tie(options.shard, options.shards) = parse_shard(args.shard);
  options.time_limit_ns = option_duration("--time-limit", args.time_limit).count();
  options.wall_ns = wall_ns;
  make_output_folder("--out", args.out);  // before the runs: a bad --out costs no search
  bool progress = !args.json && isatty(STDERR_FILENO);
  if (progress) {
    std::int64_t last = 0;
    options.progress = [last](const explore::GenerateProgress& p) mutable {
      std::int64_t now = wall_ns();
      if (now - last < 200'000'000) return;
      last = now;
      if (p.shrinking) std::cerr << "\rgenerate: run " << p.runs << " failed; shrinking, " << p.shrinks << " tried   ";
      else std::cerr << "\rgenerate: " << p.runs << " of " << p.runs_max << " scenarios   ";
      std::cerr << std::flush;
    };
  }
  std::int64_t started = wall_ns();
  explore::GenerateResult result;
  if (args.shape.empty()) {
    result = explore::generate(options);
  } else {
    if (!options.overrides.empty())
      throw sim::ScenarioError("--set:1:1: --set and --shape do not go together", "write the change into the shape's file");
    // The one reader of scenario files: a regular file (no FIFO, no device) of at most 16 MiB,
    // read whole and closed: a descriptor left open would be the target program's too, and number
    // its descriptors otherwise than `loopsim run` of the same file does.
    result = explore::generate_shaped(sim::read_scenario_file(args.shape), args.shape, options);
  }
  std::int64_t wall = wall_ns() - started;
  if (progress) std::cerr << '\n';
  Written written;
  if (result.verdict == explore::GenerateResult::Verdict::found) written = write_files(args, result);
  if (args.json) {
    std::cout << document(args, result, written, wall).dump(2) << '\n';
  } else {
    print_text(args, result, written);
    std::cerr << "wall time: " << double(wall) / 1e9 << " s\n";
  }
  switch (result.verdict) {
    case explore::GenerateResult::Verdict::found: return exit_violated;
    case explore::GenerateResult::Verdict::limit: return exit_bound_reached;
    case explore::GenerateResult::Verdict::none_found: break;
  }
  return exit_held;
}

}  // namespace

void add_generate(CLI::App& app, int& status) {
  auto args = std::make_shared<GenerateArgs>();
  auto* cmd = app.add_subcommand("generate", "Draw scenarios, judge each with the rules on, shrink a failure");
  cmd->add_option("--runs", args->runs, "Scenarios to draw and judge")->check(whole_number(1))->capture_default_str();
  cmd->add_option("--seed", args->seed, "The same seed draws the same scenarios")
      ->check(whole_number(0))
      ->capture_default_str();
  cmd->add_option("--time-limit", args->time_limit, "Stop after this much wall time (0s: no limit), read inside each simulated run\n"
                  "(every 1,024 steps) and between shrink candidates too")
      ->capture_default_str();
  cmd->add_option("--out", args->out, "Where the shrunk scenario goes (none written through a link, nor over --shape)")->capture_default_str();
  cmd->add_option("--set", args->set, "Override a key in every scenario drawn (repeatable)")->take_all();
  cmd->add_option("--max-steps", args->max_steps, "Livelock guard: scheduler steps one run may take")
      ->check(whole_number(1))
      ->capture_default_str();
  cmd->add_option("--max-steps-at-instant", args->max_steps_at_instant,
                  "Livelock guard: scheduler steps one run may take at one virtual instant")
      ->capture_default_str();
  cmd->add_option("--max-shrinks", args->max_shrinks, "Shrink candidates tried at most")
      ->check(whole_number(0))
      ->capture_default_str();
  cmd->add_option("--shard", args->shard,
                  "I/N: judge only the runs whose number is I modulo N (every shard draws the same\n"
                  "scenarios); loopsim merge combines the shards' --json")
      ->capture_default_str();
  cmd->add_option("--shape", args->shape,
                  "A scenario file whose workload, faults, actions and expectations shape every run:\n"
                  "only counts, times, rates, which faults and actions happen, and the seed are drawn\n"
                  "(a regular file of at most 16 MiB, as every scenario file)");
  cmd->add_flag("--json", args->json, "Print one JSON document");
  cmd->footer(
      "Each run draws a whole scenario (RapidCheck generators): the poller flavour, the loop's\n"
      "knobs (batch, yield batch, drain chunk, workers, pool, inverted mode, max_connections,\n"
      "max_events, the handle table, back-off), a descriptor limit, client groups (counts,\n"
      "connect times, rates, keep-alive, requests, holders that stay or leave), faults (accept\n"
      "errors by nth or window, rlimit, reset), posters and a shutdown. The rules stay on: no\n"
      "sabotage knob is drawn (--set can flip one). Each scenario is judged by answered,\n"
      "no_stranded_backlog, no_spin, shutdown_clean (with a shutdown), batch_bound (max = its\n"
      "accept_batch) and post_latency (every post runs), each left out where the configuration\n"
      "allows it to fail; the scenario file says why in a comment. A run that takes more than\n"
      "--max-steps scheduler steps, or --max-steps-at-instant at one virtual instant, is a\n"
      "livelock. With --set target.exec=[...] and --set target.port=N, a target program is\n"
      "drawn workloads only (at most 100 clients, no faults) and judged by answered,\n"
      "no_stranded_backlog and no_spin (docs/targets.md). The first failure is shrunk\n"
      "(RapidCheck's shrinks) while it fails the same way,\n"
      "written to --out with its [[expect]] entries (and the scenario as drawn, and for a livelock\n"
      "the trace so far), and `loopsim run FILE` replays it.\n\n"
      "With --shape FILE the runs are the file varied, not the format drawn: its client groups\n"
      "keep their requests (paths or bytes), framing, keep-alive, bodies and half-closes, and\n"
      "get 1 to twice their count (100 clients in all at most) and maybe a rate, the whole\n"
      "workload moved up to 300 ms later; each of its [[faults]] and [[actions]] (accept errors, the\n"
      "descriptor limit, resets, signals) happens or not, moved with the workload and then\n"
      "within 150 ms either side; its\n"
      "[[expect]] entries judge every run, and its arms are left out. A failure is shrunk by\n"
      "halving groups and leaving out groups, faults and actions while it fails the same way.\n\n"
      "Exit status:\n"
      "  0  every scenario drawn held: a sample of the format, not a proof\n"
      "  1  a failure (or a livelock) was found, shrunk and written\n"
      "  2  bad input: an option or --set; or a target's error, which `loopsim run` of that\n"
      "     file reports alike (it does not start or listen on its port, a call the seam\n"
      "     refuses, a spin, a signal, a crash), with the same message\n"
      "  3  --time-limit cut the runs short, or a run stopped at --max-steps, with nothing found;\n"
      "     this proves nothing");
  cmd->callback([args, &status] {
    try {
      status = generate(*args);
    } catch (const sim::ScenarioError& e) {
      status = report_error(e);
    }
  });
}

}  // namespace loopsim::cli
