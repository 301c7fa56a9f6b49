// Scenario files (TOML, format version 1) to Scenario. Every error names file:line:column and
// carries a one-line hint. The document is parsed and overridden (--set, arm `set`) first, in
// sim/scenario_document.cpp, so that overrides pass the same checks as the file; their values
// carry a source path of their own (the origin's label), which is how an error in one is traced
// back to it. The pinned-choices writer is there too.
#include "sim/scenario.hpp"

#include "sim/properties.hpp"
#include "sim/scenario_reading.hpp"
#include "sim/units.hpp"

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

constexpr std::string_view duration_hint =
    R"(durations look like "600ms", "80us", "1.5s", "250ns")";
constexpr std::string_view bound_hint =
    R"(bounds look like "500ms", 3, "2 requests", "1.5 batches")";
constexpr std::int64_t clients_max = 1'000'000;
// Over all groups: each request leaves at least two events in the trace (its send and its answer).
constexpr std::int64_t total_clients_max = 1'000'000;
constexpr std::int64_t pipeline_max = 1024;
constexpr std::int64_t weight_max = 1'000'000;
constexpr std::int64_t body_max = 1 << 20;  // the loop's Content-Length ceiling (docs/http.md)
// The events one wait may return: the loop holds a buffer of this many (16 bytes each).
constexpr std::int64_t max_events_max = 1 << 20;
constexpr std::int64_t workers_max = 256;

// ---- reading typed values ----------------------------------------------------------------

std::string read_string(C c, N n, K k) {
  return c.as<std::string>(n, k, "a string", R"(write it in double quotes, e.g. "fast")");
}
bool read_bool(C c, N n, K k) {
  return c.as<bool>(n, k, "true or false", "write true or false, without quotes");
}

std::int64_t read_integer(C c, N n, K k, std::int64_t min, std::int64_t max = INT_MAX) {
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

Nanos read_duration(C c, N n, K k, bool positive = false) {
  const std::string& text = c.as<std::string>(n, k, "a duration string", duration_hint);
  Nanos value{0};
  try {
    value = parse_duration(text);
  } catch (const std::invalid_argument& e) {
    c.fail(n.source(), cat(k, ": ", e.what()), duration_hint);
  }
  if (positive && value <= Nanos{0})
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

// ---- tables, described by tables of fields -----------------------------------------------

using Entry = std::pair<const toml::key*, const toml::node*>;

// toml++ keeps keys sorted; errors should come in the order the file was written.
std::vector<Entry> in_document_order(const toml::table& table) {
  std::vector<Entry> entries;
  for (auto&& [key, node] : table) entries.emplace_back(&key, &node);
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    const auto pa = a.first->source().begin, pb = b.first->source().begin;
    return pa.line != pb.line ? pa.line < pb.line : pa.column < pb.column;
  });
  return entries;
}

template <typename Target>
void read_fields(const Context& c, const toml::table& table, const Section<Target>& section,
                 Target& target) {
  for (const auto& [key, node] : in_document_order(table)) {
    const Field<Target>* field = find_field(section, key->str());
    if (field == nullptr) {
      const Problem problem = key_problem(section, key->str());
      c.fail(key->source(), problem.message, problem.hint);
    }
    const std::string name =
        section.name.empty() ? std::string(key->str()) : cat(section.name, ".", key->str());
    field->read(c, *node, name, target);
  }
  if (!section.required.empty() && !table.contains(section.required))
    c.fail(table.source(), cat(section.title, " needs ", section.required),
           cat("add ", section.required, " = \"...\""));
  if (section.finish != nullptr) section.finish(c, table, target);
}

template <typename Target>
std::vector<Target> read_each(const Context& c, const toml::node& n, std::string_view key,
                              const Section<Target>& section) {
  std::vector<Target> out;
  for (const toml::node& item : as_array(c, n, key))
    read_fields(c, as_table(c, item, key), section, out.emplace_back());
  return out;
}

// `set = { "loop.accept_batch" = 0 }`; a dotted key written bare (loop.accept_batch = 0) is a
// nested table in TOML, and is flattened back to its dotted name.
void read_set_into(const toml::table& set, const std::string& prefix, std::vector<Override>& out) {
  for (const auto& [name, value] : in_document_order(set)) {
    const std::string key = prefix + std::string(name->str());
    if (value->is_table())
      read_set_into(*value->as_table(), key + ".", out);
    else
      out.push_back({key, toml_text(*value)});
  }
}

std::vector<Override> read_set(C c, N n, K k) {
  std::vector<Override> out;
  read_set_into(as_table(c, n, k), "", out);
  return out;
}

constexpr std::string_view poller_names[] = {"epoll", "kqueue"};
constexpr PollerFlavour poller_values[] = {PollerFlavour::epoll, PollerFlavour::kqueue};
constexpr std::string_view mode_names[] = {"loop-only", "pool"};
constexpr HandlerMode mode_values[] = {HandlerMode::loop_only, HandlerMode::pool};
constexpr std::string_view handle_policy_names[] = {"fixed", "rlimit", "grow"};  // HandlePolicy
constexpr std::string_view on_full_names[] = {"refuse", "backpressure"};         // OnFull

// Bytes as a scenario writes them: the string as TOML read it, where `\xHH` (two hex digits)
// is the byte 0xHH and `\\` one backslash, so that a request can hold any byte (MQTT's PINGREQ
// is '\xC0\x00'). TOML's basic strings know no \x: such text goes in a literal string, in
// single quotes, or its backslash is doubled ("\\xC0").
std::string read_escaped(C c, N n, K k) {
  const std::string text = read_string(c, n, k);
  std::string bytes;
  bytes.reserve(text.size());
  auto hex = [](char h) {
    return h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') {
      bytes += text[i];
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '\\') {
      bytes += '\\';
      ++i;
    } else if (i + 3 < text.size() && text[i + 1] == 'x' && hex(text[i + 2]) >= 0 && hex(text[i + 3]) >= 0) {
      bytes += char(hex(text[i + 2]) * 16 + hex(text[i + 3]));
      i += 3;
    } else {
      c.fail(n.source(), cat(k, " has a backslash at character ", i + 1, " that is neither \\xHH (a byte) nor \\\\"),
             R"(bytes = '\xC0\x00' sends the bytes C0 00; '\\' sends one backslash)");
    }
  }
  return bytes;
}

