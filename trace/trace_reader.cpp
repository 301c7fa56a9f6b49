#include "trace/trace_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>

#include "base/assert.hpp"
#include "model/choice.hpp"
#include "scenario/scenario.hpp"

namespace loopsim::sim {

namespace {

using nlohmann::json;

// No time in a trace is later than this: twice the longest horizon a scenario may have.
constexpr std::int64_t trace_time_max = 2 * sim::duration_max.count();

std::string located(const std::string& name, std::size_t line, std::size_t column, const std::string& what) {
  return name + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + what;
}

// One parsed line and where it came from; typed field access that fails with the line number.
class ParsedLine {
 public:
  ParsedLine(const json& object, const std::string& text, const std::string& name, std::size_t number)
      : object_(object), text_(text), name_(name), number_(number) {}

  // "file:line:column: what", the column that of the field `key` in the line, else 1.
  [[noreturn]] void fail(const std::string& what, const std::string& hint, const char* key = nullptr) const {
    throw TraceError(located(name_, number_, column_of(key), what), hint);
  }
  bool has(const char* key) const { return object_.contains(key); }
  const json& field(const char* key) const {
    auto it = object_.find(key);
    if (it == object_.end()) fail(std::string("missing field \"") + key + "\"", schema_hint);
    return *it;
  }
  std::int64_t integer(const char* key) const {
    const json& value = field(key);
    bool fits = value.is_number_integer() &&
                !(value.is_number_unsigned() &&
                  value.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max()));
    if (!fits) fail(std::string("\"") + key + "\" must be an integer", schema_hint, key);
    return value.get<std::int64_t>();
  }
  // A seed or a pass number: written back as the unsigned number it is, so never below 0.
  std::uint64_t natural(const char* key) const {
    std::int64_t value = integer(key);
    if (value < 0) fail(std::string("\"") + key + "\" must be 0 or more", schema_hint, key);
    return std::uint64_t(value);
  }
  int small(const char* key) const {
    std::int64_t value = integer(key);
    if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max()) {
      fail(std::string("\"") + key + "\" is out of range", schema_hint, key);
    }
    return int(value);
  }
  // For fields that older traces lack.
  std::int64_t integer_or(const char* key, std::int64_t absent) const {
    return has(key) ? integer(key) : absent;
  }
  // An instant or a span in the trace: 0 up to trace_time_max. `timeout_ns` alone may be -1.
  // A wait's timeout: a time, or -1 for none.
  std::optional<Duration> timeout(const char* key) const {
    const Duration value = time(key, true);
    if (value < Duration(0)) return std::nullopt;
    return value;
  }
  Duration time(const char* key, bool forever_allowed = false) const {
    std::int64_t value = integer(key);
    if ((value < 0 && !(forever_allowed && value == -1)) || value > trace_time_max) {
      fail(std::string("\"") + key + "\" must lie in [0, " + std::to_string(trace_time_max) + "] ns" +
               (forever_allowed ? " or be -1" : ""),
           schema_hint, key);
    }
    return Duration(value);
  }
  Instant instant(const char* key) const { return Instant{time(key)}; }
  bool flag(const char* key) const {
    const json& value = field(key);
    if (!value.is_boolean()) fail(std::string("\"") + key + "\" must be true or false", schema_hint, key);
    return value.get<bool>();
  }
  // A string field: a trace's strings are bytes, each above 0x7f written as \u0080..\u00ff
  // (trace/trace.cpp, append_quoted), so each such character is one byte again. A character
  // beyond U+00FF (a hand-written trace's) stays as its UTF-8.
  std::string text(const char* key) const {
    const json& value = field(key);
    if (!value.is_string()) fail(std::string("\"") + key + "\" must be a string", schema_hint, key);
    return sim::latin1_bytes(value.get_ref<const std::string&>());
  }
  // A read's or a write's result: the bytes moved, or the failure's errno name in "error".
  std::int64_t moved(const char* key) const {
    if (has("error")) return -errno_field("error");
    return integer(key);
  }
  int errno_field(const char* key) const {
    const std::string& name = text(key);
    if (name == "EOTHER") return EIO;  // an errno the trace does not name; written as EOTHER again
    int value = sim::errno_from_name(name);
    if (value == 0) fail("unknown errno name \"" + name + "\"", "names are EAGAIN, EMFILE, ...", key);
    return value;
  }
  Door door() const {
    for (Door d : {Door::listener, Door::handoff}) {
      if (text("door") == door_name(d)) return d;
    }
    fail("unknown door \"" + text("door") + "\"", "doors are listener and handoff", "door");
  }
  BatchStop stop() const {
    for (int s = 0; s <= int(BatchStop::error); ++s) {
      if (text("stop") == batch_stop_name(BatchStop(s))) return BatchStop(s);
    }
    fail("unknown batch stop \"" + text("stop") + "\"", "stops are count, EAGAIN, EMFILE, ...", "stop");
  }
  DrainPoint point() const {
    for (DrainPoint p : {DrainPoint::top, DrainPoint::chunk}) {
      if (text("point") == drain_point_name(p)) return p;
    }
    fail("unknown drain point \"" + text("point") + "\"", "points are top and chunk", "point");
  }

