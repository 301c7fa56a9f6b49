// SimKernel: its making, the descriptor table (K2), and the calls a simulated thread makes, each
// a call point that serves one of the rules in the files beside this one.
#include "model/sim_kernel.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include <xxhash.h>

#include "base/assert.hpp"
#include "model/digest.hpp"
#include "model/sim_kernel_limits.hpp"

namespace loopsim::model {

using namespace limits;

SimKernel::SimKernel(Scheduler& scheduler, SimKernelConfig config)
    : scheduler_(scheduler), config_(config) {
  fds_.resize(stdio_fds);
  for (auto& e : fds_) e.kind = FdKind::stdio;
  open_fds_ = stdio_fds;
}


Duration SimKernel::slack() {
  const auto& set = config_.timer_slack;
  if (set.empty()) return Duration(0);
  return set[scheduler_.choose(ChoiceKind::slack, std::uint32_t(set.size()))];
}

// K1: the thread is busy; others run; the clock moves only through the scheduler.
void SimKernel::spend_now(Duration duration) {
  LOOPSIM_ASSERT_OP(duration.count(), >=, 0);
  scheduler_.sleep_until(scheduler_.now() + with_slack(duration));
}

// ---- descriptors (K2) ----

int SimKernel::allocate_fd(FdKind kind, std::uint32_t object) {
  int fd = free_fds_.empty() ? int(fds_.size()) : *free_fds_.begin();
  if (fd >= config_.rlimit_nofile) return -EMFILE;
  if (open_fds_ + client_files_ >= std::size_t(config_.file_max)) return -ENFILE;
  if (fd == int(fds_.size())) {
    fds_.emplace_back();
  } else {
    free_fds_.erase(free_fds_.begin());
  }
  fds_[std::size_t(fd)].kind = kind;
  fds_[std::size_t(fd)].object = object;
  ++open_fds_;
  return fd;
}

void SimKernel::release_fd(int fd) {
  FdEntry& e = fds_[std::size_t(fd)];
  // K12: out of every interest set, and off every ready list.
  for (int poller_fd : e.watched_by) {
    Poller& poller = pollers_[fds_[std::size_t(poller_fd)].object];
    poller.items.erase(fd);
    std::erase(poller.ready, fd);
  }
  e = FdEntry{};
  free_fds_.insert(fd);
  --open_fds_;
}

const SimKernel::FdEntry* SimKernel::entry(int fd) const {
  if (fd < 0 || std::size_t(fd) >= fds_.size()) return nullptr;
  const FdEntry& e = fds_[std::size_t(fd)];
  return e.kind == FdKind::free ? nullptr : &e;
}

SimKernel::FdEntry* SimKernel::entry(int fd, FdKind kind) {
  if (fd < 0 || std::size_t(fd) >= fds_.size()) return nullptr;
  FdEntry& e = fds_[std::size_t(fd)];
  return e.kind == kind ? &e : nullptr;
}

ConnId SimKernel::conn_of(int fd) const {
  const FdEntry* e = entry(fd);
  return e != nullptr && e->kind == FdKind::socket ? e->conn : no_conn;
}

// ---- the calls a simulated thread makes (the Kernel interface) ----
//
// Each is a point where open windowed happenings may land (Scheduler::call_point), and what it
// returns is what the calling thread learns (Scheduler::learn). A wait is the thread's rest
// point, at the place it was called from. Calls from outside any thread (setting up, callbacks)
// are neither.

namespace {
// What a call taught its caller, folded value by value.
// Nothing is folded where no digest will read it (Scheduler::digests_unused).
class Learnt {
 public:
  Learnt(const Scheduler& scheduler, int op) : on_(scheduler.digesting()), value_(std::uint64_t(op) + 1) {}
  Learnt& add(std::int64_t v) {
    if (!on_) return *this;
    std::uint64_t state = value_ ^ (std::uint64_t(v) * 0xff51afd7ed558ccdull);
    value_ = splitmix64(state);
    return *this;
  }
  Learnt& add(std::string_view bytes) {
    if (!on_) return *this;
    return add(std::int64_t(XXH3_64bits(bytes.data(), bytes.size())));
  }
  std::uint64_t value() const { return value_; }

