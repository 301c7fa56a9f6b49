// The scenario reader's values: strings, numbers, durations, windows, bounds, names, paths and
// `set` tables, each read with its own error and hint; and a table's keys in the order written.
#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "scenario/properties.hpp"
#include "scenario/scenario.hpp"
#include "scenario/scenario_reading.hpp"
#include "scenario/units.hpp"

namespace loopsim::sim::reading {

std::string read_string(C c, N n, K k) {
  return c.as<std::string>(n, k, "a string", R"(write it in double quotes, e.g. "fast")");
}
bool read_bool(C c, N n, K k) {
  return c.as<bool>(n, k, "true or false", "write true or false, without quotes");
}

std::int64_t read_integer(C c, N n, K k, std::int64_t min, std::int64_t max) {
  const std::int64_t value =
      c.as<std::int64_t>(n, k, "an integer", "write a whole number without quotes, e.g. 16");
  if (value < min)
    c.fail(n.source(), cat(k, " must be at least ", min, ", not ", value),
           cat("use ", min, " or more"));
  if (value > max)
    c.fail(n.source(), cat(k, " must be at most ", max, ", not ", value),
           cat("use ", max, " or less"));
  return value;
}

// A rate per second, as thousandths: an integer, or a number with at most 3 decimals.
std::int64_t read_rate(C c, N n, K k) {
  // 10^15 a second: exact as a double, and its thousandths (10^18) fit an int64_t. INT64_MAX /
  // 1000 was neither: a decimal just under it rounded up to 2^63 thousandths, past int64_t.
  constexpr std::int64_t per_second_max = 1'000'000'000'000'000;
  if (n.is_integer()) return read_integer(c, n, k, 0, per_second_max) * 1000;
  const double value = c.as<double>(n, k, "a number", "e.g. rate = 200");
  if (!std::isfinite(value) || value < 0 || value > double(per_second_max))
    c.fail(n.source(), cat(k, " must be a finite number, from 0 to ", per_second_max), "e.g. rate = 200");
  // IEEE multiplication and rounding, no libm: the same thousandths on every machine.
  const double milli = value * 1000;
  const auto whole = std::int64_t(milli + 0.5);
  if (value > 0 && whole == 0)
    c.fail(n.source(), cat(k, " must be 0 or at least 0.001 (a connection every 1,000 s), not ", value),
           "e.g. rate = 0.5");
  if (std::fabs(milli - double(whole)) > 1e-6 * std::max(1.0, milli))
    c.fail(n.source(), cat(k, " takes at most 3 decimals, not ", value), "e.g. rate = 0.5 or rate = 12.125");
  return whole;
}

Duration read_duration(C c, N n, K k, bool positive) {
  const std::string& text = c.as<std::string>(n, k, "a duration string", duration_hint);
  Duration value{0};
  try {
    value = parse_duration(text);
  } catch (const std::invalid_argument& e) {
    c.fail(n.source(), cat(k, ": ", e.what()), duration_hint);
  }
  if (positive && value <= Duration{0})
    c.fail(n.source(), cat(k, " must be longer than zero"), duration_hint);
  return value;
}

constexpr std::string_view window_hint =
    R"(a time is a duration such as "50ms", or a window "50ms..70ms": some instant from the first to the second)";

Window read_window(C c, N n, K k) {
  const std::string& text = c.as<std::string>(n, k, "a duration string or a window", window_hint);
  try {
    return parse_window(text);
  } catch (const std::invalid_argument& e) {
    c.fail(n.source(), cat(k, ": ", e.what()), window_hint);
  }
}

// The index of the node's value in `names`, or an error listing them.
std::size_t read_choice(C c, N n, K k, std::span<const std::string_view> names) {
  const std::string value = read_string(c, n, k);
  const auto found = std::find(names.begin(), names.end(), value);
  if (found == names.end())
    c.fail(n.source(), cat(k, ": unknown value \"", value, "\""), cat("one of: ", join(names)));
  return static_cast<std::size_t>(found - names.begin());
}

Bound read_bound(C c, N n, K k) {
  if (n.is_integer()) {
    const std::int64_t count = read_integer(c, n, k, 0, bound_count_max);
    return {Bound::Unit::count, static_cast<double>(count), std::to_string(count)};
  }
  const std::string& text = c.as<std::string>(n, k, "a duration, a count or a cost", bound_hint);
  try {
    return parse_bound(text);
  } catch (const std::invalid_argument& e) {
    c.fail(n.source(), cat(k, ": ", e.what()), bound_hint);
  }
}

std::string read_name(C c, N n, K key) {
  std::string name = read_string(c, n, key);
  if (name.empty()) c.fail(n.source(), cat(key, " must not be empty"), R"(e.g. name = "burst")");
  // Names are printed in tables, traces and commands: a control character (a newline, an
  // escape sequence) would break them, so a name holds none.
  if (std::any_of(name.begin(), name.end(), [](char ch) { return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f; }))
    c.fail(n.source(), cat(key, " must not hold control characters, not \"", name, "\""),
           "names are printed in tables and commands; use letters, digits, '-' and '_'");
  return name;
}

std::string read_path(C c, N n, K key) {
  std::string path = read_string(c, n, key);
  if (path.empty() || path.front() != '/')
    c.fail(n.source(), cat(key, " must start with '/'"),
           R"(paths look like "/fast", "/slow?ms=10")");
  return path;
}

// Reports and --arm call the scenario as written "base".
std::string read_arm_name(C c, N n, K key) {
  std::string name = read_name(c, n, key);
  if (name == "base")
    c.fail(n.source(), "the arm name \"base\" is reserved for the scenario as written",
           "choose another name");
  return name;
}

std::vector<std::string> read_names(C c, N n, K key) {
  std::vector<std::string> names;
  for (const toml::node& item : as_array(c, n, key)) names.push_back(read_name(c, item, key));
  return names;
}
std::vector<Keyed> in_document_order(const toml::table& table) {
  std::vector<Keyed> entries;
  for (auto&& [key, node] : table) entries.emplace_back(&key, &node);
  std::stable_sort(entries.begin(), entries.end(), [](const Keyed& a, const Keyed& b) {
    const auto pa = a.first->source().begin, pb = b.first->source().begin;
    return pa.line != pb.line ? pa.line < pb.line : pa.column < pb.column;
  });
  return entries;
}

// `set = { "loop.accept_batch" = 0 }`; a dotted key written bare (loop.accept_batch = 0) is a
// nested table in TOML, and is flattened back to its dotted name.
namespace {

void read_set_into(const toml::table& set, const std::string& prefix, std::vector<Override>& out) {
  for (const auto& [name, value] : in_document_order(set)) {
    const std::string key = prefix + std::string(name->str());
    if (value->is_table())
      read_set_into(*value->as_table(), key + ".", out);
    else
      out.push_back({key, toml_text(*value)});
  }
}

}  // namespace

std::vector<Override> read_set(C c, N n, K k) {
  std::vector<Override> out;
  read_set_into(as_table(c, n, k), "", out);
  return out;
}

}  // namespace loopsim::sim::reading