// A raw request's bytes ("PING\r\n", "get k\r\n", '\xC0\x00').
std::string read_bytes(C c, N n, K k) {
  std::string bytes = read_escaped(c, n, k);
  if (bytes.empty()) c.fail(n.source(), cat(k, " is empty: a request sends at least one byte"), R"(e.g. bytes = "PING\r\n")");
  if (bytes.size() > std::size_t(body_max))
    c.fail(n.source(), cat(k, " is longer than ", body_max, " bytes"), "send less in one request");
  return bytes;
}

void finish_request(const Context& c, const toml::table& table, RequestSpec& r) {
  if (table.contains("path") == table.contains("bytes"))
    c.fail(table.source(), "a request needs path (an HTTP GET) or bytes (sent as written), and only one of them",
           R"({ at = "10ms", path = "/fast" } or { at = "10ms", bytes = "PING\r\n" })");
  r.raw = table.contains("bytes");
}

const Field<RequestSpec> request_fields[] = {
    {"at", [](C c, N n, K k, auto& r) { r.at = read_window(c, n, k); }},
    {"path", [](C c, N n, K k, auto& r) { r.path = read_path(c, n, k); }},
    {"bytes", [](C c, N n, K k, auto& r) { r.path = read_bytes(c, n, k); }},
};
const Section<RequestSpec> request_section{
    "clients.requests", "a request", request_fields, {}, finish_request};

const Field<ClientGroup::WeightedPath> weighted_path_fields[] = {
    {"path", [](C c, N n, K k, auto& w) { w.path = read_path(c, n, k); }},
    {"weight", [](C c, N n, K k, auto& w) { w.weight = read_integer(c, n, k, 1, weight_max); }},
};
const Section<ClientGroup::WeightedPath> weighted_path_section{
    "clients.paths", "a weighted path", weighted_path_fields, "path"};

// requests: a list of timed requests (a script), or how many a closed loop sends.
void read_requests(C c, N n, K k, ClientGroup& g) {
  if (n.is_integer()) {
    g.closed_requests = read_integer(c, n, k, 1, total_requests_max);
    return;
  }
  if (!n.is_array())
    c.fail(n.source(), cat(k, " must be a list of requests or a whole number"),
           R"(requests = [{ at = "100ms", path = "/fast" }] scripts them; requests = 1000 runs a closed loop)");
  g.requests = read_each(c, n, k, request_section);
}

// What a group's keys must agree on, reported at the key that breaks it.
void finish_group(const Context& c, const toml::table& table, ClientGroup& g) {
  auto at = [&table](const char* key) { return table.get(key)->source(); };
  if (!g.closed_loop()) {
    for (const char* key : {"think", "pipeline", "path", "paths"}) {
      if (table.contains(key))
        c.fail(at(key), cat("clients.", key, " belongs to a closed loop, and \"", g.name, "\" is not one"),
               "set requests = N (how many each connection sends) or duration = \"10s\"");
    }
  } else if (table.contains("requests") && table.get("requests")->is_array()) {
    c.fail(at("duration"), cat("clients.duration runs a closed loop, and \"", g.name, "\" scripts its requests"),
           "drop the list and write requests = N, or drop duration");
  }
  if (table.contains("path") && table.contains("paths"))
    c.fail(at("paths"), "clients.paths and clients.path are both set", "keep one: path for one path, paths for a mix");
  if (g.body > 0 && g.stall == ClientGroup::Stall::body)
    c.fail(at("body"), "clients.body and stall = \"body\" both say what the body is", "keep one of them");
  if (g.read_rate > 0 && !g.reads)
    c.fail(at("read_rate"), "clients.read_rate is how fast a client reads, and reads = false says it never does",
           "keep one of them");
  if (g.arrivals == ClientGroup::Arrivals::poisson && g.rate_milli <= 0)
    c.fail(at("arrivals"), "clients.arrivals = \"poisson\" needs a rate", "add rate = 100 (connections per second)");
  // Raw requests: all of a group's, or none.
  g.raw = table.contains("bytes");
  if (!g.requests.empty()) {
    const bool raw = g.requests.front().raw;
    for (const RequestSpec& r : g.requests) {
      if (r.raw != raw)
        c.fail(at("requests"), cat("the requests of \"", g.name, "\" mix paths and bytes"),
               "a group speaks one protocol: give every request a path, or every one bytes");
    }
    g.raw = g.raw || raw;
  }
  if (table.contains("bytes") && table.contains("path"))
    c.fail(at("bytes"), "clients.bytes and clients.path are both set", "keep one: path for HTTP, bytes for any protocol");
  if (table.contains("bytes") && !g.closed_loop())
    c.fail(at("bytes"), cat("clients.bytes belongs to a closed loop, and \"", g.name, "\" is not one"),
           R"(set requests = N, or give each scripted request its own bytes = "...")");
  if (g.raw) {
    for (const char* key : {"body", "stall", "paths"}) {
      if (table.contains(key))
        c.fail(at(key), cat("clients.", key, " shapes HTTP requests, and \"", g.name, "\" sends bytes"),
               "drop it, or write the request's bytes to say what they carry");
    }
  }
  const bool terminated = g.framing == ClientGroup::Framing::terminator, sized = g.framing == ClientGroup::Framing::length;
  if (terminated != table.contains("terminator"))
    c.fail(at(terminated ? "framing" : "terminator"), "clients.terminator goes with framing = \"terminator\", and only with it",
           R"(framing = "terminator" and terminator = "END\r\n")");
  if (sized != table.contains("answer_bytes"))
    c.fail(at(sized ? "framing" : "answer_bytes"), "clients.answer_bytes goes with framing = \"length\", and only with it",
           R"(framing = "length" and answer_bytes = 5)");
}

