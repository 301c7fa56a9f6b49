#include "checker/properties.hpp"

#include "checker/loop_properties.hpp"
#include "scenario/properties.hpp"
#include "sim/world.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <map>

#include "base/assert.hpp"
#include "checker/loop_properties.hpp"

namespace loopsim::checker {

using sim::Trace;
using sim::TraceEvent;
namespace ev = sim::ev;

namespace {

// The time and event index of each answer to a member of `group`, in trace order.
std::vector<std::pair<Instant, std::size_t>> answers_of(const Trace& trace, const std::string& group) {
  std::vector<std::pair<Instant, std::size_t>> out;
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    auto* a = std::get_if<ev::Answer>(&trace.events[i]);
    if (a != nullptr && trace.group_of(a->client) == group) out.emplace_back(a->t, i);
  }
  return out;
}

bool group_exists(const Trace& trace, const std::string& group) {
  return std::find(trace.groups.begin(), trace.groups.end(), group) != trace.groups.end();
}

Verdict missing_group(Verdict v, const std::string& group) {
  v.held = false;
  v.detail = "no client group named \"" + group + "\"";
  return v;
}

// The requests `group` meant to send (Trace::clients), answered or not.
std::int64_t requests_of(const Trace& trace, const std::string& group) {
  std::int64_t asked = 0;
  for (std::size_t c = 0; c < trace.clients.size(); ++c) {
    if (trace.group_of(sim::ClientIndex(c)) == group) asked += trace.clients[c].requests;
  }
  return asked;
}

// The requests of a group that got no answer, counted against what its clients meant to send,
// so that a client which never got to send is counted too. `first` names the earliest: the
// send left unanswered, or the connect of a client that never sent it.
struct Unanswered {
  std::int64_t count = 0;
  std::int64_t asked = 0;
  std::optional<std::size_t> first;
};

Unanswered unanswered_of(const Trace& trace, const std::string& group) {
  struct Seen {
    std::int32_t answers = 0;
    std::vector<std::size_t> sends;
    std::optional<std::size_t> connect;
  };
  std::map<sim::ClientIndex, Seen> seen;
  auto mine = [&](sim::ClientIndex client) { return trace.group_of(client) == group; };
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& event = trace.events[i];
    if (auto* c = std::get_if<ev::Connect>(&event); c != nullptr && mine(c->client)) {
      seen[c->client].connect = seen[c->client].connect.value_or(i);
    } else if (auto* s = std::get_if<ev::Send>(&event); s != nullptr && mine(s->client)) {
      seen[s->client].sends.push_back(i);
    } else if (auto* a = std::get_if<ev::Answer>(&event); a != nullptr && mine(a->client)) {
      ++seen[a->client].answers;
    }
  }
  Unanswered out;
  out.asked = requests_of(trace, group);
  for (std::size_t c = 0; c < trace.clients.size(); ++c) {
    if (trace.group_of(sim::ClientIndex(c)) != group) continue;
    const Seen& s = seen[sim::ClientIndex(c)];
    std::int32_t want = trace.clients[c].requests;
    if (s.answers >= want) continue;  // answers beyond it are answered's to judge
    out.count += want - s.answers;
    auto answered = std::size_t(s.answers);
    auto at = answered < s.sends.size() ? std::optional(s.sends[answered]) : s.connect;
    if (at) out.first = std::min(out.first.value_or(*at), *at);
  }
  if (out.count > 0 && !out.first && !trace.events.empty()) out.first = trace.events.size() - 1;
  return out;
}

Verdict never_answered(Verdict v, const std::string& group, const Unanswered& lost) {
  v.held = false;
  v.measured = -1;
  v.first_bad = lost.first;
  v.detail = "\"" + group + "\" was never answered";
  return v;
}

// Some of the group's requests got no answer: there is nothing honest to measure.
Verdict left_unanswered(Verdict v, const std::string& group, const Unanswered& lost,
                        const std::string& consequence) {
  v.held = false;
  v.measured = -1;
  v.first_bad = lost.first;
  v.detail = std::to_string(lost.count) + " of " + std::to_string(lost.asked) + " request(s) of " +
             group + " never answered" + consequence;
  return v;
}

