// Inside the scenario reader: what scenario/scenario.cpp (a TOML document to a Scenario), its
// sections (scenario/section_*.cpp, one file each, with the typed values in scenario/values.cpp
// and the cross references in scenario/cross_references.cpp) and scenario/scenario_document.cpp
// (the document itself: parsed, overridden, scoped to an arm and written back with pinned
// choices) share. Not part of the library's interface.
#pragma once

#include <toml++/toml.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "scenario/scenario.hpp"
#include "scenario/toml_writer.hpp"

namespace loopsim::sim::reading {

template <typename... Parts>
std::string cat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

// "a, b, c", or the first 20 and how many more: a hint stays one readable line.
inline std::string join(std::span<const std::string_view> names) {
  constexpr std::size_t shown = 20;
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < shown; ++i) out += (i == 0 ? "" : ", ") + std::string(names[i]);
  if (names.size() > shown) out += cat(", and ", names.size() - shown, " more");
  return out;
}

inline bool contains(std::span<const std::string_view> names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

inline std::string located(const std::string& file, toml::source_position at, std::string_view message) {
  if (at.line == 0) at = {1, 1};
  return cat(file, ":", at.line, ":", at.column, ": ", message);
}


// Indexed by toml::node_type.
constexpr std::string_view type_names[] = {"nothing",    "a table",    "an array",  "a string",
                                           "an integer", "a float",    "a boolean", "a date",
                                           "a time",     "a date-time"};

inline std::string_view type_name(const toml::node& node) {
  return type_names[static_cast<std::size_t>(node.type())];
}

// Where an override's nodes came from: their TOML source path is `label`.
struct OverrideOrigin {
  std::string label;  // "--set loop.accept_batch", "arm \"x\" set loop.accept_batch"
  toml::source_position where;  // of the value
  std::string file;             // "--set" for the command line; empty for the scenario file
  toml::source_position key_where{};  // of the key; {} for the same place as the value
};

class Context {
 public:
  explicit Context(std::string file) : file_(std::move(file)) {}
  const std::string& file() const { return file_; }
  void add_origin(OverrideOrigin origin) { origins_.push_back(std::move(origin)); }

  [[noreturn]] void fail(const toml::source_region& where, std::string_view message,
                         std::string_view hint) const {
    for (const OverrideOrigin& origin : origins_)
      if (where.path && *where.path == origin.label) fail(origin, message, hint);
    throw ScenarioError(located(file_, where.begin, message), std::string(hint));
  }
  // "file:line:column" of a node, or of the override that set it.
  std::string position(const toml::source_region& where) const {
    std::string text;
    for (const OverrideOrigin& origin : origins_) {
      if (where.path && *where.path == origin.label) {
        text = located(origin.file.empty() ? file_ : origin.file, origin.where, origin.label);
        return text.substr(0, text.size() - origin.label.size() - 2);
      }
    }
    text = located(file_, where.begin, "");
    return text.substr(0, text.size() - 2);
  }
  [[noreturn]] void fail(const OverrideOrigin& origin, std::string_view message,
                         std::string_view hint, bool at_key = false) const {
    const toml::source_position at = at_key && origin.key_where.line != 0 ? origin.key_where : origin.where;
    throw ScenarioError(located(origin.file.empty() ? file_ : origin.file, at, cat(origin.label, ": ", message)),
                        std::string(hint));
  }

  // The node as a T (a TOML value type, toml::table or toml::array), or an error naming `key`.
  template <typename T>
  const auto& as(const toml::node& n, std::string_view key, std::string_view what,
                 std::string_view hint) const {
    if (!n.is<T>()) fail(n.source(), cat(key, " must be ", what, ", not ", type_name(n)), hint);
    if constexpr (std::is_same_v<T, toml::table> || std::is_same_v<T, toml::array>)
      return *n.as<T>();
    else
      return n.as<T>()->get();
  }

 private:
  std::string file_;
  std::vector<OverrideOrigin> origins_;
};

using C = const Context&;
using N = const toml::node&;
using K = std::string_view;

constexpr std::string_view shape_hint = "see scenarios/README.md for the shape of this key";

inline const toml::table& as_table(C c, N n, K k) {
  return c.as<toml::table>(n, k, "a table", shape_hint);
}
inline const toml::array& as_array(C c, N n, K k) {
  return c.as<toml::array>(n, k, "an array", shape_hint);
}

template <typename Target>
struct Field {
  std::string_view key;
  void (*read)(const Context&, const toml::node&, std::string_view key, Target&);
};

template <typename Target>
struct Section {
  std::string_view name;   // prefix of qualified keys ("loop"); empty at the top level
  std::string_view title;  // for messages ("[loop]")
  std::span<const Field<Target>> fields;
  std::string_view required = {};  // a key every such table must have
  void (*finish)(const Context&, const toml::table&, Target&) = nullptr;
};

template <typename Target>
const Field<Target>* find_field(const Section<Target>& section, std::string_view key) {
  for (const Field<Target>& field : section.fields)
    if (field.key == key) return &field;
  return nullptr;
}

struct Problem {
  std::string message;
  std::string hint;
};

// Why `key` is not readable in `section`: it is unknown there.
template <typename Target>
Problem key_problem(const Section<Target>& section, std::string_view key) {
  std::vector<std::string_view> known;
  for (const Field<Target>& field : section.fields) known.push_back(field.key);
  return {cat("unknown key \"", key, "\" in ", section.title),
          cat("known keys in ", section.title, ": ", join(known))};
}

// ---- the sections' shared words (scenario/values.cpp and each scenario/section_*.cpp) ----

constexpr std::string_view duration_hint = R"(durations look like "600ms", "80us", "1.5s", "250ns")";
constexpr std::string_view bound_hint = R"(bounds look like "500ms", 3, "2 requests", "1.5 batches")";
constexpr std::int64_t clients_max = 1'000'000;
// Over all groups: each request leaves at least two events in the trace (its send and its answer).
constexpr std::int64_t total_clients_max = 1'000'000;
constexpr std::int64_t pipeline_max = 1024;
constexpr std::int64_t weight_max = 1'000'000;
constexpr std::int64_t body_max = 1 << 20;  // the loop's Content-Length ceiling (docs/http.md)
// The events one wait may return: the loop holds a buffer of this many (16 bytes each).
constexpr std::int64_t max_events_max = 1 << 20;
constexpr std::int64_t workers_max = 256;
constexpr std::string_view fault_kind_names[] = {"accept_error", "rlimit", "reset"};  // FaultSpec::Kind

// Typed values, each failing with its own message and hint (scenario/values.cpp).
std::string read_string(C c, N n, K k);
bool read_bool(C c, N n, K k);
std::int64_t read_integer(C c, N n, K k, std::int64_t min, std::int64_t max = INT_MAX);
std::int64_t read_rate(C c, N n, K k);  // a rate per second, in thousandths
Duration read_duration(C c, N n, K k, bool positive = false);
// An instant, written as its time since the run's start.
inline Instant read_instant(C c, N n, K k, bool positive = false) { return Instant{read_duration(c, n, k, positive)}; }
Window read_window(C c, N n, K k);
// The index of the node's value in `names`, or an error listing them.
std::size_t read_choice(C c, N n, K k, std::span<const std::string_view> names);
Bound read_bound(C c, N n, K k);
std::string read_name(C c, N n, K key);
std::string read_path(C c, N n, K key);
std::string read_arm_name(C c, N n, K key);
std::vector<std::string> read_names(C c, N n, K key);
std::vector<Override> read_set(C c, N n, K k);

using Keyed = std::pair<const toml::key*, const toml::node*>;
// toml++ keeps keys sorted; errors should come in the order the file was written.
std::vector<Keyed> in_document_order(const toml::table& table);

// A table read by its section's fields, in the order written; then the section's `required` key
// and its `finish`.
template <typename Target>
void read_fields(const Context& c, const toml::table& table, const Section<Target>& section, Target& target) {
  for (const auto& [key, node] : in_document_order(table)) {
    const Field<Target>* field = find_field(section, key->str());
    if (field == nullptr) {
      const Problem problem = key_problem(section, key->str());
      c.fail(key->source(), problem.message, problem.hint);
    }
    const std::string name = section.name.empty() ? std::string(key->str()) : cat(section.name, ".", key->str());
    field->read(c, *node, name, target);
  }
  if (!section.required.empty() && !table.contains(section.required))
    c.fail(table.source(), cat(section.title, " needs ", section.required), cat("add ", section.required, " = \"...\""));
  if (section.finish != nullptr) section.finish(c, table, target);
}

// An array of tables, each read by `section`.
template <typename Target>
std::vector<Target> read_each(const Context& c, const toml::node& n, std::string_view key, const Section<Target>& section) {
  std::vector<Target> out;
  for (const toml::node& item : as_array(c, n, key)) read_fields(c, as_table(c, item, key), section, out.emplace_back());
  return out;
}

// The sections, one file each.
extern const Section<ClientGroup> client_section;  // scenario/section_clients.cpp
extern const Section<Expectation> expect_section;  // scenario/section_expect.cpp
extern const Section<Arm> arm_section;             // scenario/section_expect.cpp
extern const Section<FaultSpec> fault_section;     // scenario/section_faults.cpp
extern const Section<Scenario> kernel_section;     // scenario/section_kernel_loop.cpp
extern const Section<Scenario> loop_section;       // scenario/section_kernel_loop.cpp
extern const Section<Scenario> target_section;     // scenario/section_target.cpp
extern const Section<PosterSpec> poster_section;   // scenario/section_actions.cpp
extern const Section<ActionSpec> action_section;   // scenario/section_actions.cpp

// The cross references, once every table has been read (scenario/cross_references.cpp).
void check_references(C c, const toml::table& root, const Scenario& s);
void check_target(C c, const toml::table& root);
void check_builtin_signals(C c, const toml::table& root, Scenario& s);
void check_totals(C c, const toml::table& root, const Scenario& s);
void check_poster_times(C c, const toml::table& root, const Scenario& s);
void check_action_times(C c, const toml::table& root, const Scenario& s);

// ---- between the two halves ------------------------------------------------------------

// The document, parsed, or a ScenarioError at the place it fails (nesting bounded first).
toml::table parse_document(const std::string& text, const std::string& file);
// The document with the arm's overrides and then the command line's applied, each checked and
// each remembered by `c`, so that an error in one is reported where it was written.
toml::table overridden(Context& c, const std::string& text, const std::string& file, const Arm* arm,
                       const std::vector<Override>& overrides);
// The faults as `arm` runs them: those scoped to other arms left out, the scopes erased.
void scope_faults(toml::table& root, const std::string& arm);
// The sections an override may name: "kernel", "loop", "target"; nullptr for any other.
const Section<Scenario>* override_section(std::string_view name);
const Section<Scenario>& root_fields();  // the top level's keys
// [[clients]], [[expect]] and the other arrays of tables, which no override may change.
bool is_array_table(std::string_view name);

}  // namespace loopsim::sim::reading
