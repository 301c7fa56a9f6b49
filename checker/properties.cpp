#include "checker/properties.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "realloop/assert.hpp"

namespace loopsim::checker {

using sim::Trace;
using sim::TraceEvent;
namespace ev = sim::ev;

namespace {

// The time and event index of each answer to a member of `group`, in trace order.
std::vector<std::pair<Nanos, std::size_t>> answers_of(const Trace& trace, const std::string& group) {
  std::vector<std::pair<Nanos, std::size_t>> out;
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    auto* a = std::get_if<ev::Answer>(&trace.events[i]);
    if (a != nullptr && trace.group_of(a->client) == group) out.emplace_back(a->t, i);
  }
  return out;
}

bool group_exists(const Trace& trace, const std::string& group) {
  return std::find(trace.groups.begin(), trace.groups.end(), group) != trace.groups.end();
}

Verdict start(const std::string& property, const sim::Expectation& expect, const Costs& costs) {
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

Verdict missing_group(Verdict v, const std::string& group) {
  v.held = false;
  v.detail = "no client group named \"" + group + "\"";
  return v;
}

std::string ms(Nanos t) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f ms", double(t.count()) / 1e6);
  return buffer;
}

}  // namespace

Nanos request_cost(const Trace& trace) {
  std::map<int, Nanos> begun;  // fd -> begin time; requests on one descriptor are sequential
  std::vector<Nanos> costs;
  for (const TraceEvent& event : trace.events) {
    if (auto* b = std::get_if<ev::RequestBegin>(&event)) begun[b->fd] = b->t;
    if (auto* e = std::get_if<ev::RequestEnd>(&event); e != nullptr && begun.count(e->fd)) {
      costs.push_back(e->t - begun[e->fd]);
      begun.erase(e->fd);
    }
  }
  if (costs.empty()) return Nanos(0);
  std::nth_element(costs.begin(), costs.begin() + std::ptrdiff_t(costs.size() / 2), costs.end());
  return costs[costs.size() / 2];
}

std::int64_t resolve(const sim::Bound& bound, const Costs& costs) {
  switch (bound.unit) {
    case sim::Bound::Unit::time:
    case sim::Bound::Unit::count:
      return std::llround(bound.value);
    case sim::Bound::Unit::requests:
      return std::llround(bound.value * double(costs.request.count()));
    case sim::Bound::Unit::batches:
      return std::llround(bound.value * costs.batch * double(costs.request.count()));
  }
  return 0;
}

Verdict answered(const Trace& trace) {
  Verdict v;
  v.property = "answered";
  v.unit = Unit::count;
  std::vector<std::int32_t> answers(trace.clients.size(), 0);
  std::vector<std::optional<std::size_t>> first_event(trace.clients.size());
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    if (auto* a = std::get_if<ev::Answer>(&trace.events[i])) {
      if (++answers[std::size_t(a->client)] > trace.clients[std::size_t(a->client)].requests) {
        v.first_bad = v.first_bad.value_or(i);  // an answer nobody asked for: a duplicate
      }
    }
    if (auto* c = std::get_if<ev::Connect>(&trace.events[i])) first_event[std::size_t(c->client)] = i;
  }
  std::int64_t lost = 0, duplicated = 0;
  for (std::size_t c = 0; c < trace.clients.size(); ++c) {
    std::int32_t want = trace.clients[c].requests;
    lost += std::max(0, want - answers[c]);
    duplicated += std::max(0, answers[c] - want);
    if (answers[c] < want && first_event[c] && (!v.first_bad || *first_event[c] < *v.first_bad)) {
      v.first_bad = first_event[c];
    }
  }
  v.measured = lost + duplicated;
  v.held = v.measured == 0;
  if (!v.held) {
    v.detail = std::to_string(lost) + " request(s) never answered, " + std::to_string(duplicated) +
               " answered twice";
  }
  return v;
}