// Each request of `group` to its answer; a client's answers come in the order of its sends.
struct RequestTimes {
  Duration worst{0};
  std::optional<std::size_t> first_over;  // the first answer later than the bound
  std::optional<std::size_t> unanswered;  // the first send never answered
};

RequestTimes request_times(const Trace& trace, const std::string& group, std::int64_t bound) {
  std::map<sim::ClientIndex, std::deque<std::pair<Instant, std::size_t>>> sent;  // per client
  RequestTimes out;
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& event = trace.events[i];
    auto* s = std::get_if<ev::Send>(&event);
    if (s != nullptr && trace.group_of(s->client) == group) sent[s->client].emplace_back(s->t, i);
    auto* a = std::get_if<ev::Answer>(&event);
    if (a == nullptr || trace.group_of(a->client) != group || sent[a->client].empty()) continue;
    Duration took = a->t - sent[a->client].front().first;
    sent[a->client].pop_front();
    out.worst = std::max(out.worst, took);
    if (took.count() > bound && !out.first_over) out.first_over = i;
  }
  for (const auto& [client, waiting] : sent) {
    if (waiting.empty()) continue;
    std::size_t at = waiting.front().second;
    out.unanswered = std::min(out.unanswered.value_or(at), at);
  }
  return out;
}

// latency without `after`: the worst time from one of the group's requests to its answer.
Verdict latency_of_requests(const Trace& trace, const std::string& group, Verdict v) {
  RequestTimes times = request_times(trace, group, v.bound);
  if (times.unanswered) {
    v.held = false;
    v.measured = -1;
    v.first_bad = times.unanswered;
    v.detail = "a request of " + group + " was never answered";
    return v;
  }
  v.measured = times.worst.count();
  v.held = !times.first_over;
  if (!v.held) {
    v.first_bad = times.first_over;
    v.detail = group + " answered " + ms_text(times.worst) + " after its request";
  }
  return v;
}

// The loop is idle while every worker sits blocked in its wait. at(t) is the idle time
// accumulated up to t, so a connection that reached its door at q and was taken at a waited
// at(a) - at(q) while the loop was idle.
class IdleClock {
 public:
  explicit IdleClock(std::int64_t workers)
      : blocked_(std::size_t(std::max<std::int64_t>(1, workers)), false) {}
  Duration at(Instant t) const { return total_ + (since_ ? t - *since_ : Duration(0)); }
  void set_blocked(int worker, bool now_blocked, Instant t) {
    auto w = std::size_t(worker);
    if (w >= blocked_.size() || blocked_[w] == now_blocked) return;
    blocked_[w] = now_blocked;
    if (now_blocked && ++blocked_count_ == blocked_.size()) since_ = t;
    if (now_blocked) return;
    if (blocked_count_-- == blocked_.size() && since_) total_ += t - *since_;
    since_.reset();
  }

 private:
  std::vector<bool> blocked_;
  std::size_t blocked_count_ = 0;
  Duration total_{0};
  std::optional<Instant> since_;
};

// The longest a connection waited at a door (R1: the listener's backlog, or the hand-off
// channel a sibling passed it on) while the loop was idle, and the accept that ended the wait.
struct DoorWait {
  Duration worst{0};
  std::optional<std::size_t> at;
  Door door = Door::listener;
};

DoorWait longest_idle_wait(const Trace& trace) {
  IdleClock idle(trace.workers);
  std::map<sim::ClientIndex, Duration> reached;  // idle time when each connection reached its door
  DoorWait out;
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& event = trace.events[i];
    Instant t = sim::time_of(event);
    if (auto* p = std::get_if<ev::PassBegin>(&event)) {
      idle.set_blocked(p->worker, p->timeout != Duration(0), t);
    }
    if (auto* e = std::get_if<ev::Events>(&event)) idle.set_blocked(e->worker, false, t);
    if (auto* e = std::get_if<ev::Established>(&event)) reached[e->client] = idle.at(t);
    if (auto* h = std::get_if<ev::Handoff>(&event)) reached[h->client] = idle.at(t);
    auto* a = std::get_if<ev::Accept>(&event);
    if (a == nullptr || a->client == sim::no_client || !reached.count(a->client)) continue;
    Duration waited = idle.at(t) - reached[a->client];
    reached.erase(a->client);
    if (waited <= out.worst) continue;
    out = {waited, i, a->door};
  }
  return out;
}

}  // namespace