  static constexpr const char* schema_hint = "the trace schema is docs/trace.md";

 private:
  std::size_t column_of(const char* key) const {
    if (key == nullptr) return 1;
    const auto at = text_.find(std::string("\"") + key + "\"");
    return at == std::string::npos ? 1 : at + 1;
  }

  const json& object_;
  const std::string& text_;
  const std::string& name_;
  std::size_t number_;
};

// Client labels as met in the file; final indices are assigned once every label is known.
class ClientBook {
 public:
  // The client an event of the clients' side is about: it must name one.
  sim::ClientIndex required(const ParsedLine& line) {
    if (!line.has("client")) line.fail("missing field \"client\"", ParsedLine::schema_hint);
    return provisional(line);
  }
  // The client a loop's event is about, if the loop knew it.
  sim::ClientIndex provisional(const ParsedLine& line) {
    if (!line.has("client")) return sim::no_client;
    const std::string& label = line.text("client");
    auto [it, added] = ids_.try_emplace(label, sim::ClientIndex(labels_.size()));
    if (added) labels_.push_back(parse(label, line));
    return it->second;
  }
  // Fills the trace's groups and clients; returns each provisional id's final index.
  std::vector<sim::ClientIndex> finish(sim::Trace& trace) const;

 private:
  struct Label {
    std::int32_t group;
    std::int32_t member;  // -1: a group of one
  };
  Label parse(const std::string& label, const ParsedLine& line) {
    if (label.empty()) line.fail("empty client label", "labels are \"fast\" or \"burst#17\"", "client");
    std::string group = label;
    std::int32_t member = -1;
    auto hash = label.rfind('#');
    bool numbered = hash != std::string::npos && hash > 0 && hash + 1 < label.size() &&
                    hash + 10 > label.size() &&  // at most 9 digits: no overflow
                    std::all_of(label.begin() + std::ptrdiff_t(hash) + 1, label.end(),
                                [](char c) { return c >= '0' && c <= '9'; });
    if (numbered) {
      group = label.substr(0, hash);
      member = std::int32_t(std::stol(label.substr(hash + 1)));
    }
    auto [it, added] = groups_.try_emplace(group, std::int32_t(group_names_.size()));
    if (added) group_names_.push_back(group);
    return {it->second, member};
  }

  std::unordered_map<std::string, sim::ClientIndex> ids_;
  std::vector<Label> labels_;
  std::unordered_map<std::string, std::int32_t> groups_;
  std::vector<std::string> group_names_;
};