Verdict no_stranded_backlog(const Trace& trace, const sim::Expectation& expect, const Costs& costs) {
  Verdict v = start("no_stranded_backlog", expect, costs);
  // Intervals in which the loop sat blocked in a wait, and each connection's time queued.
  std::optional<Nanos> blocked_since;
  std::map<sim::ClientIndex, Nanos> queued_since;
  std::map<sim::ClientIndex, Nanos> idle_wait;  // per client: time queued while the loop was blocked
  Nanos worst{0};
  std::optional<std::size_t> worst_at;
  auto settle = [&](Nanos now) {  // charge the blocked interval up to `now` to every queued client
    if (!blocked_since) return;
    for (auto& [client, since] : queued_since) idle_wait[client] += now - std::max(since, *blocked_since);
  };
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& event = trace.events[i];
    Nanos t = sim::time_of(event);
    if (auto* p = std::get_if<ev::PassBegin>(&event); p != nullptr && p->timeout != Nanos(0)) blocked_since = t;
    if (std::holds_alternative<ev::Events>(event)) {
      settle(t);
      blocked_since.reset();
    }
    if (auto* e = std::get_if<ev::Established>(&event)) queued_since[e->client] = t;
    auto* a = std::get_if<ev::Accept>(&event);
    if (a == nullptr || a->client == sim::no_client) continue;
    queued_since.erase(a->client);
    if (idle_wait[a->client] > worst) {
      worst = idle_wait[a->client];
      worst_at = i;
    }
  }
  const auto* end = trace.events.empty() ? nullptr : std::get_if<ev::RunEnd>(&trace.events.back());
  std::int64_t backlog = end != nullptr ? end->backlog : 0;
  if (backlog > 0) {
    v.held = false;
    v.first_bad = trace.events.size() - 1;
    v.detail = std::to_string(backlog) + " connection(s) still queued at the end of the run";
  }
  if (!expect.max) {
    v.unit = Unit::count;
    v.measured = backlog;
    return v;
  }
  v.measured = worst.count();
  if (worst.count() > v.bound) {
    v.held = false;
    v.first_bad = v.first_bad ? std::min(*v.first_bad, *worst_at) : worst_at;
    v.detail = "a connection waited " + ms(worst) + " in the backlog while the loop was idle";
  }
  return v;
}

Verdict latency(const Trace& trace, const sim::Expectation& expect, const Costs& costs) {
  Verdict v = start("latency", expect, costs);
  if (!group_exists(trace, expect.of)) return missing_group(v, expect.of);
  auto answers = answers_of(trace, expect.of);
  if (answers.empty()) {
    v.held = false;
    v.measured = -1;
    v.detail = "\"" + expect.of + "\" was never answered";
    return v;
  }
  Nanos from{0};
  if (!expect.after.empty()) {
    if (!group_exists(trace, expect.after)) return missing_group(v, expect.after);
    auto after = answers_of(trace, expect.after);
    if (after.empty()) {
      v.held = false;
      v.measured = -1;
      v.detail = "\"" + expect.after + "\" was never answered";
      return v;
    }
    from = after.back().first;
  } else {
    for (const TraceEvent& event : trace.events) {  // from the group's first send
      auto* s = std::get_if<ev::Send>(&event);
      if (s != nullptr && trace.group_of(s->client) == expect.of) {
        from = s->t;
        break;
      }
    }
  }
  auto [answer_at, index] = answers.back();
  v.measured = (answer_at - from).count();
  v.held = v.measured <= v.bound;
  if (!v.held) {
    v.first_bad = index;
    v.detail = expect.of + " answered " + ms(answer_at - from) + " after " +
               (expect.after.empty() ? "its send" : expect.after + "'s answer");
  }
  return v;
}

Verdict max_gap(const Trace& trace, const sim::Expectation& expect, const Costs& costs) {
  Verdict v = start("max_gap", expect, costs);
  if (!group_exists(trace, expect.of)) return missing_group(v, expect.of);
  auto answers = answers_of(trace, expect.of);
  for (std::size_t i = 1; i < answers.size(); ++i) {
    Nanos gap = answers[i].first - answers[i - 1].first;
    if (gap.count() <= v.measured) continue;
    v.measured = gap.count();
    if (gap.count() > v.bound && !v.first_bad) v.first_bad = answers[i].second;
  }
  v.held = v.measured <= v.bound;
  if (!v.held) v.detail = "two answers to " + expect.of + " " + ms(Nanos(v.measured)) + " apart";
  return v;
}

const std::vector<std::string>& property_names() {
  static const std::vector<std::string> names = {"answered", "no_stranded_backlog", "latency",
                                                 "max_gap"};
  return names;
}

bool known_property(const std::string& name) {
  const auto& names = property_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::vector<Verdict> evaluate(const Trace& trace, const std::vector<sim::Expectation>& expect,
                              Costs costs) {
  if (costs.request == Nanos(0)) costs.request = request_cost(trace);
  std::vector<Verdict> verdicts;
  for (const sim::Expectation& e : expect) {
    if (e.property == "answered") verdicts.push_back(answered(trace));
    else if (e.property == "no_stranded_backlog") verdicts.push_back(no_stranded_backlog(trace, e, costs));
    else if (e.property == "latency") verdicts.push_back(latency(trace, e, costs));
    else if (e.property == "max_gap") verdicts.push_back(max_gap(trace, e, costs));
    else LOOPSIM_ASSERT(known_property(e.property));
  }
  return verdicts;
}

}  // namespace loopsim::checker
