#include "sim/shutdown_scan.hpp"

#include <algorithm>
#include <cerrno>
#include <variant>

namespace loopsim::sim {

void ShutdownScan::step(std::size_t i, const TraceEvent& event) {
  if (const auto* q = std::get_if<ev::ShutdownAsked>(&event)) {
    asked_ = asked_.value_or(q->t);
  } else if (const auto* r = std::get_if<ev::RequestBegin>(&event)) {
    // R5: once asked, a worker closes its listener before it begins another handler.
    if (asked_ && r->t > *asked_ && !closed(r->worker)) breach(i, breaches_.handlers_before_close);
  } else if (const auto* s = std::get_if<ev::ShutdownBegin>(&event)) {
    workers_[s->worker].began = workers_[s->worker].began.value_or(i);
  } else if (const auto* c = std::get_if<ev::ListenerClosed>(&event)) {
    workers_[c->worker].closed = workers_[c->worker].closed.value_or(i);
    any_closed_ = true;
  } else if (const auto* x = std::get_if<ev::LoopExit>(&event)) {
    WorkerShutdown& w = workers_[x->worker];
    w.exited = i;
    w.open_at_exit = x->open_connections;
    w.owing_at_exit = 0;
    for (const auto& [client, worker] : held_) {
      auto owed = owed_.find(client);
      if (worker != x->worker || owed == owed_.end() || owed->second <= 0) continue;
      ++w.owing_at_exit;
      lost_[client] = owed->second;
    }
    last_exit_ = x->t;
    last_exit_worker_ = x->worker;
  } else if (std::holds_alternative<ev::ProcessExit>(event) && last_exit_worker_) {
    // A target's process ends every one of its threads' connections, whichever thread accepted
    // them (a Go program's goroutines run on any): what they were owed is lost with the exit
    // the seam reported just before (its loop_exit, worker 0's).
    WorkerShutdown& w = workers_[*last_exit_worker_];
    for (const auto& [client, worker] : held_) {
      auto owed = owed_.find(client);
      if (worker == *last_exit_worker_ || owed == owed_.end() || owed->second <= 0) continue;
      ++w.owing_at_exit;
      lost_[client] = owed->second;
    }
  } else if (const auto* s = std::get_if<ev::Send>(&event)) {
    ++owed_[s->client];
  } else if (const auto* answer = std::get_if<ev::Answer>(&event)) {
    if (auto it = owed_.find(answer->client); it != owed_.end() && --it->second <= 0) owed_.erase(it);
    if (auto it = lost_.find(answer->client); it != lost_.end() && --it->second <= 0) lost_.erase(it);
  } else if (const auto* closing = std::get_if<ev::Close>(&event)) {
    held_.erase(closing->client);
  } else if (const auto* h = std::get_if<ev::Handoff>(&event)) {
    handed_.emplace(std::pair(h->to, h->client), i);
  } else if (const auto* a = std::get_if<ev::Accept>(&event)) {
    accept(i, *a);
  } else if (const auto* p = std::get_if<ev::PassEnd>(&event)) {
    bool owed = p->accept_owed || p->handoff_owed;
    if (owed && closed(p->worker)) breach(i, breaches_.owed_passes);
  } else if (const auto* e = std::get_if<ev::Established>(&event)) {
    // Over a delaying network (rtt, jitter) the client hears of its handshake after the
    // server may have accepted it: then it was never waiting in the queue.
    if (!accepted_.count(e->client)) queued_.insert(e->client);
  } else if (const auto* f = std::get_if<ev::Refused>(&event)) {
    // R5: a connection the listener had queued, reset by its close: its client had sent its
    // request and believed it was connected. Excused when the shutdown's drain of the queue
    // was stopped by the kernel (out of descriptors or memory): it cannot be accepted.
    // So is one for each accept that ECONNABORTED: the kernel consumed that connection.
    bool queued = queued_.erase(f->client) > 0;
    if (queued && any_closed_ && f->error == ECONNRESET && !drain_starved_) {
      if (aborted_ > 0) {
        --aborted_;
      } else {
        breach(i, breaches_.queued_resets);
      }
    }
  } else if (const auto* b = std::get_if<ev::BatchEnd>(&event)) {
    auto w = workers_.find(b->worker);
    bool draining = b->door == Door::listener && w != workers_.end() && w->second.began && !closed(b->worker);
    bool kernel = b->stop == BatchStop::emfile || b->stop == BatchStop::enfile || b->stop == BatchStop::enobufs;
    if (draining && kernel) drain_starved_ = true;
  }
}

bool ShutdownScan::closed(int worker) const {
  auto it = workers_.find(worker);
  return it != workers_.end() && it->second.closed.has_value();
}

void ShutdownScan::accept(std::size_t i, const ev::Accept& a) {
  if (a.door == Door::listener && a.result >= 0) {
    queued_.erase(a.client);
    accepted_.insert(a.client);
  }
  if (a.result >= 0) held_[a.client] = a.worker;
  if (a.door == Door::listener && a.result == -ECONNABORTED) ++aborted_;
  if (a.door == Door::handoff && a.result >= 0) {  // admitted: the hand-off is done
    auto it = handed_.find(std::pair(a.worker, a.client));
    if (it != handed_.end()) handed_.erase(it);
  }
  if (a.door != Door::listener) return;
  if (closed(a.worker) || (any_closed_ && a.result == -EBADF)) breach(i, breaches_.late_accepts);
}

void ShutdownScan::breach(std::size_t i, std::int64_t& counter) {
  ++counter;
  breaches_.first = std::min(breaches_.first.value_or(i), i);
}

std::int64_t ShutdownScan::lost() const {
  std::int64_t n = 0;
  for (const auto& [client, count] : lost_) n += count;
  return n;
}

std::optional<Duration> ShutdownScan::drain_time() const {
  if (!asked_ || !last_exit_ || *last_exit_ < *asked_) return std::nullopt;
  return *last_exit_ - *asked_;
}

bool ShutdownScan::held(std::optional<Duration> max) const {
  const bool any = std::any_of(workers_.begin(), workers_.end(), [](const auto& w) { return w.second.began.has_value(); });
  if (!any || breaches_.any() || !handed_.empty()) return false;  // no shutdown at all, or a breach
  for (const auto& [worker, w] : workers_) {
    if (!w.began) continue;
    if (!w.closed || !w.exited) return false;
  }
  if (lost() > 0 && !max) return false;  // with a bounded drain, its deadline's resets
  if (max && asked_) {
    const std::optional<Duration> took = drain_time();
    if (!took || *took > *max) return false;
  }
  return true;
}

void ShutdownScan::digest_state(state::Sink& sink, Instant now, std::optional<Duration> max, std::size_t clients) const {
  auto flag = [](bool b) { return std::int64_t(b ? 1 : 0); };
  // (Whether any listener closed is each worker's `closed`, below.)
  sink.add(flag(breaches_.any()));
  sink.add(flag(drain_starved_));
  sink.add(aborted_);
  sink.add(std::int64_t(workers_.size()));
  for (const auto& [worker, w] : workers_) {
    sink.add(worker);
    sink.add(flag(w.began.has_value()));
    sink.add(flag(w.closed.has_value()));
    sink.add(flag(w.exited.has_value()));
    sink.add(std::int64_t(w.open_at_exit > 0));
    sink.add(std::int64_t(w.owing_at_exit > 0));
  }
  // The asking's age matters to a handler begun later (at this instant, or after it) and, with
  // a bound, to the drain's time if a worker exits later; the drain's time so far is decided
  // now, while both times are exact.
  const std::int64_t clamp = max ? max->count() + 1 : 1;
  sink.add(asked_ ? std::min((now - *asked_).count(), clamp) : -1);
  if (max && asked_) {
    const std::optional<Duration> took = drain_time();
    sink.add(!took ? -1 : *took > *max ? 1 : 0);
  } else if (max) {
    // Not asked yet: an exit at this instant makes a drain of 0 if the asking comes now, one
    // before it a drain that never began.
    sink.add(last_exit_ ? std::min((now - *last_exit_).count(), std::int64_t(1)) : -1);
  }
  // Hand-offs to each worker, and queued and accepted connections, client by client.
  const state::Names* names = sink.names();
  sink.add(std::int64_t(clients));
  for (std::size_t at = 0; at < clients; ++at) {
    const auto id = names != nullptr ? names->original(state::Name::client, std::int64_t(at)) : std::int64_t(at);
    client_state(ClientIndex(id), sink);
  }
}

void ShutdownScan::client_state(ClientIndex client, state::Sink& sink) const {
  sink.add(std::int64_t(queued_.count(client)));
  sink.add(std::int64_t(accepted_.count(client)));
  auto held = held_.find(client);
  sink.add(held == held_.end() ? -1 : held->second);
  auto count = [client](const std::map<ClientIndex, std::int64_t>& counts) {
    auto it = counts.find(client);
    return it == counts.end() ? std::int64_t(0) : it->second;
  };
  sink.add(count(owed_));
  sink.add(count(lost_));
  std::int64_t handed = 0;
  for (const auto& [key, index] : handed_) handed += key.second == client ? 1 : 0;
  sink.add(handed);
  for (const auto& [key, index] : handed_) {
    if (key.second == client) sink.add(key.first);
  }
}

}  // namespace loopsim::sim