std::vector<sim::ClientIndex> ClientBook::finish(sim::Trace& trace) const {
  trace.groups = group_names_;
  trace.group_sizes.assign(group_names_.size(), 1);
  for (const Label& l : labels_) {
    auto& size = trace.group_sizes[std::size_t(l.group)];
    if (l.member >= 0) size = std::max({size, l.member + 1, 2});
  }
  std::vector<sim::ClientIndex> order(labels_.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = sim::ClientIndex(i);
  std::sort(order.begin(), order.end(), [this](sim::ClientIndex a, sim::ClientIndex b) {
    const Label& x = labels_[std::size_t(a)];
    const Label& y = labels_[std::size_t(b)];
    return std::pair(x.group, x.member) < std::pair(y.group, y.member);
  });
  std::vector<sim::ClientIndex> final_index(labels_.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    const Label& l = labels_[std::size_t(order[i])];
    final_index[std::size_t(order[i])] = sim::ClientIndex(i);
    trace.clients.push_back(sim::ClientLabel{l.group, std::max(l.member, 0), 0});
  }
  return final_index;
}

std::optional<sim::TraceEvent> loop_event(const std::string& kind, const ParsedLine& l, Instant t,
                                          ClientBook& book) {
  if (kind == "pass_begin") {
    return ev::PassBegin{t, l.small("worker"), l.natural("pass"), l.timeout("timeout_ns")};
  }
  if (kind == "events") {
    const json& fds = l.field("fds");
    if (!fds.is_array()) l.fail("\"fds\" must be an array", ParsedLine::schema_hint, "fds");
    ev::Events e{t, l.small("worker"), l.natural("pass"), {}};
    for (const json& fd : fds) {
      if (!fd.is_number_integer()) l.fail("\"fds\" must hold integers", ParsedLine::schema_hint, "fds");
      e.fds.push_back(fd.get<int>());
    }
    if (l.integer("count") != std::int64_t(e.fds.size())) {
      l.fail("\"count\" differs from the number of \"fds\"", ParsedLine::schema_hint, "count");
    }
    if (l.has("work")) e.work = l.small("work");
    return e;
  }
  if (kind == "accept") {
    bool ok = l.text("outcome") == "ok";
    int result = ok ? l.small("fd") : -l.errno_field("outcome");
    return ev::Accept{t, l.small("worker"), l.door(), result, book.provisional(l)};
  }
  if (kind == "batch_end") {
    return ev::BatchEnd{t, l.small("worker"), l.door(), l.small("accepted"), l.stop(), l.flag("owed")};
  }
  if (kind == "request_begin") {
    return ev::RequestBegin{t, l.small("worker"), l.small("fd"), book.provisional(l), l.text("path")};
  }
  if (kind == "request_end") {
    return ev::RequestEnd{t, l.small("worker"), l.small("fd"), book.provisional(l), l.small("status")};
  }
  if (kind == "close") return ev::Close{t, l.small("worker"), l.small("fd"), book.provisional(l)};
  if (kind == "pass_end") {
    return ev::PassEnd{t, l.small("worker"), l.natural("pass"), l.flag("accept_owed"),
                       l.flag("handoff_owed")};
  }
  return std::nullopt;
}

// What the loop reports under rules R5 (shutdown), R7 (posts), R9 (a full handle table) and
// R10 (hand-offs).
std::optional<sim::TraceEvent> rule_event(const std::string& kind, const ParsedLine& l, Instant t,
                                          ClientBook& book) {
  if (kind == "post") return ev::Post{t, l.integer("id"), l.text("poster")};
  if (kind == "post_run") return ev::PostRun{t, l.small("worker"), l.integer("id")};
  if (kind == "drain") return ev::Drain{t, l.small("worker"), l.point(), l.small("count")};
  if (kind == "refuse") return ev::Refuse{t, l.small("worker"), l.small("fd"), book.provisional(l)};
  if (kind == "backpressure") return ev::Backpressure{t, l.small("worker"), l.small("held")};
  if (kind == "shutdown_begin") return ev::ShutdownBegin{t, l.small("worker")};
  if (kind == "listener_closed") return ev::ListenerClosed{t, l.small("worker")};
  if (kind == "loop_exit") return ev::LoopExit{t, l.small("worker"), l.small("open_connections")};
  if (kind == "process_exit") return ev::ProcessExit{t, l.small("status"), int(l.integer_or("signal", 0))};
  if (kind == "shutdown_asked") return ev::ShutdownAsked{t};
  if (kind == "child") {
    return ev::Child{t, l.small("worker"), l.small("status"), int(l.integer_or("signal", 0)), l.text("call")};
  }
  if (kind == "gave_way") return ev::GaveWay{t, l.small("worker")};
  if (kind == "unframed") return ev::Unframed{t, book.required(l), l.text("bytes")};
  if (kind == "read") return ev::Read{t, book.required(l), l.integer("asked"), l.moved("got")};
  if (kind == "write") return ev::Wrote{t, book.required(l), l.integer("offered"), l.moved("took")};
  if (kind == "left") return ev::Left{t, book.required(l), l.integer("unread"), l.integer("unsent")};
  if (kind == "handoff") return ev::Handoff{t, l.small("worker"), l.small("to"), book.provisional(l)};
  return std::nullopt;
}

sim::TraceEvent choice_event(const ParsedLine& l, Instant t) {
  auto kind = model::choice_kind_from_name(l.text("kind"));
  if (!kind) l.fail("unknown choice kind \"" + l.text("kind") + "\"", "kinds are order, fault, slack", "kind");
  std::int64_t options = l.integer("options"), pick = l.integer("pick");
  if (options > std::numeric_limits<std::uint32_t>::max() || pick < 0 || pick >= options) {
    l.fail("a choice's pick must lie in [0, options)", ParsedLine::schema_hint, "pick");
  }
  return ev::Choice{t, std::uint8_t(*kind), std::uint32_t(options), std::uint32_t(pick)};
}

sim::TraceEvent event_of(const ParsedLine& l, ClientBook& book) {
  Instant t = l.instant("t");
  const std::string& kind = l.text("ev");
  if (kind == "connect") return ev::Connect{t, book.required(l)};
  if (kind == "established") return ev::Established{t, book.required(l)};
  if (kind == "syn_dropped") return ev::SynDropped{t, book.required(l), l.instant("retry_at")};
  if (kind == "refused") return ev::Refused{t, book.required(l), l.errno_field("error")};
  if (kind == "send") return ev::Send{t, book.required(l), l.text("path")};
  if (kind == "answer") return ev::Answer{t, book.required(l), l.text("path"), l.small("status")};
  if (kind == "peer_closed") return ev::PeerClosed{t, book.required(l)};
  if (kind == "choice") return choice_event(l, t);
  if (kind == "rlimit") return ev::Rlimit{t, l.integer("value")};
  if (kind == "reset") return ev::Reset{t, book.required(l)};
  if (kind == "lasso") {
    return ev::Lasso{t, l.instant("since"), l.integer("backlog"), l.integer("dead_end") != 0};
  }
  if (kind == "run_end") {
    return ev::RunEnd{t, l.integer("backlog"), l.integer("open_connections"),
                      l.integer_or("handoffs", 0), l.integer_or("open_descriptors", 0)};
  }
  if (auto e = loop_event(kind, l, t, book)) return *e;
  if (auto e = rule_event(kind, l, t, book)) return *e;
  l.fail("unknown event kind \"" + kind + "\"", "kinds are listed in docs/trace.md", "ev");
}

// What a line holds is the kind it names, as the schema (sim::event_kinds) has it.
sim::TraceEvent checked_event_of(const ParsedLine& l, ClientBook& book) {
  sim::TraceEvent event = event_of(l, book);
  LOOPSIM_ASSERT(l.text("ev") == sim::kind_of(event));
  return event;
}

void read_header(const ParsedLine& l, sim::Trace& trace) {
  if (!l.has("loopsim_trace")) l.fail("not a loopsim trace: no header", "write one with loopsim run --trace F");
  if (l.integer("loopsim_trace") != 1) l.fail("unsupported trace version", "this loopsim reads version 1", "loopsim_trace");
  trace.scenario = l.text("scenario");
  trace.arm = l.text("arm");
  trace.seed = l.natural("seed");
  trace.horizon = l.instant("horizon_ns");
  trace.listener_fd = l.small("listener_fd");
  trace.accept_batch = l.integer("accept_batch");
  trace.max_connections = l.integer_or("max_connections", 0);
  trace.workers = l.integer_or("workers", 1);
  if (l.has("cut")) trace.cut = l.text("cut");
  if (l.has("stalled")) trace.stalled = l.flag("stalled");
  if (l.has("liveness_watched")) trace.liveness_watched = l.flag("liveness_watched");
  if (l.has("keep")) {
    const nlohmann::json& keep = l.field("keep");
    if (!keep.is_number_unsigned()) l.fail("\"keep\" must be a whole number (a mask of event kinds)", ParsedLine::schema_hint, "keep");
    trace.keep = keep.get<sim::EventMask>();
  }
  if (trace.workers < 1 || trace.workers > 256)  // as many as a scenario may have
    l.fail("\"workers\" must lie in [1, 256]", ParsedLine::schema_hint, "workers");
}

// A loop's event names a worker the header counted: the views keep a row a worker.
void check_workers(const ParsedLine& line, const sim::TraceEvent& event, std::int64_t workers) {
  std::visit(
      [&](const auto& e) {
        if constexpr (requires { e.worker; }) {
          if (e.worker < 0 || e.worker >= workers)
            line.fail("\"worker\" is " + std::to_string(e.worker) + ", but the header counts " +
                          std::to_string(workers) + " worker(s)", ParsedLine::schema_hint, "worker");
        }
        if constexpr (requires { e.to; }) {
          if (e.to < 0 || e.to >= workers)
            line.fail("\"to\" is " + std::to_string(e.to) + ", but the header counts " + std::to_string(workers) +
                          " worker(s)", ParsedLine::schema_hint, "to");
        }
      },
      event);
}

json parse_line(const std::string& text, const std::string& name, std::size_t number) {
  try {
    json object = json::parse(text);
    if (object.is_object()) return object;
  } catch (const json::parse_error& e) {
    throw TraceError(located(name, number, std::max<std::size_t>(1, e.byte), "not JSON"),
                     "a trace has one JSON object a line");
  } catch (const json::exception&) {  // a number out of range, ...
    throw TraceError(located(name, number, 1, "not JSON loopsim can read"),
                     "a trace has one JSON object a line");
  }
  throw TraceError(located(name, number, 1, "not a JSON object"),
                   "a trace has one JSON object a line");
}

void renumber_clients(sim::Trace& trace, const std::vector<sim::ClientIndex>& final_index) {
  for (sim::TraceEvent& event : trace.events) {
    std::visit(
        [&](auto& e) {
          if constexpr (requires { e.client; }) {
            if (e.client != sim::no_client) e.client = final_index[std::size_t(e.client)];
          }
        },
        event);
  }
  for (const sim::TraceEvent& event : trace.events) {
    if (const auto* send = std::get_if<ev::Send>(&event)) ++trace.clients[std::size_t(send->client)].requests;
  }
}

}  // namespace