Duration request_cost(const Trace& trace) {
  std::map<int, Instant> begun;  // fd -> begin time; requests on one descriptor are sequential
  std::vector<Duration> costs;
  for (const TraceEvent& event : trace.events) {
    if (auto* b = std::get_if<ev::RequestBegin>(&event)) begun[b->fd] = b->t;
    if (auto* e = std::get_if<ev::RequestEnd>(&event); e != nullptr && begun.count(e->fd)) {
      costs.push_back(e->t - begun[e->fd]);
      begun.erase(e->fd);
    }
  }
  if (costs.empty()) return Duration(0);
  std::nth_element(costs.begin(), costs.begin() + std::ptrdiff_t(costs.size() / 2), costs.end());
  return costs[costs.size() / 2];
}

Verdict bounded_by_max(const std::string& property, const sim::Expectation& expect,
                       const Costs& costs) {
  Verdict v;
  v.property = property;
  v.of = expect.of;
  if (expect.max) {
    v.bound = resolve(*expect.max, costs);
    v.bound_text = expect.max->text;
    v.unit = expect.max->unit == sim::Bound::Unit::count ? Unit::count : Unit::ns;
  }
  return v;
}

std::string ms_text(Duration t) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f ms", double(t.count()) / 1e6);
  return buffer;
}

namespace {
// A bound as a whole number, saturated: no product of a cost and a count wraps negative.
std::int64_t saturated(double value) {
  if (!(value < 9.2e18)) return std::numeric_limits<std::int64_t>::max();
  if (value < 0) return 0;
  return std::llround(value);
}
}  // namespace

std::int64_t resolve(const sim::Bound& bound, const Costs& costs) {
  switch (bound.unit) {
    case sim::Bound::Unit::time:
    case sim::Bound::Unit::count:
      return saturated(bound.value);
    case sim::Bound::Unit::requests:
      return saturated(bound.value * double(costs.request.count()));
    case sim::Bound::Unit::batches:
      return saturated(bound.value * costs.batch * double(costs.request.count()));
  }
  return 0;
}

// Bytes as a person reads them: CR, LF, tab and backslash escaped, other unprintables as \xNN.
std::string printable(std::string_view bytes) {
  std::string out;
  for (unsigned char ch : bytes) {
    if (ch == '\r') out += "\\r";
    else if (ch == '\n') out += "\\n";
    else if (ch == '\t') out += "\\t";
    else if (ch == '\\') out += "\\\\";
    else if (ch < 0x20 || ch >= 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", ch);
      out += hex;
    } else {
      out += char(ch);
    }
  }
  return out;
}

Verdict answered(const Trace& trace, const std::string& of) {
  Verdict v;
  v.property = "answered";
  v.of = of;
  v.unit = Unit::count;
  auto counted = [&](std::size_t client) { return of.empty() || trace.group_of(sim::ClientIndex(client)) == of; };
  std::vector<std::int32_t> answers(trace.clients.size(), 0);
  std::vector<std::optional<std::size_t>> first_event(trace.clients.size());
  std::vector<bool> withdrew(trace.clients.size(), false);  // reset by a fault: asks no more
  const ev::Unframed* unframed = nullptr;  // the first bytes a client could not frame
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    if (auto* r = std::get_if<ev::Reset>(&trace.events[i])) withdrew[std::size_t(r->client)] = true;
    if (auto* a = std::get_if<ev::Answer>(&trace.events[i])) {
      if (++answers[std::size_t(a->client)] > trace.clients[std::size_t(a->client)].requests &&
          counted(std::size_t(a->client))) {
        v.first_bad = v.first_bad.value_or(i);  // an answer nobody asked for: a duplicate
      }
    }
    if (auto* c = std::get_if<ev::Connect>(&trace.events[i])) first_event[std::size_t(c->client)] = i;
    if (auto* u = std::get_if<ev::Unframed>(&trace.events[i]); u != nullptr && !unframed && counted(std::size_t(u->client)))
      unframed = u;
  }
  std::int64_t lost = 0, duplicated = 0;
  for (std::size_t c = 0; c < trace.clients.size(); ++c) {
    if (!counted(c)) continue;
    std::int32_t want = trace.clients[c].requests;
    if (!withdrew[c]) lost += std::max(0, want - answers[c]);
    duplicated += std::max(0, answers[c] - want);
    if (!withdrew[c] && answers[c] < want && first_event[c] &&
        (!v.first_bad || *first_event[c] < *v.first_bad)) {
      v.first_bad = first_event[c];
    }
  }
  v.measured = lost + duplicated;
  v.held = v.measured == 0;
  if (!v.held) {
    v.detail = std::to_string(lost) + " request(s) never answered, " + std::to_string(duplicated) +
               " answered twice";
    if (unframed != nullptr) {
      v.detail += "; " + trace.client_name(unframed->client) + " received bytes that do not frame as an answer (clients.framing): \"" +
                  printable(unframed->bytes) + "\"";
    }
  }
  return v;
}