constexpr std::string_view arrivals_names[] = {"uniform", "poisson"};
constexpr std::string_view framing_names[] = {"http", "terminator", "length", "resp", "mqtt", "prefix32"};  // ClientGroup::Framing
constexpr std::string_view stall_names[] = {"none", "head", "body"};
const Field<ClientGroup> client_fields[] = {
    {"name", [](C c, N n, K k, auto& g) { g.name = read_name(c, n, k); }},
    {"count", [](C c, N n, K k, auto& g) { g.count = int(read_integer(c, n, k, 1, clients_max)); }},
    {"connect_at", [](C c, N n, K k, auto& g) { g.connect_at = read_window(c, n, k); }},
    {"rate", [](C c, N n, K k, auto& g) { g.rate_milli = read_rate(c, n, k); }},
    {"keep_alive", [](C c, N n, K k, auto& g) { g.keep_alive = read_bool(c, n, k); }},
    {"stall",
     [](C c, N n, K k, auto& g) { g.stall = ClientGroup::Stall(read_choice(c, n, k, stall_names)); }},
    {"reads", [](C c, N n, K k, auto& g) { g.reads = read_bool(c, n, k); }},
    {"requests", read_requests},
    {"duration", [](C c, N n, K k, auto& g) { g.duration = read_duration(c, n, k, true); }},
    {"think", [](C c, N n, K k, auto& g) { g.think = read_duration(c, n, k); }},
    {"pipeline", [](C c, N n, K k, auto& g) { g.pipeline = int(read_integer(c, n, k, 1, pipeline_max)); }},
    {"path", [](C c, N n, K k, auto& g) { g.path = read_path(c, n, k); }},
    {"paths", [](C c, N n, K k, auto& g) { g.paths = read_each(c, n, k, weighted_path_section); }},
    {"body", [](C c, N n, K k, auto& g) { g.body = read_integer(c, n, k, 0, body_max); }},
    {"read_rate", [](C c, N n, K k, auto& g) { g.read_rate = read_integer(c, n, k, 0, INT64_MAX); }},
    {"rtt", [](C c, N n, K k, auto& g) { g.rtt = read_duration(c, n, k); }},
    {"jitter", [](C c, N n, K k, auto& g) { g.jitter = read_duration(c, n, k); }},
    {"half_close", [](C c, N n, K k, auto& g) { g.half_close = read_bool(c, n, k); }},
    {"send_after_connect", [](C c, N n, K k, auto& g) { g.send_after_connect = read_duration(c, n, k); }},
    {"arrivals",
     [](C c, N n, K k, auto& g) { g.arrivals = ClientGroup::Arrivals(read_choice(c, n, k, arrivals_names)); }},
    {"bytes", [](C c, N n, K k, auto& g) { g.path = read_bytes(c, n, k); }},
    {"framing",
     [](C c, N n, K k, auto& g) { g.framing = ClientGroup::Framing(read_choice(c, n, k, framing_names)); }},
    {"terminator",
     [](C c, N n, K k, auto& g) {
       g.terminator = read_escaped(c, n, k);
       if (g.terminator.empty()) c.fail(n.source(), cat(k, " is empty"), R"(e.g. terminator = "END\r\n")");
     }},
    {"answer_bytes", [](C c, N n, K k, auto& g) { g.answer_bytes = read_integer(c, n, k, 1, body_max); }},
};
const Section<ClientGroup> client_section{"clients", "[[clients]]", client_fields, "name", finish_group};

const Field<Expectation> expect_fields[] = {
    {"property",
     [](C c, N n, K k, auto& e) {
       e.property = property_names[read_choice(c, n, k, property_names)];
     }},
    {"of", [](C c, N n, K k, auto& e) { e.of = read_name(c, n, k); }},
    {"after", [](C c, N n, K k, auto& e) { e.after = read_name(c, n, k); }},
    {"max", [](C c, N n, K k, auto& e) { e.max = read_bound(c, n, k); }},
    {"min", [](C c, N n, K k, auto& e) { e.min = read_bound(c, n, k); }},
};
// Bounds in the unit their property measures, reported at the key that has the wrong one.
void finish_expectation(const Context& c, const toml::table& table, Expectation& e) {
  e.line = int(table.source().begin.line);
  const PropertyKind* kind = property_kind(e.property);  // read_choice took a known name
  bool counts = kind->measures == Measures::count;
  bool times = kind->measures == Measures::time;
  for (const char* key : {"max", "min"}) {
    const std::optional<Bound>& bound = key[1] == 'a' ? e.max : e.min;
    if (!bound) continue;
    bool is_count = bound->unit == Bound::Unit::count;
    if (counts && !is_count) {
      c.fail(table.get(key)->source(), cat("expect.", key, ": ", e.property, " counts, so its bound is a whole number, not \"", bound->text, "\""),
             cat("write it without quotes: ", key, " = 100"));
    }
    if (times && is_count) {
      c.fail(table.get(key)->source(), cat("expect.", key, ": ", e.property, " measures time, so ", bound->text, " needs a unit"),
             cat("for example ", key, " = \"500ms\" or ", key, " = \"3 requests\""));
    }
  }
  if (e.min && e.max && e.min->unit == e.max->unit && e.min->value > e.max->value) {
    c.fail(table.get("min")->source(), cat("min (", e.min->text, ") is greater than max (", e.max->text, ")"),
           "no run can hold between them");
  }
}
const Section<Expectation> expect_section{"expect", "[[expect]]", expect_fields, "property", finish_expectation};

const Field<Arm> arm_fields[] = {
    {"name", [](C c, N n, K k, auto& a) { a.name = read_arm_name(c, n, k); }},
    {"set", [](C c, N n, K k, auto& a) { a.set = read_set(c, n, k); }},
    {"expect_violated", [](C c, N n, K k, auto& a) { a.expect_violated = read_names(c, n, k); }},
};
const Section<Arm> arm_section{"arms", "[[arms]]", arm_fields, "name"};

constexpr std::int64_t buffer_max = 1 << 30;
constexpr std::size_t slack_choices_max = 16;

// One duration, or a set of them (each sleep's slack is then a choice point).
std::vector<Nanos> read_slack(C c, N n, K k) {
  if (!n.is_array()) return {read_duration(c, n, k)};
  std::vector<Nanos> out;
  for (const toml::node& item : as_array(c, n, k)) out.push_back(read_duration(c, item, k));
  if (out.empty() || out.size() > slack_choices_max)
    c.fail(n.source(), cat(k, " takes 1 to ", slack_choices_max, " durations"),
           R"(e.g. timer_slack = ["0us", "50us"])");
  return out;
}

constexpr std::string_view fault_kind_names[] = {"accept_error", "rlimit", "reset"};
constexpr std::string_view errno_names[] = {"EMFILE", "ENFILE", "ENOBUFS", "ECONNABORTED"};
constexpr int errno_values[] = {EMFILE, ENFILE, ENOBUFS, ECONNABORTED};