 private:
  bool on_;
  std::uint64_t value_;
};

enum Op : int {
  op_now, op_spend, op_listen, op_accept, op_read, op_write, op_close, op_abort, op_poller, op_watch, op_rewatch,
  op_unwatch, op_wait, op_wake_create, op_wake_signal, op_wake_drain, op_pipe, op_shutdown, op_file, op_pair
};
}  // namespace

bool SimKernel::interrupt(ThreadId thread) {
  if (thread != no_thread && std::find(sleepers_.begin(), sleepers_.end(), thread) != sleepers_.end()) {
    scheduler_.wake(thread);
    return true;
  }
  for (Poller& p : pollers_) {
    if (p.waiter != thread || thread == no_thread) continue;
    p.interrupted = true;
    scheduler_.wake(thread);
    return true;
  }
  return false;
}

void SimKernel::count_call() {
  if (scheduler_.current() == no_thread) return;
  Instant now = scheduler_.now();
  if (now != calls_instant_) {
    calls_instant_ = now;
    calls_at_instant_ = 0;
  }
  if (++calls_at_instant_ <= calls_at_instant_max) return;
  stalled_ = true;
  for (;;) scheduler_.block(wait_forever);
}

template <class Body>
auto SimKernel::call(int op, const Call& what, Body body) {
  count_call();
  scheduler_.call_point(what);
  auto result = body();
  scheduler_.learn(Learnt(scheduler_, op).add(std::int64_t(result)).value());
  return result;
}

Instant SimKernel::now() {
  scheduler_.learn(Learnt(scheduler_, op_now).add(scheduler_.since_rest().count()).value());
  return Instant(scheduler_.now());
}

void SimKernel::spend(Duration duration) {
  scheduler_.call_point(Call{Call::Kind::spend, -1});
  worked(0, duration > Duration(0));
  spend_now(duration);
  scheduler_.learn(Learnt(scheduler_, op_spend).value());
}

Duration SimKernel::spend_interruptibly(Duration duration) {
  scheduler_.call_point(Call{Call::Kind::spend, -1});
  worked(0, duration > Duration(0));
  const Instant until = scheduler_.now() + with_slack(std::max(duration, Duration(0)));
  const ThreadId me = scheduler_.current();
  LOOPSIM_ASSERT(std::find(sleepers_.begin(), sleepers_.end(), me) == sleepers_.end());  // a thread sleeps once
  sleepers_.push_back(me);
  const bool woken = scheduler_.block(until);
  std::erase(sleepers_, me);
  scheduler_.learn(Learnt(scheduler_, op_spend).value());
  return woken ? std::max(until - scheduler_.now(), Duration(0)) : Duration(0);
}

using K = Call::Kind;
int SimKernel::listen(const ListenSpec& spec) { return call(op_listen, Call{K::allocate, -1}, [&] { return listen_now(spec); }); }
int SimKernel::accept(int listener) {
  return call(op_accept, Call{K::accept, listener}, [&] { int fd = accept_now(listener); return worked(fd, fd >= 0); });
}
std::int64_t SimKernel::write(int fd, std::span<const char> from) {
  return call(op_write, Call{K::write, fd}, [&] {
    const ConnId conn = conn_of(fd);
    std::int64_t n = write_now(fd, from);
    if (conn != no_conn && sink_ != nullptr) sink_->served(conn, true, from.size(), n);
    return worked(n, n > 0);
  });
}
// Closing a connection is work; closing a file, a poller or a pipe end is not (a program that
// opens and closes a spare descriptor around each failing accept gets nothing done).
int SimKernel::close(int fd) {
  return call(op_close, Call{K::close, fd}, [&] {
    const FdEntry* e = entry(fd);
    bool connection = e != nullptr && e->kind == FdKind::socket;
    int rc = close_now(fd);
    return worked(rc, rc == 0 && connection);
  });
}
int SimKernel::abort(int fd) {
  return call(op_abort, Call{K::close, fd}, [&] {
    const FdEntry* e = entry(fd);
    bool connection = e != nullptr && e->kind == FdKind::socket;
    int rc = abort_now(fd);
    return worked(rc, rc == 0 && connection);
  });
}
int SimKernel::poller_create() { return call(op_poller, Call{K::allocate, -1}, [&] { return poller_create_now(); }); }
int SimKernel::watch(int poller, int fd, std::uint32_t interest, Trigger trigger) {
  return call(op_watch, Call{K::watch, fd}, [&] { return watch_now(poller, fd, interest, trigger); });
}
int SimKernel::rewatch(int poller, int fd, std::uint32_t interest, Trigger trigger) {
  return call(op_rewatch, Call{K::watch, fd}, [&] { return rewatch_now(poller, fd, interest, trigger); });
}
int SimKernel::unwatch(int poller, int fd) {
  return call(op_unwatch, Call{K::other, fd}, [&] { return unwatch_now(poller, fd); });
}
int SimKernel::wake_create() { return call(op_wake_create, Call{K::allocate, -1}, [&] { return wake_create_now(); }); }
int SimKernel::shutdown_write(int fd) {
  return call(op_shutdown, Call{K::shutdown, fd}, [&] { int rc = shutdown_write_now(fd); return worked(rc, rc == 0); });
}
int SimKernel::file_open() { return call(op_file, Call{K::allocate, -1}, [&] { return file_open_now(); }); }

void SimKernel::wake_signal(int wake) {
  scheduler_.call_point(Call{K::wake_signal, wake});
  wake_signal_now(wake);
  scheduler_.learn(Learnt(scheduler_, op_wake_signal).value());
}

void SimKernel::wake_drain(int wake) {
  scheduler_.call_point(Call{K::wake_drain, wake});
  const FdEntry* e = entry(wake, FdKind::wake);
  worked(0, e != nullptr && wakes_[e->object]);
  wake_drain_now(wake);
  scheduler_.learn(Learnt(scheduler_, op_wake_drain).value());
}

std::int64_t SimKernel::peek(int fd, std::span<char> into) {
  count_call();
  scheduler_.call_point(Call{K::read, fd});
  std::int64_t n = read_now(fd, into, false);
  Learnt learnt(scheduler_, op_read);
  learnt.add(n);
  if (n > 0) learnt.add(std::string_view(into.data(), std::size_t(n)));
  scheduler_.learn(learnt.value());
  return n;
}

std::int64_t SimKernel::read(int fd, std::span<char> into) {
  count_call();
  scheduler_.call_point(Call{K::read, fd});
  const ConnId conn = conn_of(fd);
  std::int64_t n = read_now(fd, into);
  if (conn != no_conn && sink_ != nullptr) sink_->served(conn, false, into.size(), n);
  worked(0, n > 0);
  Learnt learnt(scheduler_, op_read);
  learnt.add(n);
  if (n > 0) learnt.add(std::string_view(into.data(), std::size_t(n)));
  scheduler_.learn(learnt.value());
  return n;
}

int SimKernel::socketpair(int ends[2]) {
  scheduler_.call_point(Call{K::allocate, -1});
  int rc = socketpair_now(ends);
  scheduler_.learn(Learnt(scheduler_, op_pair).add(rc).add(rc == 0 ? ends[0] : -1).add(rc == 0 ? ends[1] : -1).value());
  return rc;
}

int SimKernel::pipe(int ends[2]) {
  scheduler_.call_point(Call{K::allocate, -1});
  int rc = pipe_now(ends);
  scheduler_.learn(Learnt(scheduler_, op_pipe).add(rc).add(rc == 0 ? ends[0] : -1).add(rc == 0 ? ends[1] : -1).value());
  return rc;
}

[[gnu::noinline]] int SimKernel::wait(int poller, std::span<PollEvent> into, std::optional<Duration> timeout) {
  count_call();
  scheduler_.rest(std::uint64_t(reinterpret_cast<std::uintptr_t>(__builtin_return_address(0))));
  scheduler_.call_point(Call{K::wait, poller});
  if (const FdEntry* p = entry(poller); p != nullptr && p->kind == FdKind::poller) {
    Work& work = work_of_current();
    std::uint64_t& at_last = work.at_wait[p->object];
    work.before_wait = work.total - at_last;
    at_last = work.total;
  }
  int n = wait_now(poller, into, timeout);
  scheduler_.leave_rest();
  Learnt learnt(scheduler_, op_wait);
  learnt.add(n);
  for (int i = 0; i < n; ++i) {
    const PollEvent& e = into[std::size_t(i)];
    learnt.add(e.fd).add(std::int64_t(e.ready)).add(e.data);
  }
  scheduler_.learn(learnt.value());
  return n;
}

}  // namespace loopsim::model
