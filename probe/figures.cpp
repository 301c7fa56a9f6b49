#include "probe/figures.hpp"

#include <algorithm>
#include <deque>
#include <map>

namespace loopsim::probe {

GroupFigures group_figures(const sim::Trace& trace, const std::string& group) {
  GroupFigures f;
  f.group = group;
  for (std::size_t c = 0; c < trace.clients.size(); ++c) {
    if (trace.group_of(sim::ClientIndex(c)) == group) f.asked += trace.clients[c].requests;
  }
  std::map<sim::ClientIndex, std::deque<Instant>> sent;
  std::vector<Duration> latencies;
  for (const sim::TraceEvent& event : trace.events) {
    if (const auto* s = std::get_if<sim::ev::Send>(&event); s && trace.group_of(s->client) == group) {
      sent[s->client].push_back(s->t);
    } else if (const auto* a = std::get_if<sim::ev::Answer>(&event); a && trace.group_of(a->client) == group) {
      ++f.answered;
      if (f.last_answer) f.widest_gap = std::max(f.widest_gap.value_or(Duration(0)), a->t - *f.last_answer);
      f.last_answer = a->t;
      auto& waiting = sent[a->client];
      if (waiting.empty()) continue;
      latencies.push_back(a->t - waiting.front());
      waiting.pop_front();
    }
  }
  if (!latencies.empty()) {
    std::sort(latencies.begin(), latencies.end());
    auto at = [&](double q) { return latencies[std::min(latencies.size() - 1, std::size_t(q * double(latencies.size())))]; };
    f.p50 = at(0.50);
    f.p99 = at(0.99);
    f.max = latencies.back();
  }
  return f;
}

bool judged_from_clients(const std::string& property) {
  return property == "answered" || property == "latency" || property == "max_gap";
}

std::optional<double> ratio(std::int64_t simulated, std::int64_t live) {
  if (simulated < 0 || live < 0) return std::nullopt;
  if (simulated == 0) return live == 0 ? std::optional(1.0) : std::nullopt;
  return double(live) / double(simulated);
}

}  // namespace loopsim::probe
