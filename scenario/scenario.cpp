// Scenario files (TOML, format version 1) to Scenario. Every error names file:line:column and
// carries a one-line hint. The document is parsed and overridden (--set, arm `set`) first, in
// scenario/scenario_document.cpp, so that overrides pass the same checks as the file; their values
// carry a source path of their own (the origin's label), which is how an error in one is traced
// back to it. The pinned-choices writer is there too. Here: the top-level table, and the whole
// read; each section is a file of its own (scenario/section_*.cpp).
#include "scenario/scenario.hpp"

#include "scenario/properties.hpp"
#include "scenario/scenario_reading.hpp"
#include "scenario/units.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <sstream>
#include <set>
#include <string_view>

namespace loopsim::sim {
namespace {

using namespace reading;

void read_format(C c, N n, K k) {
  const std::int64_t format = read_integer(c, n, k, 0, INT64_MAX);
  if (format != 1)
    c.fail(n.source(), cat("format ", format, " is not supported; this loopsim reads format 1"),
           "write format = 1, or leave it out");
}

// "order:120:37": a decision of a choice point, as a counterexample pins it.
std::vector<model::Choice> read_choices(C c, N n, K k) {
  std::vector<model::Choice> out;
  for (const toml::node& item : as_array(c, n, k)) {
    const std::string text = read_string(c, item, k);
    const auto first = text.find(':'), second = text.find(':', first + 1);
    auto kind = model::choice_kind_from_name(text.substr(0, first));
    std::uint32_t options = 0, pick = 0;
    bool ok = kind && first != std::string::npos && second != std::string::npos;
    if (ok) {
      auto a = std::from_chars(text.data() + first + 1, text.data() + second, options);
      auto b = std::from_chars(text.data() + second + 1, text.data() + text.size(), pick);
      ok = a.ec == std::errc{} && a.ptr == text.data() + second && b.ec == std::errc{} &&
           b.ptr == text.data() + text.size() && pick < options;  // no sign, no junk, nothing after
    }
    if (!ok)
      c.fail(item.source(), cat(k, ": \"", text, "\" is not a choice"),
             R"(choices look like "order:3:1": kind (order, fault, slack), options, pick)");
    out.push_back(model::Choice{*kind, options, pick});
  }
  return out;
}

const Field<Scenario> top_fields[] = {
    {"format", [](C c, N n, K k, Scenario&) { read_format(c, n, k); }},
    {"name", [](C c, N n, K k, auto& s) { s.name = read_name(c, n, k); }},
    {"description", [](C c, N n, K k, auto& s) { s.description = read_string(c, n, k); }},
    {"seed",
     [](C c, N n, K k, auto& s) { s.seed = std::uint64_t(read_integer(c, n, k, 0, INT64_MAX)); }},
    {"horizon", [](C c, N n, K k, auto& s) { s.horizon = read_instant(c, n, k, true); }},
    {"kernel",
     [](C c, N n, K k, auto& s) { read_fields(c, as_table(c, n, k), kernel_section, s); }},
    {"loop", [](C c, N n, K k, auto& s) { read_fields(c, as_table(c, n, k), loop_section, s); }},
    {"target",
     [](C c, N n, K k, auto& s) {
       s.target.emplace();
       read_fields(c, as_table(c, n, k), target_section, s);
     }},
    {"clients", [](C c, N n, K k, auto& s) { s.clients = read_each(c, n, k, client_section); }},
    {"expect", [](C c, N n, K k, auto& s) { s.expect = read_each(c, n, k, expect_section); }},
    {"faults", [](C c, N n, K k, auto& s) { s.faults = read_each(c, n, k, fault_section); }},
    {"choices", [](C c, N n, K k, auto& s) { s.choices = read_choices(c, n, k); }},
    {"posters", [](C c, N n, K k, auto& s) { s.posters = read_each(c, n, k, poster_section); }},
    {"actions", [](C c, N n, K k, auto& s) { s.actions = read_each(c, n, k, action_section); }},
    {"arms", [](C c, N n, K k, auto& s) { s.arms = read_each(c, n, k, arm_section); }},
};
const Section<Scenario> root_section{"", "the top-level table", top_fields};

constexpr std::string_view array_table_names[] = {"clients", "expect",  "arms",   "faults",
                                                  "posters", "actions", "choices"};

Scenario to_scenario(C c, const toml::table& root) {
  Scenario s;
  s.file = c.file();
  s.name = std::filesystem::path(c.file()).stem().string();
  if (const toml::node* format = root.get("format")) read_format(c, *format, "format");
  read_fields(c, root, root_section, s);
  check_references(c, root, s);
  check_totals(c, root, s);
  check_poster_times(c, root, s);
  check_action_times(c, root, s);
  if (root.empty()) {
    c.fail(root.source(), "the scenario is empty", "a scenario needs something to run or judge; see scenarios/README.md");
  }
  if (s.target) check_target(c, root);
  else check_builtin_signals(c, root, s);
  // Where the kernel's and the loop's knobs were set, for errors found when the run starts;
  // and the horizon, which a run stopped at a limit did not reach.
  if (const toml::node* horizon = root.get("horizon")) s.where["horizon"] = c.position(horizon->source());
  for (const char* section : {"kernel", "loop", "target"}) {
    const toml::table* table = root[section].as_table();
    if (table == nullptr) continue;
    s.where[section] = c.position(table->source());
    for (const auto& [key, node] : *table) s.where[cat(section, ".", key.str())] = c.position(node.source());
  }
  return s;
}

}  // namespace

namespace reading {

const Section<Scenario>* override_section(std::string_view name) {
  if (name == "kernel") return &kernel_section;
  if (name == "loop") return &loop_section;
  if (name == "target") return &target_section;
  return nullptr;
}

bool is_array_table(std::string_view name) { return contains(array_table_names, name); }
const Section<Scenario>& root_fields() { return root_section; }

}  // namespace reading

namespace {

Scenario convert(const std::string& text, const std::string& file, const Arm* arm,
                 const std::vector<Override>& overrides) {
  Context c(file);
  toml::table root = overridden(c, text, file, arm, overrides);
  Scenario s = to_scenario(c, root);
  const std::string arm_name = arm != nullptr ? arm->name : "base";
  std::erase_if(s.faults, [&](const FaultSpec& f) {
    return !f.arms.empty() && std::find(f.arms.begin(), f.arms.end(), arm_name) == f.arms.end();
  });
  for (FaultSpec& f : s.faults) f.arms.clear();
  if (s.target) {
    scope_faults(root, arm_name);
    root.erase("arms");
    s.source = toml_text(root) + '\n';
  }
  return s;
}

}  // namespace

std::string toml_string(const std::string& text) {
  toml::array array;
  array.push_back(text);
  const std::string listed = toml_text(array);  // "[ 'text' ]": the one item, quoted as TOML would
  const std::size_t open = listed.find_first_not_of("[ "), close = listed.find_last_not_of("] ");
  return listed.substr(open, close - open + 1);
}

std::string toml_strings(const std::vector<std::string>& items) {
  toml::array array;
  for (const std::string& item : items) array.push_back(item);
  return toml_text(array);
}

int file_accept_batch(const std::string& text, const std::string& name) {
  const toml::table root = parse_document(text, name);
  const std::optional<std::int64_t> batch = root["loop"]["accept_batch"].value<std::int64_t>();
  return batch && *batch > 0 && *batch <= INT32_MAX ? int(*batch) : 0;
}

Scenario parse_scenario(const std::string& text, const std::string& name,
                        const std::vector<Override>& overrides) {
  Scenario base = convert(text, name, nullptr, overrides);
  // Every arm must load too, so that a typo in an arm is reported before anything runs.
  for (const Arm& arm : base.arms) convert(text, name, &arm, overrides);
  return base;
}

std::string_view fault_kind_name(FaultSpec::Kind kind) { return fault_kind_names[std::size_t(kind)]; }

Scenario with_shrinks(const Scenario& scenario, const Shrinks& shrinks) {
  Scenario s = scenario;
  s.shrunk = shrinks;
  if (shrinks.arguments && s.target && !s.target->exec.empty()) {
    s.target->exec.resize(1);
    s.target->exec.insert(s.target->exec.end(), shrinks.arguments->begin(), shrinks.arguments->end());
  }
  std::erase_if(s.clients, [&](const ClientGroup& g) {
    auto it = shrinks.clients.find(g.name);
    return it != shrinks.clients.end() && it->second == 0;
  });
  for (std::size_t i = s.faults.size(); i-- > 0;)
    if (std::find(shrinks.faults_dropped.begin(), shrinks.faults_dropped.end(), i) != shrinks.faults_dropped.end())
      s.faults.erase(s.faults.begin() + std::ptrdiff_t(i));
  for (ClientGroup& g : s.clients) {
    if (auto it = shrinks.clients.find(g.name); it != shrinks.clients.end()) g.count = it->second;
    if (auto it = shrinks.connect_at.find(g.name); it != shrinks.connect_at.end()) g.connect_at = model::at_instant(it->second);
    if (auto it = shrinks.body.find(g.name); it != shrinks.body.end()) g.body = it->second;
    if (auto it = shrinks.request_at.find(g.name); it != shrinks.request_at.end())
      for (const auto& [k, t] : it->second)
        if (k < g.requests.size()) g.requests[k].at = model::at_instant(t);
    if (auto it = shrinks.script.find(g.name); it != shrinks.script.end()) {
      std::vector<RequestSpec> kept;
      for (std::size_t k : it->second)
        if (k < g.requests.size()) kept.push_back(g.requests[k]);
      g.requests = std::move(kept);
    }
    if (auto it = shrinks.closed_requests.find(g.name); it != shrinks.closed_requests.end()) {
      g.closed_requests = it->second;
      g.pipeline = int(std::min<std::int64_t>(g.pipeline, it->second));
    }
  }
  return s;
}

Scenario scenario_for_arm(const std::string& text, const std::string& name, const Arm& arm,
                          const std::vector<Override>& overrides) {
  return convert(text, name, &arm, overrides);
}

std::ifstream open_input(const std::string& path, std::uintmax_t max_bytes, const char* what) {
  std::error_code error;
  auto status = std::filesystem::status(path, error);
  if (error || !std::filesystem::exists(status)) {
    throw ScenarioError(located(path, {1, 1}, cat("no such ", what)), "check the path");
  }
  if (!std::filesystem::is_regular_file(status)) {
    throw ScenarioError(located(path, {1, 1}, cat("not a regular file (a directory, a FIFO or a device)")),
                        cat("give the path of a ", what));
  }
  auto size = std::filesystem::file_size(path, error);
  if (!error && size > max_bytes) {
    throw ScenarioError(located(path, {1, 1}, cat("the ", what, " is ", size, " bytes; loopsim reads at most ", max_bytes)),
                        "split it, or keep it shorter");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ScenarioError(located(path, {1, 1}, cat("cannot read the ", what)), "check its permissions");
  return in;
}

std::string read_scenario_file(const std::string& path) {
  std::ifstream in = open_input(path, scenario_file_max, "scenario file");
  return std::string{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

Scenario load_scenario(const std::string& path, const std::vector<Override>& overrides) {
  return parse_scenario(read_scenario_file(path), path, overrides);
}

}  // namespace loopsim::sim
