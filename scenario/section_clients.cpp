// The scenario reader's [[clients]] section: groups of clients, their requests (timed, or a
// closed loop's count), weighted paths, and a request's bytes as written.
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

}  // namespace loopsim::sim::reading