Verdict no_stranded_backlog(const Trace& trace, const sim::Expectation& expect, const Costs& costs) {
  Verdict v = bounded_by_max("no_stranded_backlog", expect, costs);
  const auto* end = trace.events.empty() ? nullptr : std::get_if<ev::RunEnd>(&trace.events.back());
  if (end == nullptr) {
    v.held = false;
    v.measured = -1;
    v.detail = "the trace has no run_end, so what was left waiting is unknown";
    return v;
  }
  // Both doors count (R1): a connection a sibling handed over and nobody admitted is stranded
  // as surely as one left on the listener.
  std::int64_t waiting = end->backlog + end->handoffs;
  if (waiting > 0) {
    v.held = false;
    v.first_bad = trace.events.size() - 1;
    v.detail = std::to_string(end->backlog) + " connection(s) still queued and " +
               std::to_string(end->handoffs) +
               " handed over but not admitted at the end of the run";
  }
  if (!expect.max) {
    v.unit = Unit::count;
    v.measured = waiting;
    return v;
  }
  DoorWait wait = longest_idle_wait(trace);
  v.measured = wait.worst.count();
  if (wait.worst.count() > v.bound) {
    v.held = false;
    v.first_bad = v.first_bad ? std::min(*v.first_bad, *wait.at) : wait.at;
    v.detail += std::string(v.detail.empty() ? "" : "; ") + "a connection waited " +
                ms_text(wait.worst) + " at the " + door_name(wait.door) +
                " door while the loop was idle";
  }
  return v;
}

Verdict latency(const Trace& trace, const sim::Expectation& expect, const Costs& costs) {
  Verdict v = bounded_by_max("latency", expect, costs);
  if (!group_exists(trace, expect.of)) return missing_group(v, expect.of);
  auto answers = answers_of(trace, expect.of);
  Unanswered lost = unanswered_of(trace, expect.of);
  if (answers.empty()) return never_answered(std::move(v), expect.of, lost);
  // An answer that never came is later than any bound, whichever answer is measured.
  if (lost.count > 0) return left_unanswered(std::move(v), expect.of, lost, "");
  if (expect.after.empty()) return latency_of_requests(trace, expect.of, std::move(v));
  if (!group_exists(trace, expect.after)) return missing_group(v, expect.after);
  auto after = answers_of(trace, expect.after);
  Unanswered after_lost = unanswered_of(trace, expect.after);
  if (after.empty()) return never_answered(std::move(v), expect.after, after_lost);
  // Measuring from the answers `after` did get would start the clock early and pass.
  if (after_lost.count > 0) {
    return left_unanswered(std::move(v), expect.after, after_lost, ", so the clock never started");
  }
  Instant from = after.back().first;
  auto [answer_at, index] = answers.back();
  Duration gap = answer_at - from;
  v.measured = gap.count();  // negative when `of` was answered first: reported as it is
  v.held = v.measured <= v.bound;
  if (gap < Duration(0)) {
    v.detail = expect.of + " answered " + ms_text(-gap) + " before " + expect.after + "'s answer";
  }
  if (!v.held) {
    v.first_bad = index;
    v.detail = expect.of + " answered " + ms_text(gap) + " after " + expect.after + "'s answer";
  }
  return v;
}

