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
  c.timer_at = deadline->at;
  timers_.push_back(fd);
  timer_place(timers_.size() - 1, fd);
  timer_up(timers_.size() - 1);
}

void Loop::drop_timer(int fd, Connection& c) {
  if (!c.timer_at) return;
  LOOPSIM_ASSERT(c.timer_slot < timers_.size() && timers_[c.timer_slot] == fd);
  timer_take(c.timer_slot);
  c.timer_at.reset();
}

// The heap's order is (deadline, descriptor): a total order, so the entries come due in the
// order a sorted set of the pairs would give them.
bool Loop::timer_before(int a, int b) const {
  const Instant at_a = *connections_[std::size_t(a)].timer_at;
  const Instant at_b = *connections_[std::size_t(b)].timer_at;
  return at_a != at_b ? at_a < at_b : a < b;
}

void Loop::timer_place(std::size_t slot, int fd) {
  timers_[slot] = fd;
  connections_[std::size_t(fd)].timer_slot = std::uint32_t(slot);
}

void Loop::timer_up(std::size_t slot) {
  const int fd = timers_[slot];
  while (slot > 0) {
    const std::size_t parent = (slot - 1) / 2;
    if (!timer_before(fd, timers_[parent])) break;
    timer_place(slot, timers_[parent]);
    slot = parent;
  }
  timer_place(slot, fd);
}

void Loop::timer_down(std::size_t slot) {
  const int fd = timers_[slot];
  for (;;) {
    std::size_t child = 2 * slot + 1;
    if (child >= timers_.size()) break;
    if (child + 1 < timers_.size() && timer_before(timers_[child + 1], timers_[child])) ++child;
    if (!timer_before(timers_[child], fd)) break;
    timer_place(slot, timers_[child]);
    slot = child;
  }
  timer_place(slot, fd);
}

// Takes the entry at `slot` out: the last entry fills its place and moves up or down.
void Loop::timer_take(std::size_t slot) {
  const int last = timers_.back();
  timers_.pop_back();
  if (slot == timers_.size()) return;
  timer_place(slot, last);
  timer_up(slot);
  timer_down(connections_[std::size_t(last)].timer_slot);
}

void Loop::expire_timers() {
  const Instant now = kernel_.now();
  while (!timers_.empty() && *connections_[std::size_t(timers_.front())].timer_at <= now) {
    const int fd = timers_.front();
    Connection* c = connection(fd);
    LOOPSIM_ASSERT(c != nullptr);  // a close drops the connection's entry
    timer_take(0);
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
