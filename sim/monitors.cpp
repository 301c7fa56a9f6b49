#include "sim/monitors.hpp"

#include "base/assert.hpp"

#include <algorithm>
#include <cerrno>
#include <type_traits>
#include <variant>

namespace loopsim::sim {

namespace {

template <class E, class... Kinds>
constexpr bool is_one_of = (std::is_same_v<E, Kinds> || ...);

std::int64_t flag(bool b) { return b ? 1 : 0; }

}  // namespace

std::optional<int> progress_of(const TraceEvent& event, int listener_fd) {
  if (const auto* a = std::get_if<ev::Accept>(&event)) {
    bool took = a->result >= 0 || a->result == -ECONNABORTED;
    return took ? std::optional(a->worker) : std::nullopt;
  }
  if (const auto* e = std::get_if<ev::Events>(&event)) {
    bool other = std::any_of(e->fds.begin(), e->fds.end(), [&](int fd) { return fd != listener_fd; });
    return other ? std::optional(e->worker) : std::nullopt;
  }
  if (const auto* d = std::get_if<ev::Drain>(&event)) return d->count > 0 ? std::optional(d->worker) : std::nullopt;
  return std::visit(
      [](const auto& e) -> std::optional<int> {
        using E = std::decay_t<decltype(e)>;
        if constexpr (is_one_of<E, ev::RequestBegin, ev::RequestEnd, ev::Close, ev::PostRun, ev::Refuse, ev::Handoff,
                                ev::ShutdownBegin, ev::ListenerClosed, ev::LoopExit>) {
          return e.worker;
        } else {
          return std::nullopt;
        }
      },
      event);
}

void Monitors::watched(Kind kind, std::int64_t bound) {
  order_.push_back(kind);
  // (shutdown_clean's drain bound is its scan's own to clamp by.)
  if (kind != Kind::batch && kind != Kind::spin && kind != Kind::shutdown) clamp_ = std::max(clamp_, bound + 1);
}

void Monitors::watch_latency(const std::string& group, std::int64_t bound) {
  latency_.push_back(Latency{group, bound, false, false});
  watched(Kind::latency, bound);
}

void Monitors::watch_latency_after(const std::string& group, const std::string& after, std::int64_t bound) {
  After a;
  a.group = group;
  a.after = after;
  a.bound = bound;
  after_.push_back(a);
  watched(Kind::after, bound);
}

void Monitors::watch_gap(const std::string& group, std::int64_t bound) {
  gaps_.push_back(Gap{group, bound, false, 0, std::nullopt});
  watched(Kind::gap, bound);
}

void Monitors::watch_batch(std::int64_t bound) {
  batch_ = Batch{bound, false, false};
  watched(Kind::batch, bound);
}

void Monitors::watch_spin(std::int64_t bound) {
  spin_ = Spin{bound, false};
  watched(Kind::spin, bound);
}

void Monitors::watch_posts(const std::string& poster, std::int64_t bound) {
  Posts p;
  p.poster = poster;
  p.bound = bound;
  posts_.push_back(p);
  watched(Kind::posts, bound);
}

void Monitors::watch_idle_wait(std::int64_t bound) {
  IdleWait w;
  w.bound = bound;
  w.blocked.assign(std::size_t(std::max<std::int64_t>(1, trace_->workers)), false);
  idle_ = w;
  watched(Kind::idle_wait, bound);
}

void Monitors::watch_shutdown(std::optional<Duration> max) {
  shutdown_.emplace();
  drain_max_ = max;
  watched(Kind::shutdown, max ? max->count() : 0);
}

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

// As checker::no_spin reads a worker's passes: a pass runs from a wait's call to the next
// wait's, and is idle if it took at most spin_pass_max and got nothing done.
void Monitors::spin_event(const TraceEvent& event) const {
  auto worker = [this](int w) -> SpinWorker& {
    if (spinners_.size() <= std::size_t(w)) spinners_.resize(std::size_t(w) + 1);
    return spinners_[std::size_t(w)];
  };
  const std::int64_t past = spin_->bound + 1;
  if (const auto* a = std::get_if<ev::Accept>(&event)) {
    SpinWorker& s = worker(a->worker);
    s.failed = failed_accept(a->result) ? std::min(s.failed + 1, past) : 0;
    spin_->over = spin_->over || s.failed == past;
  }
  if (const auto* b = std::get_if<ev::PassBegin>(&event)) {
    SpinWorker& s = worker(b->worker);
    s.next = b->t;
    // Decided now, while `began` is exact: the digest keeps its age only to spin_pass_max.
    s.quick = s.began && b->t - *s.began <= spin_pass_max;
    s.failed = 0;
  } else if (const auto* e = std::get_if<ev::Events>(&event)) {
    SpinWorker& s = worker(e->worker);
    s.failed = 0;
    bool idle = s.next && s.quick && (e->work >= 0 ? e->work == 0 : !s.progress);
    s.idle = idle ? std::min(s.idle + 1, past) : 0;
    spin_->over = spin_->over || s.idle == past;
    s.began = s.next;
    s.progress = std::any_of(e->fds.begin(), e->fds.end(), [&](int fd) { return fd != trace_->listener_fd; });
    s.next.reset();
    s.quick = false;
  } else if (auto w = progress_of(event, trace_->listener_fd)) {
    worker(*w).progress = true;
  }
}

// As checker::post_latency pairs a post with its run, by id.
void Monitors::posts_event(const TraceEvent& event) const {
  for (Posts& p : posts_) {
    if (const auto* post = std::get_if<ev::Post>(&event)) {
      if (!p.poster.empty() && post->poster != p.poster) continue;
      if (p.ran.count(post->id) == 0) p.waiting.emplace(post->id, post->t);
    } else if (const auto* run = std::get_if<ev::PostRun>(&event)) {
      if (p.ran.count(run->id) > 0) {
        p.twice = true;
        continue;
      }
      auto it = p.waiting.find(run->id);
      if (it == p.waiting.end()) continue;  // not one of this monitor's posts
      p.late = p.late || (run->t - it->second).count() > p.bound;
      p.waiting.erase(it);
      p.ran.insert(run->id);
    }
  }
}

Duration Monitors::idle_at(Instant t) const { return idle_->idle + (idle_->since ? t - *idle_->since : Duration(0)); }

// As checker::no_stranded_backlog measures a wait at a door (its IdleClock): the loop is idle
// while every worker sits blocked in its wait.
void Monitors::idle_event(const TraceEvent& event) const {
  IdleWait& w = *idle_;
  auto set_blocked = [&](int worker, bool now_blocked, Instant t) {
    auto at = std::size_t(worker);
    if (at >= w.blocked.size() || w.blocked[at] == now_blocked) return;
    bool all_before = std::all_of(w.blocked.begin(), w.blocked.end(), [](bool b) { return b; });
    w.blocked[at] = now_blocked;
    if (now_blocked && std::all_of(w.blocked.begin(), w.blocked.end(), [](bool b) { return b; })) w.since = t;
    if (!now_blocked && all_before && w.since) w.idle += t - *w.since;
    if (!now_blocked) w.since.reset();
  };
  if (const auto* p = std::get_if<ev::PassBegin>(&event)) set_blocked(p->worker, p->timeout != Duration(0), p->t);
  if (const auto* e = std::get_if<ev::Events>(&event)) set_blocked(e->worker, false, e->t);
  if (const auto* e = std::get_if<ev::Established>(&event)) w.reached[e->client] = idle_at(e->t);
  if (const auto* h = std::get_if<ev::Handoff>(&event)) w.reached[h->client] = idle_at(h->t);
  const auto* a = std::get_if<ev::Accept>(&event);
  if (a == nullptr || a->client == no_client) return;
  auto it = w.reached.find(a->client);
  if (it == w.reached.end()) return;
  w.over = w.over || (idle_at(a->t) - it->second).count() > w.bound;
  w.reached.erase(it);
}

void Monitors::answer_event(const ev::Answer& a) const {
  const std::string& group = trace_->group_of(a.client);
  for (Gap& g : gaps_) {
    if (g.group != group) continue;
    if (g.last) g.wide = g.wide || (a.t - *g.last).count() > g.bound;
    g.last = a.t;
    g.answers = std::min<std::int64_t>(g.answers + 1, 2);
  }
  // As checker::latency measures it: from the last answer of `after` to the group's last.
  for (After& l : after_) {
    if (l.group == group) {
      l.answered = true;
      l.within = !l.after_last || (a.t - *l.after_last).count() <= l.bound;
    }
    if (l.after == group) {
      l.after_last = a.t;
      l.within = true;  // the group's last answer came no later than this one
    }
  }
  // As checker::latency pairs them: a client's answers come in the order of its sends.
  if (latency_.empty() || a.client < 0 || std::size_t(a.client) >= waiting_.size()) return;
  std::deque<Instant>& waiting = waiting_[std::size_t(a.client)];
  if (waiting.empty()) return;
  const std::int64_t took = (a.t - waiting.front()).count();
  LOOPSIM_ASSERT_OP(took, >=, 0);  // an answer comes after the request it answers was sent
  waiting.pop_front();
  for (Latency& l : latency_) {
    if (l.group != group) continue;
    l.answered = true;
    l.late = l.late || took > l.bound;
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
  LOOPSIM_ASSERT_OP(read_, <=, events.size());  // a trace only grows while it is watched
  for (; read_ < events.size(); ++read_) {
    const TraceEvent& event = events[read_];
    if (batch_) batch_event(event);
    if (spin_) spin_event(event);
    if (!posts_.empty()) posts_event(event);
    if (idle_) idle_event(event);
    if (shutdown_) shutdown_->step(read_, event);
    if (const auto* s = std::get_if<ev::Send>(&event)) {
      if (s->client < 0 || std::size_t(s->client) >= waiting_.size() || !watched(s->client)) continue;
      waiting_[std::size_t(s->client)].push_back(s->t);
    } else if (const auto* a = std::get_if<ev::Answer>(&event)) {
      answer_event(*a);
    }
  }
}

std::int64_t Monitors::age(Instant then, Instant now) const { return std::min((now - then).count(), clamp_); }

void Monitors::digest_state(state::Sink& sink, Instant now) const {
  if (empty()) return;
  catch_up();
  for (const Latency& l : latency_) {
    sink.add(flag(l.late));
    sink.add(flag(l.answered));
  }
  for (const After& l : after_) {
    sink.add(flag(l.answered));
    sink.add(flag(l.within));
    sink.add(l.after_last ? age(*l.after_last, now) : -1);
  }
  for (const Gap& g : gaps_) {
    sink.add(flag(g.wide));
    sink.add(g.answers);
    sink.add(g.last ? age(*g.last, now) : -1);
  }
  if (batch_) {
    sink.add(flag(batch_->over));
    sink.add(flag(batch_->accepted));
    sink.add(std::int64_t(passes_.size()));
    for (const WorkerPass& p : passes_) {
      sink.add(flag(p.admitting));
      sink.add(p.accepts[0]);
      sink.add(p.accepts[1]);
    }
  }
  if (spin_) {
    // A pass's start older than spin_pass_max cannot make the pass quick, however old.
    auto pass_age = [now](std::optional<Instant> t) {
      return t ? std::min((now - *t).count(), spin_pass_max.count() + 1) : std::int64_t(-1);
    };
    sink.add(flag(spin_->over));
    sink.add(std::int64_t(spinners_.size()));
    for (const SpinWorker& s : spinners_) {
      sink.add(flag(s.progress));
      sink.add(pass_age(s.began));
      sink.add(pass_age(s.next));
      sink.add(flag(s.quick));
      sink.add(s.idle);
      sink.add(s.failed);
    }
  }
  for (const Posts& p : posts_) {
    sink.add(flag(p.late));
    sink.add(flag(p.twice));
    sink.add(std::int64_t(p.waiting.size()));
    for (const auto& [id, posted] : p.waiting) {
      sink.add(id);
      sink.add(age(posted, now));
    }
    sink.add(std::int64_t(p.ran.size()));
    for (std::int64_t id : p.ran) sink.add(id);
  }
  if (idle_) {
    sink.add(flag(idle_->over));
    for (bool b : idle_->blocked) sink.add(flag(b));
  }
  if (shutdown_) shutdown_->digest_state(sink, now, drain_max_, waiting_.size());
  // What is kept client by client: latency's requests waiting, and the idle time each
  // connection at a door has waited.
  if (latency_.empty() && !idle_) return;
  const state::Names* names = sink.names();
  sink.add(std::int64_t(waiting_.size()));
  for (std::size_t at = 0; at < waiting_.size(); ++at) {
    const std::int64_t id = names != nullptr ? names->original(state::Name::client, std::int64_t(at)) : std::int64_t(at);
    client_state(ClientIndex(id), now, sink);
  }
}

void Monitors::client_state(ClientIndex client, Instant now, state::Sink& sink) const {
  const bool known = client >= 0 && std::size_t(client) < waiting_.size();
  if (!latency_.empty()) {
    const std::deque<Instant>* waiting = known ? &waiting_[std::size_t(client)] : nullptr;
    sink.add(waiting != nullptr ? std::int64_t(waiting->size()) : 0);
    if (waiting != nullptr) {
      for (Instant sent : *waiting) sink.add(age(sent, now));
    }
  }
  if (shutdown_) shutdown_->client_state(client, sink);
  if (idle_) {
    auto it = idle_->reached.find(client);
    sink.add(it == idle_->reached.end() ? -1 : std::min((idle_at(now) - it->second).count(), clamp_));
  }
}

std::uint64_t Monitors::client_digest(ClientIndex client, Instant now) const {
  if (latency_.empty() && !idle_ && !shutdown_) return 0;
  catch_up();
  struct Fold final : state::Sink {
    std::uint64_t value = 0;
    void add(std::int64_t v) override { value = state::fold(value, std::uint64_t(v)); }
  } fold;
  client_state(client, now, fold);
  return fold.value;
}

std::vector<bool> Monitors::held() const {
  catch_up();
  std::vector<bool> out;
  std::size_t index[8] = {};
  for (Kind kind : order_) {
    std::size_t& i = index[std::size_t(kind)];
    switch (kind) {
      case Kind::latency: {
        const Latency& l = latency_[i++];
        out.push_back(l.answered && !l.late);
        break;
      }
      case Kind::after: {
        const After& l = after_[i++];
        out.push_back(l.answered && l.after_last && l.within);
        break;
      }
      case Kind::gap: {
        const Gap& g = gaps_[i++];
        out.push_back(g.answers > 0 && !g.wide);
        break;
      }
      case Kind::batch:
        out.push_back(batch_->accepted && !batch_->over);
        break;
      case Kind::spin:
        out.push_back(!spin_->over);
        break;
      case Kind::posts: {
        const Posts& p = posts_[i++];
        out.push_back(!p.ran.empty() && !p.late && !p.twice && p.waiting.empty());
        break;
      }
      case Kind::idle_wait:
        out.push_back(!idle_->over);
        break;
      case Kind::shutdown:
        out.push_back(shutdown_->held(drain_max_));
        break;
    }
  }
  return out;
}

}  // namespace loopsim::sim