Verdict max_gap(const Trace& trace, const sim::Expectation& expect, const Costs& costs) {
  Verdict v = bounded_by_max("max_gap", expect, costs);
  if (!group_exists(trace, expect.of)) return missing_group(v, expect.of);
  auto answers = answers_of(trace, expect.of);
  Unanswered lost = unanswered_of(trace, expect.of);
  if (lost.asked == 0) {
    v.held = false;
    v.measured = -1;
    v.detail = expect.of + " sends no request, so there is no gap to measure";
    return v;
  }
  if (answers.empty()) return never_answered(std::move(v), expect.of, lost);
  // A gap needs two answers. A group that asked more than once and got one answer has an
  // open gap that never closed; the rest of the lost answers are answered's to count.
  if (answers.size() < 2 && lost.count > 0) {
    return left_unanswered(std::move(v), expect.of, lost,
                           ", so the gap after its one answer never closed");
  }
  for (std::size_t i = 1; i < answers.size(); ++i) {
    Duration gap = answers[i].first - answers[i - 1].first;
    if (gap.count() <= v.measured) continue;
    v.measured = gap.count();
    if (gap.count() > v.bound && !v.first_bad) v.first_bad = answers[i].second;
  }
  v.held = v.measured <= v.bound;
  if (!v.held) v.detail = "two answers to " + expect.of + " " + ms_text(Duration(v.measured)) + " apart";
  return v;
}

namespace {

using sim::event_bit;

// The loop rules' properties read the passes whole (but not the bytes, which no judge reads).
sim::EventMask all_of_it(const sim::Expectation&) { return sim::all_events & ~sim::byte_events; }
sim::EventMask requests_read(const sim::Expectation&) {
  return event_bit<ev::Connect>() | event_bit<ev::Send>() | event_bit<ev::Answer>();
}

// One property: how it is judged, and the events it reads (events_needed). In the order of
// sim::property_kinds, which names them and says what their bounds measure.
struct Judge {
  std::string_view name;
  Verdict (*evaluate)(const Trace&, const sim::Expectation&, const Costs&);
  sim::EventMask (*events)(const sim::Expectation&);
};

constexpr Judge judges[] = {
    {"answered", [](const Trace& t, const sim::Expectation& e, const Costs&) { return answered(t, e.of); },
     [](const sim::Expectation&) { return event_bit<ev::Connect>() | event_bit<ev::Answer>() | event_bit<ev::Reset>(); }},
    {"no_stranded_backlog", no_stranded_backlog,
     [](const sim::Expectation& e) {
       sim::EventMask needed = event_bit<ev::RunEnd>();
       if (e.max) {  // the longest idle wait at a door
         needed |= event_bit<ev::PassBegin>() | event_bit<ev::Events>() | event_bit<ev::Established>() |
                   event_bit<ev::Handoff>() | event_bit<ev::Accept>();
       }
       return needed;
     }},
    {"latency", latency, requests_read},
    {"max_gap", max_gap, requests_read},
    {"capacity", [](const Trace& t, const sim::Expectation& e, const Costs&) { return capacity(t, e); }, all_of_it},
    {"post_latency", post_latency, all_of_it},
    {"no_spin", [](const Trace& t, const sim::Expectation& e, const Costs&) { return no_spin(t, e); }, all_of_it},
    {"shutdown_clean", [](const Trace& t, const sim::Expectation& e, const Costs&) { return shutdown_clean(t, e); }, all_of_it},
    {"batch_bound", [](const Trace& t, const sim::Expectation& e, const Costs&) { return batch_bound(t, e); }, all_of_it},
    {"liveness", [](const Trace& t, const sim::Expectation&, const Costs&) { return liveness(t); },
     [](const sim::Expectation&) { return event_bit<ev::Lasso>(); }},
};

constexpr bool judges_match_kinds() {
  if (std::size(judges) != sim::property_count) return false;
  for (std::size_t i = 0; i < sim::property_count; ++i)
    if (judges[i].name != sim::property_kinds[i].name) return false;
  return true;
}
static_assert(judges_match_kinds(), "one judge per sim::property_kinds entry, in its order");

const Judge& judge_of(const std::string& property) {
  for (const Judge& j : judges)
    if (j.name == property) return j;
  LOOPSIM_ASSERT(known_property(property));
  std::abort();
}

}  // namespace

