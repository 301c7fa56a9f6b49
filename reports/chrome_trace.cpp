#include "reports/chrome_trace.hpp"

#include <ostream>

#include "reports/passes.hpp"
#include "reports/timeline.hpp"
#include "scenario/files.hpp"
#include "trace/trace_reader.hpp"

namespace loopsim::reports {

namespace {

using nlohmann::ordered_json;

constexpr int process_id = 1;

double micros(Duration t) { return double(t.count()) / 1000.0; }

ordered_json event(const char* ph, const std::string& name, const char* category, Instant t, int tid) {
  return ordered_json{{"ph", ph}, {"name", name}, {"cat", category}, {"ts", micros(since_start(t))},
                      {"pid", process_id}, {"tid", tid}};
}

ordered_json metadata(const char* what, int tid, const std::string& name) {
  ordered_json e{{"ph", "M"}, {"name", what}, {"ts", 0}, {"pid", process_id}, {"tid", tid}};
  e["args"] = {{"name", name}};
  return e;
}

std::string stops_of(const PassSummary& pass) {
  std::string stops;
  for (const DoorBatch& b : pass.batches) {
    stops += (stops.empty() ? "" : ",") + std::string(door_name(b.door)) + ":" + batch_stop_name(b.stop);
  }
  return stops.empty() ? "none" : stops;
}

void add_pass(ordered_json& events, const sim::Trace& trace, const PassSummary& pass) {
  bool owed = false;
  for (const DoorBatch& b : pass.batches) owed = owed || b.owed;
  ordered_json x = event("X", "pass " + std::to_string(pass.pass), "pass", pass.begin, pass.worker);
  x["dur"] = micros(pass.end - pass.begin);
  x["args"] = {{"pass", pass.pass},
               {"timeout", show_timeout(pass.timeout)},
               {"events", pass.events()},
               {"accepted", pass.accepted()},
               {"stop", stops_of(pass)},
               {"owed", owed},
               {"accept_owed", pass.accept_owed},
               {"handoff_owed", pass.handoff_owed},
               {"served", pass.served.size()},
               {"finished", pass.finished}};
  events.push_back(std::move(x));
  ordered_json wait = event("X", "wait", "wait", pass.begin, pass.worker);
  wait["dur"] = micros(pass.woke - pass.begin);
  events.push_back(std::move(wait));
  for (const ServedRequest& r : pass.served) {
    ordered_json serve = event("X", r.path.empty() ? "(unparsed)" : r.path, "serve", r.begin, pass.worker);
    serve["dur"] = micros(r.end - r.begin);
    if (r.client != sim::no_client) serve["args"] = {{"client", trace.client_name(r.client)}};
    events.push_back(std::move(serve));
  }
}

void add_request(ordered_json& events, const sim::Trace& trace, const RequestSpan& span,
                 std::size_t id, Instant run_end) {
  std::string name = span.path.empty() ? "(empty)" : span.path;
  const bool answered = span.answered.has_value();
  ordered_json b = event("b", name, "request", span.sent, span.worker);
  b["id"] = id;
  b["args"] = {{"client", trace.client_name(span.client)}};
  ordered_json e = event("e", name, "request", span.answered.value_or(run_end), span.worker);
  e["id"] = id;
  e["args"] = {{"answered", answered}};
  events.push_back(std::move(b));
  events.push_back(std::move(e));
}

void add_instants(ordered_json& events, const sim::Trace& trace) {
  for (const sim::TraceEvent& any : trace.events) {
    if (const auto* a = std::get_if<sim::ev::Accept>(&any)) {
      ordered_json i = event("i", "accept", "accept", a->t, a->worker);
      i["s"] = "t";
      i["args"] = {{"door", door_name(a->door)}, {"outcome", a->result >= 0 ? "ok" : sim::errno_name(-a->result)}};
      if (a->client != sim::no_client) i["args"]["client"] = trace.client_name(a->client);
      events.push_back(std::move(i));
    } else if (const auto* b = std::get_if<sim::ev::BatchEnd>(&any)) {
      ordered_json i = event("i", "batch_end", "accept", b->t, b->worker);
      i["s"] = "t";
      i["args"] = {{"door", door_name(b->door)}, {"accepted", b->accepted},
                   {"stop", batch_stop_name(b->stop)}, {"owed", b->owed}};
      events.push_back(std::move(i));
    }
  }
}

}  // namespace

nlohmann::ordered_json chrome_trace(const sim::Trace& trace) {
  PassView view = view_passes(trace);
  ordered_json events = ordered_json::array();
  events.push_back(metadata("process_name", 0, "loopsim " + trace.scenario + " (" + trace.arm + ")"));
  for (int w = 0; w < view.workers; ++w) events.push_back(metadata("thread_name", w, "worker " + std::to_string(w)));
  for (const PassSummary& pass : view.passes) add_pass(events, trace, pass);
  for (std::size_t r = 0; r < view.requests.size(); ++r) {
    add_request(events, trace, view.requests[r], r + 1, view.run_end);
  }
  add_instants(events, trace);
  ordered_json doc;
  doc["traceEvents"] = std::move(events);
  doc["displayTimeUnit"] = "ms";
  doc["otherData"] = {{"scenario", trace.scenario}, {"arm", trace.arm}, {"seed", trace.seed}};
  return doc;
}

void write_chrome_trace(const sim::Trace& trace, const std::string& path) {
  const std::string text = chrome_trace(trace).dump();
  const std::string why = sim::write_output_file(path, [&](std::ostream& out) { out << text << '\n'; });
  if (!why.empty()) throw RenderError("cannot write " + path + why);
}

}  // namespace loopsim::reports
