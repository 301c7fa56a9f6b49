#include "sim/monitors.hpp"

#include <algorithm>
#include <variant>

namespace loopsim::sim {

void Monitors::watch_latency(const std::string& group, std::int64_t bound) {
  latency_.push_back(Latency{group, bound, false, false});
  clamp_ = std::max(clamp_, bound + 1);
}

void Monitors::watch_gap(const std::string& group, std::int64_t bound) {
  gaps_.push_back(Gap{group, bound, false, 0, std::nullopt});
  clamp_ = std::max(clamp_, bound + 1);
}

void Monitors::watch_batch(std::int64_t bound) { batch_ = Batch{bound, false, false}; }

void Monitors::batch_event(const TraceEvent& event) const {
  auto worker = [this](int w) -> WorkerPass& {
    if (passes_.size() <= std::size_t(w)) passes_.resize(std::size_t(w) + 1);
    return passes_[std::size_t(w)];
  };
  const auto* begin = std::get_if<ev::PassBegin>(&event);
  const auto* end = std::get_if<ev::PassEnd>(&event);
  if (begin != nullptr || end != nullptr) {
    WorkerPass& p = worker(begin != nullptr ? begin->worker : end->worker);  // a pass starts or ends: none taken
    p.accepts[0] = p.accepts[1] = 0;
  } else if (const auto* s = std::get_if<ev::ShutdownBegin>(&event)) {
    worker(s->worker).admitting = true;
  } else if (const auto* c = std::get_if<ev::ListenerClosed>(&event)) {
    worker(c->worker).admitting = false;
  } else if (const auto* a = std::get_if<ev::Accept>(&event); a != nullptr && a->result >= 0) {
    batch_->accepted = true;
    WorkerPass& p = worker(a->worker);
    if (p.admitting) return;  // as checker::batch_bound: the drain is not a batch
    std::int64_t& n = p.accepts[a->door == Door::listener ? 0 : 1];
    n = std::min(n + 1, batch_->bound + 1);
    batch_->over = batch_->over || n > batch_->bound;
  }
}

void Monitors::catch_up() const {
  if (empty()) return;
  const std::deque<TraceEvent>& events = trace_->events;
  // Every client has its place, so that a canonical order of them all is a permutation here.
  if (waiting_.size() < trace_->clients.size()) waiting_.resize(trace_->clients.size());
  auto watched = [this](ClientIndex client) {
    const std::string& group = trace_->group_of(client);
    return std::any_of(latency_.begin(), latency_.end(), [&](const Latency& l) { return l.group == group; });
  };
  for (; read_ < events.size(); ++read_) {
    const TraceEvent& event = events[read_];
    if (batch_) batch_event(event);
    if (const auto* s = std::get_if<ev::Send>(&event)) {
      if (s->client < 0 || std::size_t(s->client) >= waiting_.size() || !watched(s->client)) continue;
      waiting_[std::size_t(s->client)].push_back(s->t);
    } else if (const auto* a = std::get_if<ev::Answer>(&event)) {
      if (a->client < 0 || std::size_t(a->client) >= waiting_.size()) continue;
      if (!gaps_.empty()) {
        const std::string& group = trace_->group_of(a->client);
        for (Gap& g : gaps_) {
          if (g.group != group) continue;
          if (g.last) g.wide = g.wide || (a->t - *g.last).count() > g.bound;
          g.last = a->t;
          g.answers = std::min<std::int64_t>(g.answers + 1, 2);
        }
      }
      // As checker::latency pairs them: a client's answers come in the order of its sends.
      std::deque<Nanos>& waiting = waiting_[std::size_t(a->client)];
      if (waiting.empty()) continue;
      const std::int64_t took = (a->t - waiting.front()).count();
      waiting.pop_front();
      const std::string& group = trace_->group_of(a->client);
      for (Latency& l : latency_) {
        if (l.group != group) continue;
        l.answered = true;
        l.late = l.late || took > l.bound;
      }
    }
  }
}

std::int64_t Monitors::age(Nanos sent, Nanos now) const { return std::min((now - sent).count(), clamp_); }

void Monitors::digest_state(state::Sink& sink, Nanos now) const {
  if (empty()) return;
  catch_up();
  for (const Latency& l : latency_) {
    sink.add(std::int64_t(l.late));
    sink.add(std::int64_t(l.answered));
  }
  for (const Gap& g : gaps_) {
    sink.add(std::int64_t(g.wide));
    sink.add(g.answers);
    sink.add(g.last ? age(*g.last, now) : -1);
  }
  if (batch_) {
    sink.add(std::int64_t(batch_->over));
    sink.add(std::int64_t(batch_->accepted));
    sink.add(std::int64_t(passes_.size()));
    for (const WorkerPass& p : passes_) {
      sink.add(std::int64_t(p.admitting));
      sink.add(p.accepts[0]);
      sink.add(p.accepts[1]);
    }
  }
  if (latency_.empty()) return;  // only latency keeps requests waiting, client by client
  const state::Names* names = sink.names();
  sink.add(std::int64_t(waiting_.size()));
  for (std::size_t at = 0; at < waiting_.size(); ++at) {
    const std::int64_t id = names != nullptr ? names->original(state::Name::client, std::int64_t(at)) : std::int64_t(at);
    const std::deque<Nanos>* waiting = id >= 0 && std::size_t(id) < waiting_.size() ? &waiting_[std::size_t(id)] : nullptr;
    sink.add(waiting != nullptr ? std::int64_t(waiting->size()) : 0);
    if (waiting == nullptr) continue;
    for (Nanos sent : *waiting) sink.add(age(sent, now));
  }
}

std::uint64_t Monitors::client_digest(ClientIndex client, Nanos now) const {
  if (latency_.empty()) return 0;
  catch_up();
  if (client < 0 || std::size_t(client) >= waiting_.size()) return 0;
  std::uint64_t value = waiting_[std::size_t(client)].size();
  for (Nanos sent : waiting_[std::size_t(client)]) value = state::fold(value, std::uint64_t(age(sent, now)));
  return value;
}

}  // namespace loopsim::sim
