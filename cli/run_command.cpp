// loopsim run FILE: one scenario, its base and each arm, judged; the table or --json.
#include <fstream>
#include <iostream>
#include <optional>

#include "checker/suite.hpp"
#include "cli/commands.hpp"
#include "reports/summary.hpp"
#include "sim/trace.hpp"

namespace loopsim::cli {

namespace {

struct RunArgs {
  std::string file;
  std::optional<std::uint64_t> seed;
  std::vector<std::string> set;
  std::string arm;
  std::string trace;
  bool json = false;
};

bool write_trace(const std::string& path, const sim::Trace& trace) {
  std::ofstream out(path, std::ios::binary);
  sim::write_jsonl(trace, out);
  out.close();
  if (!out) std::cerr << "error: cannot write the trace to " << path << '\n';
  return bool(out);
}

int run(const RunArgs& args) {
  try {
    checker::SuiteOptions options;
    options.overrides = parse_overrides(args.set);
    options.seed = args.seed;
    if (!args.arm.empty()) options.only_arm = args.arm;
    options.wall_ns = wall_ns;
    checker::SuiteResult result = checker::run_suite(args.file, options);
    const auto& report = result.report;
    if (!args.trace.empty() && !write_trace(args.trace, result.traces.front())) {
      return exit_bad_input;
    }
    if (args.json) {
      std::cout << reports::to_json(report).dump(2) << '\n';
    } else {
      std::cout << "seed " << report.seed << '\n'
                << report.scenario << " (" << report.file << ")\n\n";
      reports::print_table(report, std::cout);
    }
    return report.held() ? exit_held : exit_violated;
  } catch (const sim::ScenarioError& e) {
    return report_error(e);
  }
}

}  // namespace

void add_run(CLI::App& app, int& status) {
  auto args = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand("run", "Run one scenario, its base and each of its arms, and judge them");
  cmd->add_option("file", args->file, "Scenario file (TOML)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--seed", args->seed, "Seed for every choice the run makes (default: the scenario's)");
  cmd->add_option("--set", args->set, "Override a key, e.g. --set loop.accept_batch=0 (repeatable)")
      ->take_all();
  cmd->add_option("--arm", args->arm, "Run only this arm (\"base\" for the base)");
  cmd->add_option("--trace", args->trace, "Write the first arm's trace here (JSON Lines)");
  cmd->add_flag("--json", args->json, "Print one JSON document instead of the table");
  cmd->footer(
      "Exit status: 0 every arm held (base properties held, every sabotage caught), 1 something\n"
      "was violated (the command that reproduces it is printed), 2 bad input.");
  cmd->callback([args, &status] { status = run(*args); });
}

}  // namespace loopsim::cli
