// R12: timeouts, and R5's drain bound. A connection has at most one entry in timers_, filed
// under a deadline no later than its real one; when the entry comes due the real deadline is
// worked out again, from the phases' start times, and the entry is filed anew if it moved on.
// So a keep-alive connection that answers a request a millisecond costs no timer work per
// request: its entry is refiled once its deadline has moved on by more than refile_slack (or
// when the entry comes due), and a deadline that jumps, such as the first request's head
// timeout giving way to keep-alive's, is refiled at once, so that it wakes nobody early.
#include "base/assert.hpp"
#include "realloop/http.hpp"
#include "realloop/loop.hpp"

namespace loopsim {

namespace {
constexpr Duration refile_slack = std::chrono::seconds(1);
}

std::optional<Loop::Deadline> Loop::deadline_of(const Connection& c) const {
  std::optional<Deadline> first;
  // A phase in progress has its deadline (its start plus its timeout); one whose timeout is 0
  // is in progress without one.
  auto consider = [&](std::optional<Instant> until, Duration limit, Timeout why) {
    if (!until || limit.count() <= 0) return;
    if (!first || *until < first->at) first = Deadline{*until, why};
  };
  consider(c.write_until, config_.write_timeout, Timeout::write);
  // A request with the pool, or owed its turn, waits on this server, not on its client.
  if (c.in_pool || c.owed_turn || c.closing) return first;
  consider(c.head_until, config_.head_timeout, Timeout::head);
  consider(c.body_until, config_.body_timeout, Timeout::body);
  consider(c.idle_until, config_.keepalive_timeout, Timeout::keepalive);
  return first;
}

void Loop::arm_timer(int fd, Connection& c) {
  auto deadline = deadline_of(c);
  if (!deadline) return;  // a stale entry, if any, is dropped when it comes due
  if (c.timer_at && *c.timer_at <= deadline->at && deadline->at - *c.timer_at <= refile_slack) return;
  drop_timer(fd, c);
  timers_.emplace(deadline->at.time_since_epoch().count(), fd);
  c.timer_at = deadline->at;
}

void Loop::drop_timer(int fd, Connection& c) {
  if (!c.timer_at) return;
  std::size_t erased = timers_.erase({c.timer_at->time_since_epoch().count(), fd});
  LOOPSIM_ASSERT_OP(erased, ==, 1u);
  c.timer_at.reset();
}

void Loop::expire_timers() {
  const Instant now = kernel_.now();
  while (!timers_.empty() && timers_.begin()->first <= now.time_since_epoch().count()) {
    const int fd = timers_.begin()->second;
    timers_.erase(timers_.begin());
    Connection* c = connection(fd);
    LOOPSIM_ASSERT(c != nullptr);  // a close drops the connection's entry
    c->timer_at.reset();
    auto deadline = deadline_of(*c);
    if (!deadline) continue;
    if (deadline->at > now) {
      arm_timer(fd, *c);
      continue;
    }
    expire(fd, *c, deadline->why);
  }
}

// The head or the body ran out of time: 408, then the close; a connection that sent nothing at
// all is closed without a word, as is an idle keep-alive (a server may close either at any time
// between requests). A write that stalled is reset: a peer that reads nothing would never take
// a polite close either.
void Loop::expire(int fd, Connection& c, Timeout why) {
  switch (why) {
    case Timeout::head:
      if (c.input.empty()) {
        close_connection(fd);
        return;
      }
      [[fallthrough]];
    case Timeout::body:
      c.head_until = c.body_until = std::nullopt;
      observer_.request_begin(worker_, fd, "");
      respond(fd, c, http::Response{408, "request timed out\n", true});
      flush(fd, c);
      return;
    case Timeout::keepalive: close_connection(fd); return;
    case Timeout::write: reset_connection(fd); return;
  }
}

// R5: past drain_timeout, what the shutdown has not finished is reset.
void Loop::expire_drain() {
  if (config_.drain_timeout.count() <= 0 || kernel_.now() < *drain_until_) return;
  for (std::size_t fd = 0; fd < connections_.size(); ++fd) {
    if (!connections_[fd].open) continue;
    reset_connection(int(fd));
    ++drain_resets_;
  }
  std::lock_guard lock(mailbox_);
  for (int fd : handoffs_) {
    kernel_.abort(fd);
    ++drain_resets_;
  }
  load_.fetch_sub(std::int64_t(handoffs_.size()), std::memory_order_acq_rel);
  handoffs_.clear();
}

}  // namespace loopsim
