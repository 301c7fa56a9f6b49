// loopsim run FILE: one scenario, its base and each arm, judged; the table or --json.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "checker/suite.hpp"
#include "cli/commands.hpp"
#include "reports/output.hpp"
#include "reports/summary.hpp"
#include "reports/timeline.hpp"
#include "target/target.hpp"
#include "trace/replay.hpp"
#include "trace/trace.hpp"

namespace loopsim::cli {

namespace {

struct RunArgs {
  std::string file;
  std::optional<std::uint64_t> seed;
  std::vector<std::string> set;
  std::string arm;
  std::string trace;
  std::string timeline;      // --timeline F.svg|.png|.dot
  std::string chrome_trace;  // --chrome-trace F.json
  std::string replay;
  std::string trace_level = "full";
  bool json = false;
};

// --replay TRACE: the recorded arm, seed and choices stand in for --arm and --seed. The trace
// must come from this scenario: another's choices would fit by chance, or not at all.
void apply_replay(const std::string& path, const std::string& file, checker::SuiteOptions& options) {
  sim::Recording recording = sim::read_recording(path);
  const std::string name = sim::load_scenario(file, options.overrides).name;
  if (recording.scenario != name) {
    throw sim::ScenarioError("--replay:1:1: " + path + " was recorded from the scenario \"" + recording.scenario +
                                 "\", not \"" + name + "\"",
                             "replay a trace of this scenario, or run the scenario it came from");
  }
  options.only_arm = recording.arm;
  options.seed = recording.seed;
  options.replay = std::move(recording.choices);
}

// What the run reads: no output may be one of them.
std::vector<std::string> inputs_of(const RunArgs& args) { return {args.file, args.replay}; }

// --trace, --timeline and --chrome-trace: checked before the run, so that a typo costs no run.
void check_outputs(const RunArgs& args) {
  using namespace reports;
  // A timeline and a Chrome trace draw the passes and the requests: the whole trace.
  if (args.trace_level == "verdicts") {
    for (const auto& [option, path] : {std::pair{"--timeline", args.timeline}, std::pair{"--chrome-trace", args.chrome_trace}}) {
      if (!path.empty()) {
        throw sim::ScenarioError(std::string(option) + ":1:1: " + option + " draws the whole trace, and --trace-level verdicts keeps only what the properties read",
                                 "drop --trace-level verdicts, or the picture");
      }
    }
  }
  for (const auto& [option, path, kinds] :
       {std::tuple{"--timeline", args.timeline, picture_kinds},
        std::tuple{"--chrome-trace", args.chrome_trace, std::vector{OutputKind::chrome_json}}}) {
    if (path.empty()) continue;
    if (!output_kind(path, kinds)) {
      throw sim::ScenarioError(std::string(option) + ":1:1: " + path + ": unknown output format", output_hint(kinds));
    }
    check_output(option, path, inputs_of(args));
  }
  if (!args.trace.empty()) check_output("--trace", args.trace, inputs_of(args));
}

void write_rendered(const std::string& option, const std::string& path, const sim::Trace& trace,
                    const std::vector<reports::OutputKind>& kinds, const std::vector<std::string>& inputs) {
  if (path.empty()) return;
  refuse_unsafe_output(option, path, inputs);
  try {
    reports::write_output(trace, *reports::output_kind(path, kinds), path);
  } catch (const reports::RenderError& e) {
    throw sim::ScenarioError(option + ":1:1: " + e.what(), "check that its folder exists and is writable");
  }
}

// The first arm's trace and pictures, after the verdict is out.
void write_outputs(const RunArgs& args, const sim::Trace& trace) {
  using namespace reports;
  if (!args.trace.empty()) {
    write_output_file("--trace", args.trace, [&](std::ostream& out) { sim::write_jsonl(trace, out); }, inputs_of(args));
  }
  write_rendered("--timeline", args.timeline, trace, picture_kinds, inputs_of(args));
  write_rendered("--chrome-trace", args.chrome_trace, trace, {OutputKind::chrome_json}, inputs_of(args));
}

int run(const RunArgs& args) {
  try {
    check_outputs(args);
    checker::SuiteOptions options;
    options.overrides = parse_overrides(args.set);
    options.seed = args.seed;
    if (!args.arm.empty()) options.only_arm = args.arm;
    options.wall_ns = wall_ns;
    options.verdicts_only = args.trace_level == "verdicts";
    if (!args.replay.empty()) apply_replay(args.replay, args.file, options);
    if (!args.trace.empty()) {  // a target's own output goes beside the trace
      std::filesystem::path trace(args.trace);
      options.target_output = (trace.parent_path() / trace.stem()).string();
    }
    checker::SuiteResult result = checker::run_suite(args.file, options);
    const auto& report = result.report;
    for (const auto& arm : report.arms) {
      if (!arm.replay_diverged) continue;
      if (!args.replay.empty()) {
        return report_error(sim::ScenarioError(
            args.replay + ":1:1: the choices recorded here do not fit " + args.file + ": " + arm.divergence,
            "the scenario or loopsim changed since the recording; record the run again"));
      }
      return report_error(sim::ScenarioError(
          args.file + ":1:1: the pinned choices do not fit this run: " + arm.divergence,
          "the scenario or loopsim changed since the counterexample was written; explore again to pin a new one"));
    }
    if (args.json) {
      std::cout << reports::to_json(report).dump(2) << '\n';
    } else {
      std::cout << "seed " << report.seed << '\n'
                << report.scenario << " (" << report.file << ")\n\n";
      reports::print_table(report, std::cout);
    }
    std::cout << std::flush;
    if (report.arms.front().error.empty()) {
      write_outputs(args, result.traces.front());  // a failure here keeps the verdict printed above
    } else if (!args.trace.empty() || !args.timeline.empty() || !args.chrome_trace.empty()) {
      std::cerr << "note: arm " << report.arms.front().name << " could not run: no trace or picture is written\n";
    }
    // An arm that could not run: the others' verdicts are above, and the run is an error.
    if (report.errored()) return exit_bad_input;
    if (report.limited()) return exit_bound_reached;
    return report.held() ? exit_held : exit_violated;
  } catch (const sim::ScenarioError& e) {
    return report_error(e);
  }
}

}  // namespace

void add_run(CLI::App& app, int& status) {
  auto args = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand("run", "Run one scenario, its base and each of its arms, and judge them");
  cmd->add_option("file", args->file, "Scenario file (TOML)")->required()->check(non_empty);
  cmd->add_option("--seed", args->seed, "Seed for every choice the run makes (default: the scenario's)")
      ->check(whole_number(0));
  cmd->add_option("--set", args->set, "Override a key, e.g. --set loop.accept_batch=0 (repeatable)")
      ->take_all();
  cmd->add_option("--arm", args->arm, "Run only this arm (\"base\" for the base)")->check(non_empty);
  cmd->add_option("--trace", args->trace, "Write the first arm's trace here (JSON Lines); never an input of the run, a link, a FIFO or a device")->check(non_empty);
  cmd->add_option("--timeline", args->timeline, "Render the first arm's pass timeline: F.svg, F.png or F.dot, as --trace is written")
      ->check(non_empty);
  cmd->add_option("--chrome-trace", args->chrome_trace, "Write the first arm's Chrome trace: F.json, as --trace is written")->check(non_empty);
  cmd->add_option("--replay", args->replay,
                  "Repeat a recorded run from its trace's choices (its arm and seed too); a trace of at most 256 MiB")
      ->check(non_empty);
  cmd->add_option("--trace-level", args->trace_level,
                  "full: every event; verdicts: only what the expected properties read (answered, latency, max_gap "
                  "and no_stranded_backlog read the clients' events and the run's end; the loop rules' properties "
                  "need the whole trace), for runs whose full trace would not fit")
      ->check(CLI::IsMember({"full", "verdicts"}))
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "Print one JSON document instead of the table");
  cmd->footer(
      "Exit status: 0 every arm held (base properties held, every sabotage caught), 1 something\n"
      "was violated (the command that reproduces it is printed; under pinned choices, a target\n"
      "killed by its own fault, SIGSEGV and the like, is the violated target_died), 2 bad input\n"
      "(a target's error, a crash without pinned choices included; and a\n"
      "counterexample whose pinned choices no longer fit the run: the first that does not is named,\n"
      "and a server that cannot start), 3 the run stopped at a limit (its trace passed 10,000,000\n"
      "events) with no verdict.");
  cmd->callback([args, &status] { status = run(*args); });
}

}  // namespace loopsim::cli
