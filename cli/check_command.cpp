// loopsim check PATH...: every scenario (*.toml) under the paths, each with its arms; a table
// (or --json), and JUnit XML for CI (--junit F). Scenarios run --jobs at once, each in a child
// process of its own, and the report keeps the sorted order.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>

#include "checker/isolated.hpp"
#include "checker/suite.hpp"
#include "cli/commands.hpp"
#include "reports/check_report.hpp"
#include "reports/junit.hpp"

namespace loopsim::cli {

namespace {

namespace fs = std::filesystem;
using reports::ScenarioOutcome;

struct CheckArgs {
  std::vector<std::string> paths;
  std::vector<std::string> set;
  int jobs = 1;
  std::string junit;
  bool json = false;
};

// Every *.toml under the paths (directories recursively), sorted, each once. A path that does
// not exist becomes an outcome of its own: an error in the report.
std::vector<std::string> scenario_files(const std::vector<std::string>& paths,
                                        std::vector<ScenarioOutcome>& missing) {
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    std::error_code error;
    if (fs::is_regular_file(path, error)) {
      files.push_back(path);
    } else if (fs::is_directory(path, error)) {
      auto options = fs::directory_options::skip_permission_denied;
      for (fs::recursive_directory_iterator it(path, options, error), end; !error && it != end;
           it.increment(error)) {
        if (it->is_regular_file(error) && it->path().extension() == ".toml") files.push_back(it->path().string());
      }
    } else {
      bool exists = fs::exists(path, error);
      missing.push_back({path, std::nullopt,
                         path + (exists ? ":1:1: not a regular file or a directory" : ":1:1: no such file or directory"),
                         exists ? "give scenario files, or folders of them" : "check the path"});
    }
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

ScenarioOutcome check_in_process(const std::string& file, const checker::SuiteOptions& options) {
  try {
    return {file, checker::run_suite(file, options).report, "", ""};
  } catch (const sim::ScenarioError& e) {
    return {file, std::nullopt, e.what(), e.hint};
  } catch (const std::exception& e) {
    return {file, std::nullopt, file + ":1:1: " + e.what(), ""};
  }
}

// Each scenario in a child process of its own: one that brings loopsim down (an assertion, a
// segfault, memory exhausted) is an error in its row, and the rest still run.
ScenarioOutcome outcome_of(const std::string& file, std::variant<std::string, checker::Crashed> result) {
  if (const auto* crash = std::get_if<checker::Crashed>(&result)) {
    return {file, std::nullopt, file + ":1:1: loopsim " + crash->how + " while running this scenario",
            "a loopsim bug: please report it with this scenario; the other scenarios still ran"};
  }
  try {
    return reports::decode_outcome(std::get<std::string>(result));
  } catch (const std::invalid_argument& e) {
    return {file, std::nullopt, file + ":1:1: " + e.what(), "a loopsim bug: please report it with this scenario"};
  }
}

// "\r[3/7] accept-burst": on a terminal only, so logs and pipes stay clean.
class Progress {
 public:
  explicit Progress(std::size_t total) : total_(total), shown_(isatty(STDERR_FILENO) == 1) {}
  void finished(const std::string& file) {
    if (!shown_) return;
    std::lock_guard lock(mutex_);
    std::cerr << "\r\033[K[" << ++done_ << "/" << total_ << "] " << fs::path(file).stem().string() << " ..."
              << std::flush;
  }
  ~Progress() {
    if (shown_ && done_ > 0) std::cerr << "\r\033[K" << std::flush;
  }

 private:
  std::mutex mutex_;
  std::size_t done_ = 0;
  std::size_t total_;
  bool shown_;
};

// Runs every file in a child of its own, `jobs` at once; outcome i is file i's, whatever order
// they finish in.
std::vector<ScenarioOutcome> check_all(const std::vector<std::string>& files,
                                       const checker::SuiteOptions& options, int jobs) {
  std::vector<ScenarioOutcome> outcomes(files.size());
  Progress progress(files.size());
  checker::run_isolated_all(
      files.size(), std::size_t(jobs),
      [&](std::size_t i) { return reports::encode_outcome(check_in_process(files[i], options)); },
      [&](std::size_t i, std::variant<std::string, checker::Crashed> result) {
        outcomes[i] = outcome_of(files[i], std::move(result));
        progress.finished(files[i]);
      });
  return outcomes;
}

int check(const CheckArgs& args) {
  checker::SuiteOptions options;
  std::vector<ScenarioOutcome> outcomes;
  std::vector<std::string> files = scenario_files(args.paths, outcomes);
  try {
    options.overrides = parse_overrides(args.set);
    if (!args.junit.empty()) check_output("--junit", args.junit, files);
  } catch (const sim::ScenarioError& e) {
    return report_error(e);
  }
  options.wall_ns = wall_ns;
  if (files.empty() && outcomes.empty()) {
    return report_error("loopsim check:1:1: no scenario files (*.toml) under the paths given",
                        "give scenario files, or folders that hold some");
  }
  for (ScenarioOutcome& o : check_all(files, options, args.jobs)) outcomes.push_back(std::move(o));
  std::stable_sort(outcomes.begin(), outcomes.end(),
                   [](const ScenarioOutcome& a, const ScenarioOutcome& b) { return a.file < b.file; });
  if (args.json) {
    std::cout << reports::check_json(outcomes).dump(2) << '\n';
  } else {
    reports::print_check_table(outcomes, std::cout);
  }
  std::cout << std::flush;
  try {  // after the table, so that a report that cannot be written keeps the verdicts shown
    if (!args.junit.empty())
      write_output_file("--junit", args.junit, [&](std::ostream& out) { out << reports::junit_xml(outcomes); }, files);
  } catch (const sim::ScenarioError& e) {
    return report_error(e);
  }
  switch (reports::totals(outcomes).verdict()) {
    case reports::CheckVerdict::held: return exit_held;
    case reports::CheckVerdict::violated: return exit_violated;
    case reports::CheckVerdict::limit: return exit_bound_reached;
    case reports::CheckVerdict::error: break;
  }
  return exit_bad_input;
}

}  // namespace

void add_check(CLI::App& app, int& status) {
  auto args = std::make_shared<CheckArgs>();
  auto* cmd = app.add_subcommand("check", "Run every scenario under the paths, each with its arms");
  cmd->add_option("paths", args->paths, "Scenario files or directories (searched for *.toml)")->required();
  cmd->add_option("--jobs,-j", args->jobs, "Scenarios run at once, each in a process of its own")->check(CLI::Range(1, 256));
  cmd->add_option("--junit", args->junit, "Write JUnit XML here (a regular file: never through a link, never a FIFO or a device, never an input)")->check(non_empty);
  cmd->add_option("--set", args->set, "Override a key in every scenario, e.g. --set loop.accept_batch=0")
      ->take_all();
  cmd->add_flag("--json", args->json, "Print one JSON document instead of the table");
  cmd->footer(
      "Exit status: 0 every arm of every scenario held, 1 something was violated, 2 bad input\n"
      "(a scenario that cannot be read counts as an error; the others still run), 3 nothing was\n"
      "violated but a run stopped at a limit (LIMIT in its row).");
  cmd->callback([args, &status] { status = check(*args); });
}

}  // namespace loopsim::cli