const Field<FaultSpec> fault_fields[] = {
    {"kind",
     [](C c, N n, K k, auto& f) {
       f.kind = FaultSpec::Kind(read_choice(c, n, k, fault_kind_names));
     }},
    {"at", [](C c, N n, K k, auto& f) { f.at = read_window(c, n, k); }},
    {"until", [](C c, N n, K k, auto& f) { f.until = read_duration(c, n, k, true); }},
    {"nth", [](C c, N n, K k, auto& f) { f.nth = std::uint64_t(read_integer(c, n, k, 1, INT64_MAX)); }},
    {"errno", [](C c, N n, K k, auto& f) { f.error = errno_values[read_choice(c, n, k, errno_names)]; }},
    {"value", [](C c, N n, K k, auto& f) { f.value = int(read_integer(c, n, k, 0)); }},
    {"count", [](C c, N n, K k, auto& f) { f.count = int(read_integer(c, n, k, 0)); }},
    {"of", [](C c, N n, K k, auto& f) { f.of = read_name(c, n, k); }},
    {"arms", [](C c, N n, K k, auto& f) { f.arms = read_names(c, n, k); }},
};

// Each kind of fault needs its own keys, and only those.
void check_fault(const Context& c, const toml::table& table, FaultSpec& f) {
  f.line = int(table.source().begin.line);
  const std::string_view kind = fault_kind_names[std::size_t(f.kind)];
  auto need = [&](std::string_view key, std::string_view example) {
    if (!table.contains(key)) c.fail(table.source(), cat(kind, " faults need ", key), cat("add ", example));
  };
  auto refuse = [&](std::string_view key) {
    if (const toml::node* n = table.get(key))
      c.fail(n->source(), cat(key, " means nothing to ", kind, " faults"), cat("remove ", key));
  };
  switch (f.kind) {
    case FaultSpec::Kind::accept_error:
      need("errno", R"(errno = "EMFILE")");
      for (auto key : {"value", "of"}) refuse(key);
      if (table.contains("nth") && table.contains("at"))
        c.fail(table.get("at")->source(), "an accept_error fault takes nth or at, not both",
               "nth picks one accept call; at and until a window of them: keep one");
      if (table.contains("nth") && table.contains("count"))
        c.fail(table.get("count")->source(), "count bounds the failures in an at/until window; nth picks one call",
               "remove count, or use at and until instead of nth");
      if (table.contains("until") && !table.contains("at"))
        c.fail(table.get("until")->source(), "until closes a window that at opens, and there is no at",
               table.contains("nth") ? "nth picks one accept call and needs no until: remove until"
                                     : R"(add at = "1s" before until)");
      if (!table.contains("nth") && !table.contains("at"))
        c.fail(table.source(), "an accept_error fault needs either nth or at (with until)",
               R"(e.g. nth = 3, or at = "1s" and until = "2s")");
      if (table.contains("at")) need("until", R"(until = "2s")");
      if (table.contains("at") && f.until <= f.at.hi)
        c.fail(table.get("until")->source(), f.at.fixed() ? "until must come after at" : "until must come after the end of at's window",
               "make the window non-empty");
      break;
    case FaultSpec::Kind::rlimit:
      need("at", R"(at = "1s")");
      need("value", "value = 64");
      for (auto key : {"until", "nth", "errno", "count", "of"}) refuse(key);
      break;
    case FaultSpec::Kind::reset:
      need("at", R"(at = "1s")");
      need("of", R"(of = "burst")");
      for (auto key : {"until", "nth", "errno", "value"}) refuse(key);
      break;
  }
}
const Section<FaultSpec> fault_section{"faults", "[[faults]]", fault_fields, "kind", check_fault};

const Field<Scenario> kernel_fields[] = {
    {"poller",
     [](C c, N n, K k, auto& s) {
       s.kernel.poller = poller_values[read_choice(c, n, k, poller_names)];
     }},
    {"listen_backlog",
     [](C c, N n, K k, auto& s) { s.kernel.listen_backlog = int(read_integer(c, n, k, 0)); }},
    {"somaxconn",
     [](C c, N n, K k, auto& s) { s.kernel.somaxconn = int(read_integer(c, n, k, 0)); }},
    {"rlimit_nofile",
     [](C c, N n, K k, auto& s) { s.kernel.rlimit_nofile = int(read_integer(c, n, k, 1)); }},
    {"file_max", [](C c, N n, K k, auto& s) { s.kernel.file_max = int(read_integer(c, n, k, 1)); }},
    {"abort_on_overflow",
     [](C c, N n, K k, auto& s) { s.kernel.abort_on_overflow = read_bool(c, n, k); }},
    {"timer_slack", [](C c, N n, K k, auto& s) { s.kernel.timer_slack = read_slack(c, n, k); }},
    {"send_buffer",
     [](C c, N n, K k, auto& s) { s.kernel.send_buffer = read_integer(c, n, k, 1, buffer_max); }},
    {"receive_buffer",
     [](C c, N n, K k, auto& s) { s.kernel.receive_buffer = read_integer(c, n, k, 1, buffer_max); }},
    {"send_buffer_max",
     [](C c, N n, K k, auto& s) { s.kernel.send_buffer_max = read_integer(c, n, k, 0, buffer_max); }},
};
const Section<Scenario> kernel_section{"kernel", "[kernel]", kernel_fields};

