#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>

#include "checker/story.hpp"
#include "checker/suite.hpp"
#include "cli/commands.hpp"
#include "scenario/files.hpp"

namespace loopsim::cli {

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

int report_error(const std::string& where_and_what, const std::string& hint) {
  return report_error(sim::ScenarioError(where_and_what, hint));
}

void refuse_unsafe_output(const std::string& option, const std::string& path, const std::vector<std::string>& inputs) {
  if (std::string input = sim::input_overwritten(path, inputs); !input.empty()) {
    throw sim::ScenarioError(option + ":1:1: cannot write " + path + ": it is the input " + input +
                                 (input == path ? "" : " (the same file)") + ", and loopsim never writes over what it reads",
                             "name another file for " + option);
  }
  if (std::string why = sim::unwritable_output(path); !why.empty()) {
    throw sim::ScenarioError(option + ":1:1: cannot write " + path + why,
                             "name a regular file, or a path where none is yet");
  }
}

void check_output(const std::string& option, const std::string& path, const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path target(path);
  const fs::path folder = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  if (fs::is_directory(target, error)) {
    throw sim::ScenarioError(option + ":1:1: " + path + " is a folder, not a file",
                             "name a file, e.g. " + option + " " + (target / "out").string());
  }
  if (!fs::is_directory(folder, error)) {
    const bool file_in_the_way = fs::exists(folder, error);
    throw sim::ScenarioError(option + ":1:1: cannot write " + path + ": " + folder.string() +
                                 (file_in_the_way ? " is a file, not a folder" : " does not exist"),
                             "create the folder first, or name another path");
  }
  if (::access(folder.c_str(), W_OK) != 0) {
    throw sim::ScenarioError(option + ":1:1: cannot write " + path + ": its folder " + folder.string() +
                                 " is not writable",
                             "name a path in a folder you can write to");
  }
  refuse_unsafe_output(option, path, inputs);
}

void make_output_folder(const std::string& option, const std::string& dir) {
  std::error_code error;
  if (dir.empty()) throw sim::ScenarioError(option + ":1:1: an empty folder name", "e.g. " + option + " out/explore");
  std::filesystem::create_directories(dir, error);
  if (error || !std::filesystem::is_directory(dir)) {
    throw sim::ScenarioError(option + ":1:1: cannot make the folder " + dir +
                                 (error ? ": " + error.message() : std::string(": a file is in the way")),
                             "name a folder loopsim may write");
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    throw sim::ScenarioError(option + ":1:1: the folder " + dir + " is not writable", "name a folder loopsim may write");
  }
}

void write_output_file(const std::string& option, const std::string& path,
                       const std::function<void(std::ostream&)>& write, const std::vector<std::string>& inputs) {
  refuse_unsafe_output(option, path, inputs);
  if (std::string why = sim::write_output_file(path, write); !why.empty()) {
    throw sim::ScenarioError(option + ":1:1: cannot write " + path + why,
                             "check that its folder exists, is writable and has room");
  }
}

std::pair<std::uint64_t, std::uint64_t> parse_pair(const std::string& text, const std::string& sep,
                                                   const std::string& what) {
  auto at = text.find(sep);
  // Whole numbers only, each fitting: no sign (stoull wraps "-1"), no third part ("0/1/2").
  auto number = [](const std::string& part) {
    return !part.empty() && part.size() <= 18 && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (at != std::string::npos) {
    std::string first = text.substr(0, at), second = text.substr(at + sep.size());
    if (number(first) && number(second)) return {std::stoull(first), std::stoull(second)};
  }
  throw sim::ScenarioError("--" + what + ":1:1: cannot read \"" + text + "\"",
                           what == "seeds" ? "e.g. --seeds 1..100" : "e.g. --" + what + " 0/4");
}

std::pair<std::uint32_t, std::uint32_t> parse_shard(const std::string& text) {
  auto [shard, shards] = parse_pair(text, "/", "shard");
  if (shards == 0 || shard >= shards) throw sim::ScenarioError("--shard:1:1: I/N needs I < N", "e.g. --shard 0/4");
  if (shards > shards_max) {
    throw sim::ScenarioError("--shard:1:1: at most " + std::to_string(shards_max) + " shards, not " + std::to_string(shards),
                             "e.g. --shard 0/64");
  }
  return {std::uint32_t(shard), std::uint32_t(shards)};
}

Retold retell(const std::string& path) {
  try {
    checker::SuiteOptions options;
    options.only_arm = "base";
    checker::SuiteResult result = checker::run_suite(path, options);
    if (result.report.arms.empty() || result.traces.empty()) return {};
    return {result.report.arms.front().story, checker::decision_graph(result.traces.front(), result.report.arms.front().verdicts)};
  } catch (const std::exception& e) {
    return {{std::string("(no story: running it again failed: ") + e.what() + ")"}, {}};
  }
}

}  // namespace loopsim::cli
