// The verbs of `loopsim`, one file each. Each adds its subcommand to the app; its callback sets
// `status` to the process's exit status.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "scenario/scenario.hpp"

namespace loopsim::cli {

inline constexpr int exit_held = 0;
inline constexpr int exit_violated = 1;
inline constexpr int exit_bad_input = 2;
inline constexpr int exit_bound_reached = 3;  // a limit cut the search (or the run) short
inline constexpr int exit_audit_failed = 4;   // explore --audit: two states digest alike but differ

void add_run(CLI::App& app, int& status);
void add_live(CLI::App& app, int& status);
void add_render(CLI::App& app, int& status);
void add_check(CLI::App& app, int& status);
void add_seeds(CLI::App& app, int& status);
void add_explore(CLI::App& app, int& status);
void add_generate(CLI::App& app, int& status);
void add_probe(CLI::App& app, int& status);
void add_merge(CLI::App& app, int& status);

// Shared by the verbs.
std::int64_t wall_ns();
std::vector<sim::Override> parse_overrides(const std::vector<std::string>& assignments);

// The one error printer: "error: POSITION: message", then "  hint: ...", control characters
// escaped. Every verb reports bad input through it. Returns exit_bad_input.
int report_error(const sim::ScenarioError& error);
int report_error(const std::string& where_and_what, const std::string& hint);

// An output the verb will write (--trace, --out, --junit), checked before any work: its folder
// must exist; it must not be a folder, a symbolic link, a FIFO or a device, nor one of the
// command's `inputs` (compared as files, st_dev and st_ino, not as names). Throws a
// ScenarioError at `option`.
void check_output(const std::string& option, const std::string& path, const std::vector<std::string>& inputs);
// The same checks but the folder's: a file about to be written in a folder already made.
void refuse_unsafe_output(const std::string& option, const std::string& path, const std::vector<std::string>& inputs);
// A folder the verb writes into (explore --out, generate --out), made now, or a ScenarioError.
void make_output_folder(const std::string& option, const std::string& dir);
// The file at `path` written by `write` (sim::write_output_file: never through a link, never
// into a FIFO or a device), or a ScenarioError at `option` saying why not. Refused, before
// anything is written, when `path` is one of `inputs`.
void write_output_file(const std::string& option, const std::string& path,
                       const std::function<void(std::ostream&)>& write, const std::vector<std::string>& inputs);

// The story (checker/story.hpp) of the failing run a scenario written by a verb holds (an
// explore counterexample, a generate finding), and its decision graph: its base arm run once
// more, every event kept. The story is empty when that run holds; a single line saying why when
// it cannot be run (and then there is no graph).
struct Retold {
  std::vector<std::string> story;
  std::string graph;  // Graphviz dot
};
Retold retell(const std::string& path);

// A whole number from `min` to 2^63 - 1 (what a trace and a scenario can hold): no sign, no
// empty value, no wrap.
inline CLI::Validator whole_number(std::uint64_t min) {
  return CLI::Validator(
      [min](std::string& value) {
        bool digits = !value.empty() && value.size() <= 19 &&
                      value.find_first_not_of("0123456789") == std::string::npos;
        if (!digits || std::stoull(value) < min || std::stoull(value) > 9223372036854775807ull) {
          return "must be a whole number from " + std::to_string(min) + " to 9223372036854775807, not \"" + value + "\"";
        }
        return std::string();
      },
      "", "whole number");
}

// A duration given as option `name` ("--time-limit"), or a ScenarioError at that option.
inline Duration option_duration(const std::string& name, const std::string& text) {
  try {
    return sim::parse_duration(text);
  } catch (const std::invalid_argument& e) {
    throw sim::ScenarioError(name + ":1:1: " + e.what(), "e.g. " + name + " 30s");
  }
}

// "A..B" (sep "..") or "I/N" (sep "/"): two whole numbers, or a ScenarioError at --`what`.
std::pair<std::uint64_t, std::uint64_t> parse_pair(const std::string& text, const std::string& sep,
                                                   const std::string& what);
// --shard I/N: this run's share of a search, I < N, N at most shards_max.
inline constexpr std::uint32_t shards_max = 65536;
std::pair<std::uint32_t, std::uint32_t> parse_shard(const std::string& text);

// A command-line value that must not be empty ("--arm ''").
inline const CLI::Validator non_empty(
    [](std::string& value) { return value.empty() ? std::string("must not be empty") : std::string(); }, "", "non-empty");

}  // namespace loopsim::cli