const Field<Scenario> loop_fields[] = {
    {"mode",
     [](C c, N n, K k, auto& s) { s.loop.mode = mode_values[read_choice(c, n, k, mode_names)]; }},
    {"workers", [](C c, N n, K k, auto& s) { s.workers = int(read_integer(c, n, k, 1, workers_max)); }},
    {"accept_batch",
     [](C c, N n, K k, auto& s) { s.loop.accept_batch = int(read_integer(c, n, k, 0)); }},
    {"accept_after_events",
     [](C c, N n, K k, auto& s) { s.loop.accept_after_events = read_bool(c, n, k); }},
    {"owe_unfinished_batch",
     [](C c, N n, K k, auto& s) { s.loop.owe_unfinished_batch = read_bool(c, n, k); }},
    {"nonblocking_wait_when_owed",
     [](C c, N n, K k, auto& s) { s.loop.nonblocking_wait_when_owed = read_bool(c, n, k); }},
    {"idle_timeout",
     [](C c, N n, K k, auto& s) { s.loop.idle_timeout = read_duration(c, n, k, true); }},
    {"max_events",
     [](C c, N n, K k, auto& s) { s.loop.max_events = int(read_integer(c, n, k, 1, max_events_max)); }},
    {"max_connections",
     [](C c, N n, K k, auto& s) { s.loop.max_connections = int(read_integer(c, n, k, 1)); }},
    {"pool_threads",
     [](C c, N n, K k, auto& s) { s.loop.pool_threads = int(read_integer(c, n, k, 1, workers_max)); }},
    {"owe_after_emfile", [](C c, N n, K k, auto& s) { s.loop.owe_after_emfile = read_bool(c, n, k); }},
    {"emfile_retry", [](C c, N n, K k, auto& s) { s.loop.emfile_retry = read_bool(c, n, k); }},
    {"emfile_backoff",
     [](C c, N n, K k, auto& s) { s.loop.emfile_backoff = read_duration(c, n, k, true); }},
    {"shutdown_clears_owed",
     [](C c, N n, K k, auto& s) { s.loop.shutdown_clears_owed = read_bool(c, n, k); }},
    {"shutdown_admits_handoffs",
     [](C c, N n, K k, auto& s) { s.loop.shutdown_admits_handoffs = read_bool(c, n, k); }},
    {"shutdown_serves_after_close",
     [](C c, N n, K k, auto& s) { s.loop.shutdown_serves_after_close = read_bool(c, n, k); }},
    {"shutdown_admits_past_capacity",
     [](C c, N n, K k, auto& s) { s.loop.shutdown_admits_past_capacity = read_bool(c, n, k); }},
    {"shutdown_before_batches",
     [](C c, N n, K k, auto& s) { s.loop.shutdown_before_batches = read_bool(c, n, k); }},
    {"owe_when_room", [](C c, N n, K k, auto& s) { s.loop.owe_when_room = read_bool(c, n, k); }},
    {"enobufs_retry", [](C c, N n, K k, auto& s) { s.loop.enobufs_retry = read_bool(c, n, k); }},
    {"inverted", [](C c, N n, K k, auto& s) { s.loop.inverted = read_bool(c, n, k); }},
    {"inverted_owed_passes",
     [](C c, N n, K k, auto& s) { s.loop.inverted_owed_passes = read_bool(c, n, k); }},
    {"inverted_owes_turns",
     [](C c, N n, K k, auto& s) { s.loop.inverted_owes_turns = read_bool(c, n, k); }},
    {"drain_chunk", [](C c, N n, K k, auto& s) { s.loop.drain_chunk = int(read_integer(c, n, k, 0)); }},
    {"yield_batch", [](C c, N n, K k, auto& s) { s.loop.yield_batch = int(read_integer(c, n, k, 0)); }},
    {"max_handles", [](C c, N n, K k, auto& s) { s.loop.max_handles = int(read_integer(c, n, k, 2)); }},
    {"handle_policy",
     [](C c, N n, K k, auto& s) {
       s.loop.handle_policy = HandlePolicy(read_choice(c, n, k, handle_policy_names));
     }},
    {"on_full",
     [](C c, N n, K k, auto& s) { s.loop.on_full = OnFull(read_choice(c, n, k, on_full_names)); }},
    {"accept_share", [](C c, N n, K k, auto& s) { s.loop.accept_share = read_bool(c, n, k); }},
    {"shutdown_drains_backlog",
     [](C c, N n, K k, auto& s) { s.loop.shutdown_drains_backlog = read_bool(c, n, k); }},
    {"drain_timeout", [](C c, N n, K k, auto& s) { s.loop.drain_timeout = read_duration(c, n, k); }},
    {"drain_closes_gracefully",
     [](C c, N n, K k, auto& s) { s.loop.drain_closes_gracefully = read_bool(c, n, k); }},
    {"drain_idle_grace", [](C c, N n, K k, auto& s) { s.loop.drain_idle_grace = read_duration(c, n, k); }},
    {"shutdown_between_handlers",
     [](C c, N n, K k, auto& s) { s.loop.shutdown_between_handlers = read_bool(c, n, k); }},
    {"head_timeout", [](C c, N n, K k, auto& s) { s.loop.head_timeout = read_duration(c, n, k); }},
    {"body_timeout", [](C c, N n, K k, auto& s) { s.loop.body_timeout = read_duration(c, n, k); }},
    {"keepalive_timeout",
     [](C c, N n, K k, auto& s) { s.loop.keepalive_timeout = read_duration(c, n, k); }},
    {"write_timeout", [](C c, N n, K k, auto& s) { s.loop.write_timeout = read_duration(c, n, k); }},
    {"max_input",
     [](C c, N n, K k, auto& s) { s.loop.max_input = int(read_integer(c, n, k, 0, buffer_max)); }},
    {"max_output",
     [](C c, N n, K k, auto& s) { s.loop.max_output = int(read_integer(c, n, k, 0, buffer_max)); }},
    {"share_counts_siblings", [](C c, N n, K k, auto& s) { s.loop.share_counts_siblings = read_bool(c, n, k); }},
    {"accept_thread", [](C c, N n, K k, auto& s) { s.loop.accept_thread = read_bool(c, n, k); }},
    {"shutdown_drops_listener_event",
     [](C c, N n, K k, auto& s) { s.loop.shutdown_drops_listener_event = read_bool(c, n, k); }},
    {"siblings_watch_listener", [](C c, N n, K k, auto& s) { s.loop.siblings_watch_listener = read_bool(c, n, k); }},
    {"resume_after_flush", [](C c, N n, K k, auto& s) { s.loop.resume_after_flush = read_bool(c, n, k); }},
    {"handoff_wakes_when_empty", [](C c, N n, K k, auto& s) { s.loop.handoff_wakes_when_empty = read_bool(c, n, k); }},
    {"short_read_drains", [](C c, N n, K k, auto& s) { s.loop.short_read_drains = read_bool(c, n, k); }},
    {"short_read_heeds_hangup", [](C c, N n, K k, auto& s) { s.loop.short_read_heeds_hangup = read_bool(c, n, k); }},
    {"watch_after_eager_read", [](C c, N n, K k, auto& s) { s.loop.watch_after_eager_read = read_bool(c, n, k); }},
    {"watch_served_connections", [](C c, N n, K k, auto& s) { s.loop.watch_served_connections = read_bool(c, n, k); }},
};
const Section<Scenario> loop_section{"loop", "[loop]", loop_fields};