sim::Trace read_jsonl(std::istream& in, const std::string& name) {
  sim::Trace trace;
  ClientBook book;
  std::string text;
  std::size_t number = 0;
  bool header = false;
  Instant last{};
  while (std::getline(in, text)) {
    ++number;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    json object = parse_line(text, name, number);
    ParsedLine line(object, text, name, number);
    if (!header) {
      read_header(line, trace);
      header = true;
      continue;
    }
    trace.events.push_back(checked_event_of(line, book));
    check_workers(line, trace.events.back(), trace.workers);
    // Events are written as they happen: virtual time never goes back.
    Instant t = sim::time_of(trace.events.back());
    if (t < last) line.fail("\"t\" goes back in time (" + std::to_string(since_start(t).count()) + " after " +
                            std::to_string(since_start(last).count()) + ")", "a trace's events are in time order", "t");
    last = t;
  }
  if (!header) throw TraceError(located(name, 1, 1, "empty trace, no header line"), "write one with loopsim run --trace F");
  renumber_clients(trace, book.finish(trace));
  return trace;
}

sim::Trace read_trace_file(const std::string& path) {
  std::ifstream in;
  try {
    in = sim::open_input(path, sim::trace_file_max, "trace");
  } catch (const sim::ScenarioError& e) {
    throw TraceError(e.what(), e.hint);
  }
  return read_jsonl(in, path);
}

}  // namespace loopsim::sim
