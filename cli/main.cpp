// loopsim: the command line. It wires the layers together and holds no logic of its own.
#include <CLI/CLI.hpp>
#include <chrono>
#include <fstream>
#include <iostream>

#include "checker/suite.hpp"
#include "realloop/live/serve.hpp"
#include "reports/summary.hpp"
#include "sim/scenario.hpp"
#include "sim/trace.hpp"

namespace {

using namespace loopsim;

constexpr int exit_held = 0;
constexpr int exit_violated = 1;
constexpr int exit_bad_input = 2;

std::int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::vector<sim::Override> parse_overrides(const std::vector<std::string>& assignments) {
  std::vector<sim::Override> overrides;
  for (const auto& a : assignments) overrides.push_back(sim::parse_override(a));
  return overrides;
}

int report_error(const sim::ScenarioError& e) {
  std::cerr << "error: " << e.what() << '\n';
  if (!e.hint.empty()) std::cerr << "  hint: " << e.hint << '\n';
  return exit_bad_input;
}

struct RunArgs {
  std::string file;
  std::optional<std::uint64_t> seed;
  std::vector<std::string> set;
  std::string arm;
  std::string trace;
  bool json = false;
};

int write_trace(const std::string& path, const sim::Trace& trace) {
  std::ofstream out(path, std::ios::binary);
  sim::write_jsonl(trace, out);
  out.close();
  if (!out) {
    std::cerr << "error: cannot write the trace to " << path << '\n';
    return exit_bad_input;
  }
  return exit_held;
}

int run_command(const RunArgs& args) {
  try {
    checker::SuiteOptions options;
    options.overrides = parse_overrides(args.set);
    options.seed = args.seed;
    if (!args.arm.empty()) options.only_arm = args.arm;
    options.wall_ns = wall_ns;
    checker::SuiteResult result = checker::run_suite(args.file, options);
    const auto& report = result.report;
    if (!args.trace.empty() && write_trace(args.trace, result.traces.front()) != exit_held) {
      return exit_bad_input;
    }
    if (args.json) {
      std::cout << reports::to_json(report).dump(2) << '\n';
    } else {
      std::cout << "seed " << report.seed << '\n' << report.scenario << " (" << report.file << ")\n\n";
      reports::print_table(report, std::cout);
    }
    return report.held() ? exit_held : exit_violated;
  } catch (const sim::ScenarioError& e) {
    return report_error(e);
  }
}

void add_run(CLI::App& app, RunArgs& args, int& status) {
  auto* run = app.add_subcommand("run", "Run one scenario, its base and each of its arms, and judge them");
  run->add_option("file", args.file, "Scenario file (TOML)")->required()->check(CLI::ExistingFile);
  run->add_option("--seed", args.seed, "Seed for every choice the run makes (default: the scenario's)");
  run->add_option("--set", args.set, "Override a key, e.g. --set loop.accept_batch=0 (repeatable)")
      ->take_all();
  run->add_option("--arm", args.arm, "Run only this arm (\"base\" for the base)");
  run->add_option("--trace", args.trace, "Write the first arm's trace here (JSON Lines)");
  run->add_flag("--json", args.json, "Print one JSON document instead of the table");
  run->footer(
      "Exit status: 0 every arm held (base properties held, every sabotage caught), 1 something\n"
      "was violated (the command that reproduces it is printed), 2 bad input.");
  run->callback([&args, &status] { status = run_command(args); });
}

void add_live(CLI::App& app, std::string& listen, live::LiveOptions& options, int& status) {
  auto* cmd = app.add_subcommand("live", "Serve the app on real sockets with the same loop (epoll)");
  cmd->add_option("--listen", listen, "Address and port; port 0 picks a free one")
      ->default_val("127.0.0.1:8080");
  cmd->add_option("--workers", options.workers, "Worker loops")->default_val(1);
  cmd->footer("Stops cleanly on SIGINT or SIGTERM. Prints \"listening on ADDR:PORT\" first.");
  cmd->callback([&listen, &options, &status] {
    auto colon = listen.rfind(':');
    if (colon == std::string::npos) throw CLI::ValidationError("--listen", "expected ADDR:PORT");
    options.address = listen.substr(0, colon);
    int port = std::stoi(listen.substr(colon + 1));
    if (port < 0 || port > 65535) throw CLI::ValidationError("--listen", "port out of range");
    options.port = std::uint16_t(port);
    status = live::serve_live(options);
  });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"loopsim: deterministic simulation and model checking of event loops"};
  app.require_subcommand(1);
  int status = exit_held;
  RunArgs run_args;
  std::string listen;
  live::LiveOptions live_options;
  add_run(app, run_args, status);
  add_live(app, listen, live_options, status);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : exit_bad_input;
  } catch (const std::invalid_argument& e) {
    std::cerr << "error: " << e.what() << '\n';
    return exit_bad_input;
  }
  return status;
}