sim::EventMask events_needed(const sim::Expectation& e) {
  sim::EventMask needed = judge_of(e.property).events(e);
  // Bounds in "requests" and "batches" are multiples of the measured cost of a request.
  for (const auto& bound : {e.max, e.min}) {
    bool costed = bound && (bound->unit == sim::Bound::Unit::requests || bound->unit == sim::Bound::Unit::batches);
    if (costed) needed |= event_bit<ev::RequestBegin>() | event_bit<ev::RequestEnd>();
  }
  return needed;
}

sim::EventMask events_needed(const std::vector<sim::Expectation>& expect) {
  sim::EventMask needed = sim::event_bit<ev::RunEnd>();
  for (const sim::Expectation& e : expect) needed |= events_needed(e);
  return needed;
}

namespace {

// Whether a violation seen on a run's prefix stands whatever the rest of the run does: a
// measure that only grows past its maximum (a spin, a batch, a latency, a gap, a post's wait),
// or a lasso found.
bool violated_for_good(const Verdict& v) {
  if (v.property == "liveness") return v.first_bad.has_value();
  bool grows = v.property == "no_spin" || v.property == "batch_bound" || v.property == "latency" ||
               v.property == "max_gap" || v.property == "post_latency";
  return grows && v.measured > v.bound;
}

}  // namespace

Verdict liveness(const Trace& trace) {
  Verdict v;
  v.property = "liveness";
  v.unit = Unit::count;
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const auto* lasso = std::get_if<ev::Lasso>(&trace.events[i]);
    if (lasso == nullptr) continue;
    v.held = false;
    v.measured = lasso->backlog;
    v.first_bad = i;
    v.detail = lasso->dead_end
                   ? std::to_string(lasso->backlog) + " connection(s) wait and nothing is left to happen"
                   : std::to_string(lasso->backlog) + " connection(s) wait in a cycle of states: the state at " +
                         ms_text(lasso->t) + " is the one at " + ms_text(lasso->since) +
                         ", and nothing was accepted in between";
    return v;
  }
  if (!trace.liveness_watched) {
    // No lasso event says nothing unless the run looked for one.
    v.decided = false;
    v.detail = "not judged: the run that wrote this trace did not watch its states for a lasso (a run "
               "watches only when its scenario expects liveness; explore judges it on its state graph)";
    return v;
  }
  v.detail = "no state came back with connections waiting and none accepted";
  return v;
}

const std::vector<std::string>& property_names() {
  static const std::vector<std::string> names(sim::property_names.begin(), sim::property_names.end());
  return names;
}

bool known_property(const std::string& name) { return sim::property_kind(name) != nullptr; }

std::vector<Verdict> evaluate(const Trace& trace, const std::vector<sim::Expectation>& expect,
                              Costs costs) {
  if (costs.request == Duration(0)) costs.request = request_cost(trace);
  std::vector<Verdict> verdicts;
  for (const sim::Expectation& e : expect) verdicts.push_back(judge_of(e.property).evaluate(trace, e, costs));
  if (trace.cut.empty()) return verdicts;
  for (Verdict& v : verdicts) {
    if (!v.held && violated_for_good(v)) {
      v.detail += " (the run stopped before its horizon: " + trace.cut + ")";
      continue;
    }
    v.held = true;
    v.decided = false;
    v.first_bad.reset();
    v.detail = "undecided: the run stopped before its horizon (" + trace.cut + ")";
  }
  if (trace.stalled) {
    Verdict livelock;
    livelock.property = "livelock";
    livelock.unit = Unit::count;
    livelock.held = false;
    livelock.measured = std::int64_t(sim::still_steps_max);
    livelock.bound = std::int64_t(sim::still_steps_max);
    const std::string prefix = "livelock: ";
    livelock.detail = trace.cut.rfind(prefix, 0) == 0 ? trace.cut.substr(prefix.size()) : trace.cut;
    livelock.first_bad = trace.events.empty() ? 0 : trace.events.size() - 1;
    verdicts.push_back(std::move(livelock));
  }
  return verdicts;
}

}  // namespace loopsim::checker