constexpr std::string_view exec_hint = R"(e.g. exec = ["./uv_http", "--port", "8080"])";

std::vector<std::string> read_exec(C c, N n, K k) {
  std::vector<std::string> exec;
  for (const toml::node& item : c.as<toml::array>(n, k, "an array of strings", exec_hint)) {
    exec.push_back(c.as<std::string>(item, k, "a string", exec_hint));
    if (exec.back().find('\0') != std::string::npos)
      c.fail(item.source(), cat(k, ": an argument cannot hold a NUL"), exec_hint);
  }
  if (exec.empty() || exec.front().empty())
    c.fail(n.source(), cat(k, " must name a program"), exec_hint);
  return exec;
}

}  // namespace

// The target's folder: `dir` from the scenario file's folder, or that folder; absolute.
std::string target_folder(const std::string& file, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::path folder = fs::path(file).parent_path();
  if (!dir.empty()) folder = fs::path(dir).is_absolute() ? fs::path(dir) : folder / dir;
  return fs::absolute(folder.empty() ? fs::path(".") : folder, error).lexically_normal().string();
}

namespace {

// exec[0] as a path: with a slash, from the target's folder when relative; without one,
// looked up on PATH as a shell does. Empty when there is no such file.
std::string resolve_program(const std::string& folder, const std::string& name) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (name.find('/') != std::string::npos) {
    fs::path path = name.front() == '/' ? fs::path(name) : fs::path(folder) / name;
    return fs::is_regular_file(path, error) ? fs::absolute(path, error).lexically_normal().string() : std::string();
  }
  // Programs built with loopsim (itself, and its examples), beside it; then PATH.
  fs::path self = fs::read_symlink("/proc/self/exe", error).parent_path();
  for (const fs::path& built : {self / name, self / "examples" / name}) {
    if (!self.empty() && fs::is_regular_file(built, error)) return built.string();
  }
  const char* search = std::getenv("PATH");
  std::string_view dirs = search != nullptr ? search : "/usr/local/bin:/usr/bin:/bin";
  for (std::size_t start = 0; start <= dirs.size();) {
    std::size_t colon = std::min(dirs.find(':', start), dirs.size());
    fs::path dir(std::string(dirs.substr(start, colon - start)));
    if (!dir.empty() && fs::is_regular_file(dir / name, error)) return (dir / name).string();
    start = colon + 1;
  }
  return {};
}

void finish_target(const Context& c, const toml::table& table, Scenario& s) {
  if (!table.contains("exec"))
    c.fail(table.source(), "[target] needs exec, the program to run", exec_hint);
  if (!table.contains("port"))
    c.fail(table.source(), "[target] needs port, where the program listens", "e.g. port = 8080");
  TargetSpec& t = *s.target;
  t.folder = target_folder(c.file(), table["dir"].value_or(std::string()));
  std::error_code error;
  if (!std::filesystem::is_directory(t.folder, error)) {
    c.fail(table["dir"].node()->source(), cat("target.dir: no folder ", t.folder),
           "a relative dir is taken from the scenario file's folder");
  }
  t.program = resolve_program(t.folder, t.exec.front());
  if (t.program.empty())
    c.fail(table["exec"].node()->source(),
           cat("target.exec: no program \"", t.exec.front(), "\"",
               t.exec.front().find('/') != std::string::npos ? " (a relative path is taken from the target's folder)"
                                                             : " on PATH"),
           "a path with a slash is taken from the target's folder (target.dir, or the scenario file's); a bare name is looked for beside loopsim and among the examples built with it, then on PATH");
}

const Field<Scenario> target_fields[] = {
    {"exec", [](C c, N n, K k, auto& s) { s.target->exec = read_exec(c, n, k); }},
    {"port", [](C c, N n, K k, auto& s) { s.target->port = int(read_integer(c, n, k, 1, 65535)); }},
    {"call_cost", [](C c, N n, K k, auto& s) { s.target->call_cost = read_duration(c, n, k); }},
    {"dir", [](C c, N n, K k, auto&) { read_string(c, n, k); }},  // resolved in finish_target
    {"preemptions", [](C c, N n, K k, auto& s) { s.target->preemptions = int(read_integer(c, n, k, 0, 1000)); }},
    {"spin_limit", [](C c, N n, K k, auto& s) { s.target->spin_limit = read_duration(c, n, k, true); }},
};
const Section<Scenario> target_section{"target", "[target]", target_fields, {}, finish_target};

const Field<PosterSpec> poster_fields[] = {
    {"name", [](C c, N n, K k, auto& p) { p.name = read_name(c, n, k); }},
    {"at", [](C c, N n, K k, auto& p) { p.at = read_window(c, n, k); }},
    {"cost", [](C c, N n, K k, auto& p) { p.cost = read_duration(c, n, k); }},
    {"count", [](C c, N n, K k, auto& p) { p.count = int(read_integer(c, n, k, 1, clients_max)); }},
    {"every", [](C c, N n, K k, auto& p) { p.every = read_duration(c, n, k); }},
    {"worker", [](C c, N n, K k, auto& p) { p.worker = int(read_integer(c, n, k, 0, workers_max - 1)); }},
};
const Section<PosterSpec> poster_section{"posters", "[[posters]]", poster_fields, "name"};

