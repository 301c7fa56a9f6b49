// SimKernel's wake objects and its poller (K3 to K6): readiness, the ready list, registrations
// and waits.
#include "model/sim_kernel.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "base/assert.hpp"
#include "model/digest.hpp"
#include "model/sim_kernel_limits.hpp"

namespace loopsim::model {

using namespace limits;

// ---- wake objects ----

int SimKernel::wake_create_now() {
  int fd = allocate_fd(FdKind::wake, std::uint32_t(wakes_.size()));
  if (fd >= 0) wakes_.push_back(false);
  return fd;
}

void SimKernel::wake_signal_now(int fd) {
  FdEntry* e = entry(fd, FdKind::wake);
  LOOPSIM_ASSERT(e != nullptr);
  wakes_[e->object] = true;
  notify(fd);
}

void SimKernel::wake_drain_now(int fd) {
  FdEntry* e = entry(fd, FdKind::wake);
  LOOPSIM_ASSERT(e != nullptr);
  wakes_[e->object] = false;
}

// ---- the poller (K3, K4, K5) ----

std::uint32_t SimKernel::readiness(int fd) const {
  const FdEntry* e = entry(fd);
  if (e == nullptr) return 0;
  switch (e->kind) {
    case FdKind::listener:
      return listeners_[e->object].queue.empty() ? 0 : io::readable;
    case FdKind::wake:
      return io::writable | (wakes_[e->object] ? io::readable : 0);
    case FdKind::pipe_read: {  // K13: readable while bytes wait; hung up once the writer closed
      const Pipe& pipe = pipes_[e->object];
      return (pipe.bytes.empty() ? 0 : io::readable) | (pipe.write_fd < 0 ? io::hangup : 0);
    }
    case FdKind::pipe_write: {  // writable while there is room; an error once the reader closed
      const Pipe& pipe = pipes_[e->object];
      if (pipe.read_fd < 0) return io::writable | io::error;
      return pipe.bytes.size() < pipe.capacity ? io::writable : 0;
    }
    case FdKind::pair_end: {  // K15
      const PairEnd& self = pair_end(e->object);
      const PairEnd& other = pair_end(e->object ^ 1);
      const bool closed = other.fd < 0, ended = closed || other.shut;
      std::uint32_t mask = closed || other.in.size() < pair_capacity ? io::writable : 0;
      if (!self.in.empty() || ended || self.error != 0) mask |= io::readable;
      if (ended) mask |= io::read_hangup;
      // Linux: hung up once both directions are shut, the other end's close shutting both.
      if (closed || (self.shut && other.shut)) mask |= io::hangup;
      if (self.error != 0) mask |= io::error;
      return mask;
    }
    case FdKind::poller:  // readable while it has items queued (they are re-checked at harvest)
      return pollers_[e->object].ready.empty() ? 0 : io::readable;
    case FdKind::socket: {
      const Conn& conn = conns_[e->conn];
      std::uint32_t error = conn.pending_error != 0 ? io::error : 0;
      if (conn.reset) return io::readable | io::writable | io::read_hangup | io::hangup | error;
      std::uint32_t mask = conn.to_client.size() < send_size(conn) ? io::writable : 0;
      if (!conn.to_server.empty() || conn.fin) mask |= io::readable;
      if (conn.fin) mask |= io::read_hangup;
      return mask;
    }
    default:
      return 0;
  }
}

void SimKernel::enqueue(Poller& poller, int fd, Interest& item) {
  if (item.queued || item.disabled) return;
  if ((readiness(fd) & (item.events | always_reported)) == 0) return;
  item.queued = true;
  poller.ready.push_back(fd);
  if (poller.waiter != no_thread) scheduler_.wake(poller.waiter);
  if (poller.ready.size() == 1) notify(poller.fd);  // a poller watching this one
}

// K3: a wake-up queues the item if it is not on the ready list already, whatever the trigger.
// K7: exclusive registrations are visited in registration order, and the first whose poller
// had a blocked waiter ends the visit: busy pollers before it still got the item; pollers
// after it did not.
void SimKernel::notify(int fd) {
  const FdEntry* e = entry(fd);
  if (e == nullptr) return;
  bool exclusive_woken = false;
  for (int poller_fd : e->watched_by) {
    Poller& poller = pollers_[fds_[std::size_t(poller_fd)].object];
    Interest& item = poller.items.at(fd);
    bool exclusive = (item.events & io::exclusive) != 0;
    if (exclusive && exclusive_woken) continue;
    bool had_waiter = poller.waiter != no_thread;
    enqueue(poller, fd, item);
    if (exclusive && had_waiter && item.queued) exclusive_woken = true;
  }
}

int SimKernel::poller_create_now() {
  int fd = allocate_fd(FdKind::poller, std::uint32_t(pollers_.size()));
  if (fd >= 0) pollers_.emplace_back().fd = fd;
  return fd;
}

int SimKernel::watch_now(int poller_fd, int fd, std::uint32_t interest, Trigger trigger) {
  FdEntry* p = entry(poller_fd, FdKind::poller);
  if (p == nullptr || entry(fd) == nullptr) return -EBADF;
  if (fd == poller_fd) return -EINVAL;
  Poller& poller = pollers_[p->object];
  auto [item, inserted] = poller.items.try_emplace(fd, Interest{interest, trigger, false, false});
  if (!inserted) return -EEXIST;
  fds_[std::size_t(fd)].watched_by.push_back(poller_fd);
  enqueue(poller, fd, *item);  // registering a ready item queues it at once
  return 0;
}

int SimKernel::rewatch_now(int poller_fd, int fd, std::uint32_t interest, Trigger trigger) {
  FdEntry* p = entry(poller_fd, FdKind::poller);
  if (p == nullptr || entry(fd) == nullptr) return -EBADF;
  Poller& poller = pollers_[p->object];
  Interest* item = poller.items.find(fd);
  if (item == nullptr) return -ENOENT;
  item->events = interest;
  item->trigger = trigger;
  item->disabled = false;  // K6: re-arming
  enqueue(poller, fd, *item);
  return 0;
}

int SimKernel::unwatch_now(int poller_fd, int fd) {
  FdEntry* p = entry(poller_fd, FdKind::poller);
  if (p == nullptr || entry(fd) == nullptr) return -EBADF;
  Poller& poller = pollers_[p->object];
  if (!poller.items.erase(fd)) return -ENOENT;
  std::erase(poller.ready, fd);
  fds_[std::size_t(fd)].watched_by.erase(poller_fd);
  return 0;
}

// K4, K5: take items from the front; an item no longer ready is dropped silently and takes no
// slot; level-triggered items go back to the tail, edge-triggered and one-shot do not; what
// is not taken stays at the front.
// K8: kqueue's EVFILT_READ reports how much is there: a listener's backlog depth, a socket's
// buffered bytes. epoll reports nothing (-1).
std::int64_t SimKernel::kqueue_data(int fd) const {
  if (config_.poller != PollerFlavour::kqueue) return -1;
  const FdEntry& e = fds_[std::size_t(fd)];
  if (e.kind == FdKind::listener) return std::int64_t(listeners_[e.object].queue.size());
  if (e.kind == FdKind::socket) return std::int64_t(conns_[e.conn].to_server.size());
  return -1;
}

int SimKernel::harvest(Poller& poller, std::span<PollEvent> into) {
  std::size_t n = 0;
  while (n < into.size() && !poller.ready.empty()) {
    int fd = poller.ready.front();
    poller.ready.pop_front();
    Interest& item = poller.items.at(fd);
    item.queued = false;
    std::uint32_t ready = readiness(fd) & (item.events | always_reported);
    if (ready == 0) continue;
    std::int64_t data = kqueue_data(fd);
    into[n++] = PollEvent{fd, ready, data};
    if (item.trigger == Trigger::oneshot) item.disabled = true;
  }
  // Level-triggered items reported go back to the tail, in the order they were reported.
  for (std::size_t i = 0; i < n; ++i) {
    Interest& item = poller.items.at(into[i].fd);
    if (item.trigger != Trigger::level) continue;
    item.queued = true;
    poller.ready.push_back(into[i].fd);
  }
  return int(n);
}

// K1: a spinning loop's repeated empty polls cost time, as their syscalls would.
int SimKernel::empty_poll(std::uint32_t index) {
  Instant now = scheduler_.now();
  bool again = pollers_[index].last_empty_poll == now;
  pollers_[index].last_empty_poll = now;
  bool in_thread = scheduler_.current() != no_thread;  // tests poll from outside any thread
  if (again && in_thread && config_.empty_wait_cost > Duration(0)) {
    scheduler_.sleep_until(now + config_.empty_wait_cost);
  }
  return 0;
}

int SimKernel::wait_now(int poller_fd, std::span<PollEvent> into, std::optional<Duration> timeout) {
  FdEntry* p = entry(poller_fd, FdKind::poller);
  if (p == nullptr) return -EBADF;
  if (into.empty()) return -EINVAL;
  std::uint32_t index = p->object;
  LOOPSIM_ASSERT(!timeout || timeout->count() >= 0);
  const std::optional<Instant> deadline =
      timeout ? std::optional<Instant>(scheduler_.now() + with_slack(*timeout)) : std::nullopt;
  const bool polls = timeout == Duration(0);
  for (;;) {
    int n = harvest(pollers_[index], into);
    if (n == 0 && polls) return empty_poll(index);
    if (n > 0 || polls) return n;
    if (deadline && scheduler_.now() >= *deadline) return 0;
    pollers_[index].waiter = scheduler_.current();
    scheduler_.block(deadline);
    pollers_[index].waiter = no_thread;
    if (std::exchange(pollers_[index].interrupted, false)) return -EINTR;
  }
}


}  // namespace loopsim::model