constexpr std::string_view action_kind_names[] = {"shutdown", "signal"};
constexpr std::string_view signal_names[] = {"SIGTERM", "SIGINT", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGQUIT"};  // action_signals

void finish_action(const Context& c, const toml::table& table, ActionSpec& a) {
  const bool signal = a.kind == ActionSpec::Kind::signal;
  if (signal != table.contains("signal"))
    c.fail(table.contains("signal") ? table.get("signal")->source() : table.source(),
           "actions.signal goes with kind = \"signal\", and only with it", R"(kind = "signal", signal = "SIGTERM")");
}
const Field<ActionSpec> action_fields[] = {
    {"kind",
     [](C c, N n, K k, auto& a) { a.kind = ActionSpec::Kind(read_choice(c, n, k, action_kind_names)); }},
    {"at", [](C c, N n, K k, auto& a) { a.at = read_window(c, n, k); }},
    {"signal", [](C c, N n, K k, auto& a) { a.signal = action_signals[read_choice(c, n, k, signal_names)].first; }},
    // Read in check_builtin_signals, on top of the scenario's [loop], once that is read.
    {"reload", [](C c, N n, K k, auto& a) {
       as_table(c, n, k);
       a.reload = LoopConfig{};
     }},
};
const Section<ActionSpec> action_section{"actions", "[[actions]]", action_fields, "kind", finish_action};

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

const Field<Scenario> root_fields[] = {
    {"format", [](C c, N n, K k, Scenario&) { read_format(c, n, k); }},
    {"name", [](C c, N n, K k, auto& s) { s.name = read_name(c, n, k); }},
    {"description", [](C c, N n, K k, auto& s) { s.description = read_string(c, n, k); }},
    {"seed",
     [](C c, N n, K k, auto& s) { s.seed = std::uint64_t(read_integer(c, n, k, 0, INT64_MAX)); }},
    {"horizon", [](C c, N n, K k, auto& s) { s.horizon = read_duration(c, n, k, true); }},
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
const Section<Scenario> root_section{"", "the top-level table", root_fields};

constexpr std::string_view array_table_names[] = {"clients", "expect",  "arms",   "faults",
                                                  "posters", "actions", "choices"};

// ---- cross references: checked once every table has been read -----------------------------

// The nodes at `key` in each table of the array of tables `tables`, arrays flattened.
std::vector<const toml::node*> nodes_at(const toml::table& root, std::string_view tables,
                                        std::string_view key) {
  std::vector<const toml::node*> out;
  const toml::array* array = root[tables].as_array();
  if (array == nullptr) return out;
  for (const toml::node& table : *array) {
    const toml::node* node = table.as_table()->get(key);
    if (node != nullptr && node->is_array())
      for (const toml::node& item : *node->as_array()) out.push_back(&item);
    else if (node != nullptr)
      out.push_back(node);
  }
  return out;
}

// Fails at the first of `refs` (strings, already checked) that is not in `names`, or that
// repeats an earlier one when `unique`.
// Sets, not scans: a file may hold 100,000 groups.
void check_names(C c, const std::vector<const toml::node*>& refs,
                 std::span<const std::string_view> names, std::string_view what, bool unique) {
  const std::set<std::string_view> known(names.begin(), names.end());
  std::set<std::string_view> seen;
  for (const toml::node* ref : refs) {
    const std::string_view name = ref->as_string()->get();
    if (unique && !seen.insert(name).second)
      c.fail(ref->source(), cat(what, " \"", name, "\" is defined twice"), "give each one a name of its own");
    if (!unique && !known.contains(name))
      c.fail(ref->source(), cat(what, " \"", name, "\""), cat("known: ", join(names)));
  }
}

void check_references(C c, const toml::table& root, const Scenario& s) {
  std::vector<std::string_view> clients, arms, properties;
  for (const ClientGroup& group : s.clients) clients.push_back(group.name);
  for (const Arm& arm : s.arms) arms.push_back(arm.name);
  for (const Expectation& e : s.expect) properties.push_back(e.property);
  check_names(c, nodes_at(root, "clients", "name"), clients, "[[clients]]", true);
  check_names(c, nodes_at(root, "arms", "name"), arms, "[[arms]]", true);
  const std::set<std::string_view> client_set(clients.begin(), clients.end());
  std::vector<std::string_view> subjects = clients;  // `of` names a client group or a poster
  std::vector<std::string_view> posters;
  for (const PosterSpec& poster : s.posters) {
    subjects.push_back(poster.name);
    posters.push_back(poster.name);
  }
  check_names(c, nodes_at(root, "posters", "name"), posters, "[[posters]]", true);
  const std::set<std::string_view> poster_set(posters.begin(), posters.end());
  // post_latency is about a poster; the other properties with `of`, about a client group.
  if (const toml::array* expect = root["expect"].as_array()) {
    for (const toml::node& table : *expect) {
      const toml::table& t = *table.as_table();
      const toml::node* of = t.get("of");
      if (of == nullptr || !of->is_string()) continue;
      bool about_posts = t["property"].value_or(std::string()) == "post_latency";
      std::span<const std::string_view> names = about_posts ? std::span<const std::string_view>(posters)
                                                            : std::span<const std::string_view>(clients);
      const std::string_view name = of->as_string()->get();
      const bool known_here = about_posts ? poster_set.contains(name) : client_set.contains(name);
      if (!known_here && (client_set.contains(name) || poster_set.contains(name))) {
        c.fail(of->source(),
               cat("expect.of: \"", of->as_string()->get(), "\" is a ", about_posts ? "client group" : "poster",
                   "; ", about_posts ? "post_latency is about a [[posters]] entry" : "this property is about a [[clients]] group"),
               cat("known: ", join(names)));
      }
    }
  }
  check_names(c, nodes_at(root, "expect", "of"), subjects,
              "no [[clients]] group or [[posters]] entry is named", false);
  check_names(c, nodes_at(root, "expect", "after"), clients, "no [[clients]] group is named",
              false);
  check_names(c, nodes_at(root, "faults", "of"), clients, "no [[clients]] group is named", false);
  check_names(c, nodes_at(root, "faults", "arms"), arms, "no [[arms]] entry is named", false);
  std::vector<const toml::node*> workers = nodes_at(root, "posters", "worker");
  for (const toml::node* node : workers) {
    if (node->value<std::int64_t>().value_or(0) >= s.workers) {
      c.fail(node->source(), cat("posters.worker: there is no worker ", *node->value<std::int64_t>(), " with loop.workers = ", s.workers),
             cat("workers are numbered from 0 to ", s.workers - 1));
    }
  }
  check_names(c, nodes_at(root, "arms", "expect_violated"), properties,
              "no [[expect]] checks the property", false);
}

// A target is its own loop: the loop's knobs, posters and actions belong to the built-in one.
void check_target(C c, const toml::table& root) {
  constexpr std::string_view hint =
      "a target program is its own loop: only [kernel], [[clients]], [[faults]], [[actions]], [[expect]] and [[arms]] apply";
  if (const toml::table* loop = root["loop"].as_table()) {
    auto entries = in_document_order(*loop);
    const toml::source_region& at = entries.empty() ? loop->source() : entries.front().second->source();
    const std::string key = entries.empty() ? std::string("[loop]") : cat("loop.", entries.front().first->str());
    c.fail(at, cat(key, " is a knob of the built-in loop, and the scenario runs a [target]"), hint);
  }
  if (const toml::node* node = root.get("posters"))
    c.fail(node->source(), "[[posters]] cannot reach into a target program yet", hint);
  const toml::array* actions = root["actions"].as_array();
  for (std::size_t i = 0; actions != nullptr && i < actions->size(); ++i) {
    if (const toml::table* action = actions->get(i)->as_table(); action != nullptr && action->contains("reload"))
      c.fail(action->get("reload")->source(),
             "actions.reload configures the built-in loop; a target's SIGHUP is its own to handle",
             "leave reload out: the program gets the SIGHUP and does what it does with it");
  }
}

// The built-in loop takes the signals loopsim live takes: SIGTERM and SIGINT, and SIGHUP with a
// `reload` table, [loop]'s keys that may change live, read on top of the scenario's [loop].
void check_builtin_signals(C c, const toml::table& root, Scenario& s) {
  const toml::array* actions = root["actions"].as_array();
  for (std::size_t i = 0; actions != nullptr && i < s.actions.size() && i < actions->size(); ++i) {
    ActionSpec& a = s.actions[i];
    const toml::table& table = *actions->get(i)->as_table();
    if (const toml::node* reload = table.get("reload")) {
      if (a.kind != ActionSpec::Kind::signal || a.signal != 1)
        c.fail(reload->source(), "actions.reload goes with kind = \"signal\", signal = \"SIGHUP\"",
               R"(kind = "signal", signal = "SIGHUP", reload = { head_timeout = "200ms" })");
      const toml::table& keys = *reload->as_table();
      for (const auto& [key, value] : in_document_order(keys)) {  // each key alone: may it change live?
        toml::table one;
        one.insert(*key, *value);
        Scenario changed = s;
        read_fields(c, one, loop_section, changed);
        LoopConfig kept = s.loop;
        take_reloadable(kept, changed.loop);
        if (kept != changed.loop)
          c.fail(key->source(), cat("loop.", key->str(), " cannot change live: a reload leaves it as it was"),
                 "a reload changes the timeouts, max_request_head, max_input, max_output, accept_batch, drain_chunk "
                 "and yield_batch");
      }
      Scenario changed = s;
      read_fields(c, keys, loop_section, changed);
      a.reload = changed.loop;
      continue;
    }
    if (a.kind != ActionSpec::Kind::signal || a.signal == 15 || a.signal == 2) continue;
    c.fail(table.get("signal")->source(),
           "the built-in loop takes SIGTERM and SIGINT, as loopsim live does, and SIGHUP with a reload table; other "
           "signals reach a [target]",
           R"(signal = "SIGTERM")");
  }
}

// Ceilings on the whole file, not one key: the clients of all groups together, and the requests
// they send. Past them a run could not fit its trace (trace_events_max), so the file is refused
// at the group that crosses the line.
void check_totals(C c, const toml::table& root, const Scenario& s) {
  const toml::array* groups = root["clients"].as_array();
  std::int64_t clients = 0, requests = 0;
  for (std::size_t i = 0; groups != nullptr && i < s.clients.size() && i < groups->size(); ++i) {
    const ClientGroup& g = s.clients[i];
    const toml::table& table = *groups->get(i)->as_table();
    clients += g.count;
    requests += std::int64_t(g.count) * std::int64_t(g.closed_requests > 0 ? g.closed_requests : std::int64_t(g.requests.size()));
    const toml::node* count = table.get("count");
    // The last member connects at connect_at + (count - 1) / rate: it must be a time too.
    const __int128 last_ns = g.rate_milli > 0 ? __int128(g.connect_at.hi.count()) +
                                                    __int128(g.count - 1) * 1'000'000'000'000 / g.rate_milli
                                              : 0;
    if (last_ns > duration_max.count()) {
      const toml::node* rate = table.get("rate");
      c.fail(rate != nullptr ? rate->source() : table.source(),
             cat("at rate ", rate != nullptr ? toml_text(*rate) : std::string("?"), ", [[clients]] \"", g.name,
                 "\"'s last connection would start after 1,000,000 s"),
             "raise the rate or lower the count: every time in a scenario is at most 1,000,000 s");
    }
    if (clients > total_clients_max) {
      c.fail(count != nullptr ? count->source() : table.source(),
             cat("[[clients]] \"", g.name, "\" takes the scenario past ", total_clients_max, " clients in all"),
             "a scenario holds at most 1,000,000 clients over all its groups");
    }
    if (requests > total_requests_max) {
      const toml::node* list = table.get("requests");
      c.fail(list != nullptr ? list->source() : table.source(),
             cat("[[clients]] \"", g.name, "\" takes the scenario past ", total_requests_max, " requests in all"),
             "a scenario sends at most 5,000,000 requests (count x requests, over all groups)");
    }
  }
}

// A poster's last post comes at at + every x (count - 1): it must be a time too.
void check_poster_times(C c, const toml::table& root, const Scenario& s) {
  const toml::array* posters = root["posters"].as_array();
  for (std::size_t i = 0; posters != nullptr && i < s.posters.size() && i < posters->size(); ++i) {
    const PosterSpec& p = s.posters[i];
    const double last_ns = double(p.at.hi.count()) + double(p.every.count()) * double(p.count - 1);
    if (last_ns <= double(duration_max.count())) continue;
    const toml::table& table = *posters->get(i)->as_table();
    const toml::node* every = table.get("every");
    c.fail(every != nullptr ? every->source() : table.source(),
           cat("[[posters]] \"", p.name, "\"'s last post would come after 1,000,000 s"),
           "lower every or count: every time in a scenario is at most 1,000,000 s");
  }
}

Scenario to_scenario(C c, const toml::table& root) {
  Scenario s;
  s.file = c.file();
  s.name = std::filesystem::path(c.file()).stem().string();
  if (const toml::node* format = root.get("format")) read_format(c, *format, "format");
  read_fields(c, root, root_section, s);
  check_references(c, root, s);
  check_totals(c, root, s);
  check_poster_times(c, root, s);
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
