#include "posix/seam.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <linux/sockios.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/assert.hpp"
#include "posix/user_memory.hpp"
#include "target/target_wire.hpp"

namespace loopsim::posix {

Seam* current = nullptr;
sim::MainWatch* main_watch = nullptr;

void Seam::main_running(bool yes) {
  if (main_watch == nullptr || scheduler_->current() != thread_) return;
  if (main_watch->runs.load(std::memory_order_relaxed) % 2 == std::uint64_t(yes)) return;
  if (yes) main_watch->since_virtual_ns.store(since_start(now()).count(), std::memory_order_relaxed);
  main_watch->runs.fetch_add(1, std::memory_order_release);
}

namespace {

constexpr std::size_t target_stack = 8 << 20;  // a main thread's, as ulimit -s gives

std::uint32_t interest_of(std::uint32_t events) {
  std::uint32_t interest = 0;
  if (events & EPOLLIN) interest |= io::readable;
  if (events & EPOLLOUT) interest |= io::writable;
  if (events & EPOLLEXCLUSIVE) interest |= io::exclusive;
  return interest;
}

Trigger trigger_of(std::uint32_t events) {
  if (events & EPOLLONESHOT) return Trigger::oneshot;
  return (events & EPOLLET) ? Trigger::edge : Trigger::level;
}

// What Linux reports of `ready` to a registration that asked for `events`: the bits asked for,
// and hang-ups and errors always.
std::uint32_t reported(std::uint32_t ready, std::uint32_t events) {
  std::uint32_t out = 0;
  if ((ready & io::readable) && (events & EPOLLIN)) out |= EPOLLIN;
  if ((ready & io::writable) && (events & EPOLLOUT)) out |= EPOLLOUT;
  if ((ready & io::read_hangup) && (events & EPOLLRDHUP)) out |= EPOLLRDHUP;
  if (ready & io::hangup) out |= EPOLLHUP;
  if (ready & io::error) out |= EPOLLERR;
  return out;
}


}  // namespace

Seam::Seam(const sim::Scenario& scenario, int (*main)(int, char**, char**), int argc, char** argv, char** envp,
           int host)
    : scenario_(scenario), main_(main), argc_(argc), argv_(argv), envp_(envp), host_(host) {}

void Seam::start(model::Scheduler& scheduler, model::SimKernel& kernel, sim::Trace& trace,
                 const sim::Clients& clients) {
  scheduler_ = &scheduler;
  kernel_ = &kernel;
  trace_ = &trace;
  clients_ = &clients;
  hard_limit_ = std::uint64_t(std::max(0, kernel.descriptor_limit()));
  anchor_ = LOOPSIM_REAL(open)("/", O_PATH | O_CLOEXEC);
  if (anchor_ < 0) refuse("open", -1, "the seam could not open its placeholder (\"/\" with O_PATH)");
  current = this;
  set_engine_thread();
  main_os_ = ::pthread_self();
  main_tid_ = ::gettid();
  install_preemption();
  thread_ = scheduler.spawn("target", [this] {
    main_running(true);
    exited(main_(argc_, argv_, envp_));
  }, target_stack);
  if (const char* value = std::getenv(test_errno_variable)) scribble_errno(std::atoi(value), Instant{std::chrono::milliseconds(1)});
  if (const char* value = std::getenv(test_overrun_variable)) {
    const std::size_t size = std::size_t(std::max(1, std::atoi(value)));
    const std::unique_ptr<char[]> block(new char[size]());
    const volatile char* past = block.get() + size;
    (void)*past;
  }
}

void Seam::scribble_errno(int value, Instant at) {
  if (at > scenario_.horizon) return;
  scheduler_->at(
      at,
      [this, value, at] {
        errno = value;
        scribble_errno(value, at + std::chrono::milliseconds(1));
      },
      model::tag(model::Happening::scripted, 0));
}

bool Seam::in_target() const {
  if (kernel_ == nullptr) return false;
  // Without allocating (here() may): a sanitizer's allocator reads the clock while it holds its
  // lock, and the clock's interposer asks this. A thread with no record yet is at depth 0.
  const auto i = std::size_t(scheduler_->current() + 1);
  const bool outside = i >= per_thread_.size() || per_thread_[i].depth == 0;
  // A target thread runs only while it holds the baton: its proxy is the simulated thread now.
  if (const TargetThread* t = this_thread()) return scheduler_->current() == t->fiber && outside;
  return on_engine_thread() && scheduler_->current() == thread_ && outside;
}

Seam::PerThread& Seam::here() { return const_cast<PerThread&>(std::as_const(*this).here()); }

const Seam::PerThread& Seam::here() const { return of(scheduler_->current()); }

Seam::PerThread& Seam::of(model::ThreadId thread) const {
  const auto i = std::size_t(thread + 1);
  if (i >= per_thread_.size()) per_thread_.resize(i + 1);
  return per_thread_[i];
}

std::uint64_t& Seam::mask_of(model::ThreadId thread) const { return of(thread).blocked; }

int Seam::worker() const { return here().worker; }

int Seam::blocker() {
  PerThread& t = here();
  if (t.blocker < 0) t.blocker = kernel_->poller_create();
  return t.blocker;
}

std::int64_t Seam::open_connections() const {
  return std::count_if(files_.begin(), files_.end(), [](const Fd& f) { return f.kind == Kind::socket; });
}

std::string Seam::listened_on() const {
  std::string out;
  for (std::uint16_t port : ports_) out += (out.empty() ? "" : ", ") + std::to_string(port);
  return out.empty() ? "none" : out;
}

// In a forked child, the parent's virtual time as it last answered a call of the child's (the
// child runs in none of its own): its copy of the scheduler is frozen at the fork.
Instant Seam::now() const { return forked() && child_now_ > Instant{} ? child_now_ : scheduler_->now(); }

Duration Seam::sleep(Duration duration) {
  Inside inside(*this);
  duration = std::max(duration, Duration(0));
  // On any thread: a signal it lets go cuts the sleep short (post_signal chooses the thread).
  for (;;) {
    const Duration left = kernel_->spend_interruptibly(duration);
    if (left == Duration(0) || deliverable() != 0) return left;
    duration = left;
  }
}

void Seam::random_bytes(void* into, std::size_t size) {
  // splitmix64: integer arithmetic only, the same on every machine.
  if (random_state_ == 0) random_state_ = scenario_.seed ^ 0x6c6f6f7073696d21ULL;
  auto* bytes = static_cast<unsigned char*>(into);
  for (std::size_t at = 0; at < size; at += 8) {
    std::uint64_t z = (random_state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    std::memcpy(bytes + at, &z, std::min<std::size_t>(8, size - at));
  }
}

int Seam::descriptor_limit() const { return kernel_->descriptor_limit(); }

std::uint64_t Seam::descriptor_hard_limit() const {
  // A fault may have raised the soft limit past it: the hard limit is never below the soft.
  return std::max<std::uint64_t>(hard_limit_, std::uint64_t(std::max(0, kernel_->descriptor_limit())));
}

long Seam::set_descriptor_limits(std::uint64_t soft, std::uint64_t hard) {
  Inside inside(*this);
  if (soft > hard) return failed(-EINVAL);
  if (hard > descriptor_hard_limit()) return failed(-EPERM);  // raising it takes CAP_SYS_RESOURCE
  hard_limit_ = hard;
  kernel_->set_rlimit_nofile(int(std::min<std::uint64_t>(soft, std::uint64_t(INT32_MAX))));
  return 0;
}

// What Linux's fstat says of each kind, less the numbers that name a machine's devices.
long Seam::stat(int fd, struct stat* into) {
  Inside inside(*this);
  Fd* entry = simulated(fd);
  if (entry == nullptr) return failed(-EBADF);  // closed by another thread since (Seam::simulated)
  const Fd& f = *entry;
  *into = {};
  switch (f.kind) {
    case Kind::pipe_read:
    case Kind::pipe_write: into->st_mode = S_IFIFO | 0600; break;
    case Kind::poller:
    case Kind::eventfd:
    case Kind::signalfd: into->st_mode = 0600; break;  // an anonymous inode: no type bits
    default: into->st_mode = S_IFSOCK | 0777; break;
  }
  into->st_nlink = 1;
  into->st_blksize = 4096;
  into->st_uid = ::getuid();
  into->st_gid = ::getgid();
  into->st_ino = ino_t(f.sim + 1);
  return 0;
}

void Seam::fatal(const char* call, const std::string& cause) {
  stop_run(scenario_.position_of({"target.exec"}) + ": the seam failed inside " + call + where(-1) + ": " + cause +
           " (a defect of loopsim's, not of the target)");
}

void Seam::stop_run(const std::string& message) {
  if (forked()) tell_parent_refused(message);
  sim::wire::send_failure(host_, sim::wire::Failure::bad_input, message);
  LOOPSIM_REAL(_exit)(2);
  __builtin_unreachable();
}

std::string Seam::where(int fd) const {
  std::string text = fd >= 0 ? " on simulated descriptor " + std::to_string(fd) : "";
  double ms = double(since_start(now()).count()) / 1e6;
  char at[64];
  std::snprintf(at, sizeof at, " at %.3f ms of virtual time", ms);
  return text + at;
}

void Seam::refuse(const std::string& call, int fd, const std::string& why) {
  stop_run(scenario_.position_of({"target.exec"}) + (forked() ? ": the target's child (forked, not yet exec'd) called " : ": the target called ") +
           call + where(fd) + ": " + why);
}

void Seam::exited(int status, int signal) {
  ended_ = true;
  exit_status_ = status;
  ended_at_ = now();
  trace_->events.push_back(sim::ev::LoopExit{now(), 0, int(open_connections())});
  trace_->events.push_back(sim::ev::ProcessExit{now(), status, signal});
  {
    Inside inside(*this);
    for (int fd = 0; fd < int(fds_.size()); ++fd) {
      if (kind_of(fd) != Kind::none) close(fd);
    }
  }
  for (;;) scheduler_->block(wait_forever);
}

int Seam::adopt(Kind kind, int sim, bool nonblocking, bool cloexec) {
  int fd = LOOPSIM_REAL(fcntl)(anchor_, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) refuse("a descriptor-making call", -1, "the real process is out of descriptors for placeholders");
  LOOPSIM_ASSERT_OP(sim, >=, 0);
  if (std::size_t(sim) >= files_.size()) files_.resize(std::size_t(sim) + 1);
  // A SimKernel descriptor is given out again only once its last descriptor here closed.
  LOOPSIM_ASSERT(files_[std::size_t(sim)].slots == 0);
  Fd& f = files_[std::size_t(sim)];
  f = Fd{};
  f.kind = kind;
  f.sim = sim;
  f.nonblocking = nonblocking;
  share(fd, sim, cloexec);
  LOOPSIM_ASSERT(kind_of(fd) == kind && process_fd(sim) == fd);  // the table, both ways
  return fd;
}

void Seam::share(int fd, int sim, bool cloexec) {
  if (std::size_t(fd) >= fds_.size()) fds_.resize(std::size_t(fd) + 1);
  // A fresh real number is one the seam holds nothing under, unless the program closed it
  // where no interposer saw.
  if (kind_of(fd) != Kind::none) closed_unseen(fd);
  fds_[std::size_t(fd)] = Slot{sim, cloexec};
  ++files_[std::size_t(sim)].slots;
  if (process_fd(sim) < 0) known_as(sim, fd);
  if (files_[std::size_t(sim)].kind == Kind::poller) pollers_.push_back(fd);
}

void Seam::forget(int fd, bool placeholder) {
  LOOPSIM_ASSERT(kind_of(fd) != Kind::none);
  Fd& f = file_of(fd);
  const int sim = f.sim;
  const Kind kind = f.kind;
  // One SimKernel descriptor is given back, as the number counted against the limit (K2): this
  // one's if a duplicate held one, or else a remaining duplicate's, the file's own now standing
  // for that duplicate. Not by a forked child, whose simulation is a frozen copy.
  int give_back = fds_[std::size_t(fd)].held;
  fds_[std::size_t(fd)] = Slot{};
  for (int other = 0; give_back < 0 && f.slots > 1 && other < int(fds_.size()); ++other) {
    if (fds_[std::size_t(other)].sim == sim) give_back = std::exchange(fds_[std::size_t(other)].held, -1);
  }
  if (give_back >= 0 && !forked()) kernel_->close(give_back);
  LOOPSIM_ASSERT_OP(f.slots, >, 0);
  if (kind == Kind::poller) LOOPSIM_ASSERT_OP(std::erase(pollers_, fd), ==, std::size_t(1));  // listed once
  if (--f.slots > 0) {
    // A duplicate keeps the file open, and its epoll registrations with it (Linux keys them by
    // the number they were made through, and drops them only with the file's last descriptor).
    if (by_sim_[std::size_t(sim)] == fd) {
      by_sim_[std::size_t(sim)] = -1;
      for (int other = 0; other < int(fds_.size()) && process_fd(sim) < 0; ++other) {
        if (fds_[std::size_t(other)].sim == sim) known_as(sim, other);
      }
    }
  } else {
    for (int p : pollers_) file_of(p).watched.erase(sim);  // K12, on this side too
    if (std::size_t(sim) < by_sim_.size()) by_sim_[std::size_t(sim)] = -1;
    f = Fd{};
  }
  LOOPSIM_ASSERT(kind_of(fd) == Kind::none);
  if (kind != Kind::file && placeholder) LOOPSIM_REAL(close)(fd);
}

// glibc's fclose (a FILE the program made with fdopen) closes with a call of its own that no
// interposer sees: the seam learns of it when the real kernel gives the number out again. The
// descriptor it stood for closes then, as the program's close closed it, the number already
// the new one's.
void Seam::closed_unseen(int fd) {
  Inside inside(*this);
  release(fd, false);
}

void Seam::known_as(int sim, int fd) {
  LOOPSIM_ASSERT(sim >= 0 && fd >= 0);
  if (std::size_t(sim) >= by_sim_.size()) by_sim_.resize(std::size_t(sim) + 1, -1);
  by_sim_[std::size_t(sim)] = fd;
}

int Seam::process_fd(int sim) const {
  return sim >= 0 && std::size_t(sim) < by_sim_.size() ? by_sim_[std::size_t(sim)] : -1;
}

sim::ClientIndex Seam::client_of(int fd) const {
  LOOPSIM_ASSERT(owns(fd));
  return clients_->client_of(fds_[std::size_t(fd)].sim);
}

long Seam::failed(long error) {
  if (scenario_.target->call_cost > Duration(0)) scheduler_->sleep_until(now() + scenario_.target->call_cost);
  return error;
}

// A blocking call on a descriptor that is not ready waits for it, on a poller of the seam's own.
bool Seam::block_until(int sim, std::uint32_t ready) {
  const int poller = blocker();
  if (poller < 0) refuse("a blocking call", process_fd(sim), "no descriptor is left for the seam to wait with");
  kernel_->watch(poller, sim, ready, Trigger::level);
  PollEvent event[1];
  const int rc = kernel_->wait(poller, event, wait_forever);
  kernel_->unwatch(poller, sim);
  // A signal came: with SA_RESTART (for every one pending) its handler runs here and the call
  // goes on waiting; without, the call fails EINTR, and the handler runs as it returns.
  if (rc != -EINTR) return true;
  if (!restarts()) return false;
  if (scheduler_->current() != thread_) {
    // Another thread's handlers run on its own OS thread: the call fails EINTR to its
    // interposer, which runs them and makes the call again (served, posix/interpose.hpp).
    here().restart = true;
    return false;
  }
  const int depth = std::exchange(here().depth, 0);  // the handlers' calls are the program's
  deliver_signals();
  here().depth = depth;
  return true;
}

std::uint64_t Seam::begin_pass(std::optional<Duration> timeout) {
  end_pass();
  PerThread& t = here();
  t.in_pass = true;
  ++passes_;
  ++t.passes;
  trace_->workers = std::max(trace_->workers, std::int64_t(t.worker) + 1);
  trace_->events.push_back(sim::ev::PassBegin{now(), t.worker, t.passes, timeout});
  return t.passes;
}

void Seam::end_pass() {
  PerThread& t = here();
  if (!t.in_pass) return;
  t.in_pass = false;
  trace_->events.push_back(sim::ev::PassEnd{now(), t.worker, t.passes, false, false});
}

// ---- reading, writing, closing ----

long Seam::read(int fd, void* into, std::size_t size, bool nonblocking_now, bool peek) {
  if (forked()) return child_forward(peek ? 'p' : 'r', fd, into, size, 0, nonblocking_now);
  Inside inside(*this);
  Fd* entry = simulated(fd);
  if (entry == nullptr) return failed(-EBADF);  // closed by another thread since (Seam::simulated)
  Fd& f = *entry;
  bool nonblocking = f.nonblocking || nonblocking_now;
  if (peek && f.kind != Kind::socket && f.kind != Kind::pair) return failed(-ENOTSOCK);
  for (;;) {
    long n = 0;
    switch (f.kind) {
      case Kind::socket:
      case Kind::pipe_read:
      case Kind::pair:
        if (size == 0) return 0;
        n = peek ? long(kernel_->peek(f.sim, std::span(static_cast<char*>(into), size)))
                 : long(kernel_->read(f.sim, std::span(static_cast<char*>(into), size)));
        if (peek && n >= 0) return n;  // a peek opens no request
        break;
      case Kind::eventfd:
        if (size < sizeof(std::uint64_t)) return failed(-EINVAL);
        if (f.counter == 0) {
          n = -EAGAIN;
          break;
        }
        {
          std::uint64_t value = f.semaphore ? 1 : f.counter;
          f.counter -= value;
          if (f.counter == 0) kernel_->wake_drain(f.sim);
          std::memcpy(into, &value, sizeof value);
        }
        return sizeof(std::uint64_t);
      case Kind::pipe_write: return failed(-EBADF);
      case Kind::datagram:  // no datagram ever comes
        n = -EAGAIN;
        break;
      case Kind::signalfd:
        n = read_signals(f, into, size);
        if (n == -EINVAL) return failed(n);
        if (n > 0) return n;
        break;
      case Kind::listener:
      case Kind::unbound: return failed(-ENOTCONN);
      default: return failed(-EINVAL);
    }
    if (n == -EAGAIN && !nonblocking) {
      if (!block_until(f.sim, io::readable)) return failed(-EINTR);
      continue;
    }
    if (n > 0 && f.kind == Kind::socket && !f.request_open) {
      f.request_open = true;
      trace_->events.push_back(sim::ev::RequestBegin{now(), worker(), fd, client_of(fd), ""});
    }
    return n < 0 ? failed(n) : n;
  }
}

long Seam::write(int fd, const void* from, std::size_t size, bool nonblocking_now, bool addressed) {
  if (forked()) return child_forward('w', fd, const_cast<void*>(from), size, 0, nonblocking_now);
  Inside inside(*this);
  Fd* entry = simulated(fd);
  if (entry == nullptr) return failed(-EBADF);  // closed by another thread since (Seam::simulated)
  Fd& f = *entry;
  bool nonblocking = f.nonblocking || nonblocking_now;
  if (f.kind == Kind::eventfd) {
    std::uint64_t value = 0;
    if (size < sizeof value) return failed(-EINVAL);
    std::memcpy(&value, from, sizeof value);
    if (value == ~std::uint64_t{0}) return failed(-EINVAL);
    f.counter += value;
    if (f.counter > 0) kernel_->wake_signal(f.sim);
    return sizeof value;
  }
  if (f.kind == Kind::pipe_read) return failed(-EBADF);
  if (f.kind == Kind::datagram) {  // sent whole, to no one: UDP's largest datagram is 65,507 bytes
    if (!f.connected && !addressed) return failed(-EDESTADDRREQ);
    return size > 65507 ? failed(-EMSGSIZE) : long(size);
  }
  if (f.kind == Kind::listener || f.kind == Kind::unbound) return failed(-ENOTCONN);
  if (f.kind != Kind::socket && f.kind != Kind::pipe_write && f.kind != Kind::pair) return failed(-EINVAL);
  if (size == 0) return 0;
  std::size_t done = 0;
  for (;;) {
    long n = long(kernel_->write(f.sim, std::span(static_cast<const char*>(from) + done, size - done)));
    if (n > 0) done += std::size_t(n);
    if (n > 0 && f.kind == Kind::socket && f.request_open) {
      f.request_open = false;
      trace_->events.push_back(sim::ev::RequestEnd{now(), worker(), fd, client_of(fd), 0});
    }
    // A blocking write waits until all of it is taken, as Linux's does.
    if (!nonblocking && (n == -EAGAIN || (n > 0 && done < size))) {
      if (!block_until(f.sim, io::writable)) return done > 0 ? long(done) : failed(-EINTR);
      continue;
    }
    if (n < 0 && done == 0) return failed(n);
    return long(done);
  }
}

long Seam::close(int fd) {
  Inside inside(*this);
  return release(fd, true);
}

long Seam::release(int fd, bool placeholder) {
  LOOPSIM_ASSERT(kind_of(fd) != Kind::none);  // only a descriptor the table holds is released
  Fd& f = file_of(fd);
  long rc = 0;
  if (f.slots > 1) {
    // A duplicate's close closes nothing but the number: the file stays open for the others.
  } else if (f.kind == Kind::socket) {
    trace_->events.push_back(sim::ev::Close{now(), worker(), fd, client_of(fd)});
    rc = f.linger_zero ? kernel_->abort(f.sim) : kernel_->close(f.sim);
  } else if (f.sim >= 0) {
    if (f.kind == Kind::listener && f.sim == listener_) {
      listener_ = -1;
      // The process's listener, whichever of its threads closes it (a Go program's goroutine
      // may run on any): worker 0's, as its shutdown_begin and loop_exit are.
      trace_->events.push_back(sim::ev::ListenerClosed{now(), 0});
    }
    rc = kernel_->close(f.sim);
  }
  forget(fd, placeholder);
  return rc;
}

// ---- pollers ----

long Seam::poller_create(int flags) {
  Inside inside(*this);
  int sim = kernel_->poller_create();
  if (sim < 0) return failed(sim);
  int fd = adopt(Kind::poller, sim, false, (flags & EPOLL_CLOEXEC) != 0);
  LOOPSIM_ASSERT_OP(std::count(pollers_.begin(), pollers_.end(), fd), ==, 1);  // adopt listed it
  return fd;
}

long Seam::poller_control(int poller, int op, int fd, const epoll_event* event) {
  Inside inside(*this);
  Fd* entry = simulated(poller);
  if (entry == nullptr) return failed(-EBADF);  // closed by another thread since (Seam::simulated)
  Fd& p = *entry;
  if (p.kind != Kind::poller) return failed(-EINVAL);
  if (fd == poller) return failed(-EINVAL);
  if (kind_of(fd) == Kind::file) return failed(-EPERM);  // a regular file, as Linux says
  if (!owns(fd) && LOOPSIM_REAL(fcntl)(fd, F_GETFD) < 0) return failed(-EBADF);  // no descriptor at all
  if (!owns(fd)) {
    refuse("epoll_ctl", -1,
           "descriptor " + std::to_string(fd) +
               " is a real one (not made through the seam); a simulated poller cannot watch it");
  }
  Fd& f = file_of(fd);
  if (op != EPOLL_CTL_DEL && event == nullptr) return failed(-EFAULT);
  // Linux keys a registration by the file and the number it was made through: a duplicate's
  // number names none (ENOENT), and may make a second one, which the simulated poller, keyed by
  // the file alone, cannot hold.
  auto it = p.watched.find(f.sim);
  const bool here = it != p.watched.end() && it->second.fd == fd;
  if (op == EPOLL_CTL_ADD && it != p.watched.end() && !here) {
    refuse("epoll_ctl(EPOLL_CTL_ADD)", fd,
           "the poller already watches this descriptor's open file through descriptor " +
               std::to_string(it->second.fd) + " (a dup of it); two registrations of one file are not simulated");
  }
  if ((op == EPOLL_CTL_MOD || op == EPOLL_CTL_DEL) && it != p.watched.end() && !here) return failed(-ENOENT);
  long rc = 0;
  switch (op) {
    case EPOLL_CTL_ADD:
      rc = kernel_->watch(p.sim, f.sim, interest_of(event->events), trigger_of(event->events));
      if (rc == 0) p.watched[f.sim] = {fd, *event};
      break;
    case EPOLL_CTL_MOD:
      rc = kernel_->rewatch(p.sim, f.sim, interest_of(event->events), trigger_of(event->events));
      if (rc == 0) p.watched[f.sim] = {fd, *event};
      break;
    case EPOLL_CTL_DEL:
      rc = kernel_->unwatch(p.sim, f.sim);
      if (rc == 0) p.watched.erase(f.sim);
      break;
    default: return failed(-EINVAL);
  }
  return rc < 0 ? failed(rc) : rc;
}

long Seam::poller_wait(int poller, epoll_event* events, int max, int timeout_ms) {
  Inside inside(*this);
  Fd* entry = simulated(poller);
  if (entry == nullptr) return failed(-EBADF);  // closed by another thread since (Seam::simulated)
  Fd& p = *entry;
  // Linux refuses more than INT_MAX / sizeof(epoll_event) events (EP_MAX_EVENTS), and never
  // allocates for the rest: a wait may return fewer than asked.
  constexpr long ep_max_events = INT_MAX / long(sizeof(epoll_event));
  if (p.kind != Kind::poller || max <= 0 || max > ep_max_events) return failed(-EINVAL);
  const std::optional<Duration> timeout =
      timeout_ms < 0 ? std::nullopt : std::optional<Duration>(Duration(std::int64_t(timeout_ms) * 1'000'000));
  const std::uint64_t pass = begin_pass(timeout);
  std::vector<PollEvent> scratch(static_cast<std::size_t>(std::min(max, 4096)));  // this thread's
  const std::optional<Instant> deadline = timeout ? std::optional<Instant>(now() + *timeout) : std::nullopt;
  int n = 0, out = 0;
  std::vector<epoll_event> found;  // copied to `events` as Linux copies them, a bad pointer EFAULT
  sim::ev::Events seen{now(), worker(), pass, {}, -1};
  for (;;) {
    const std::optional<Duration> left = deadline ? std::optional<Duration>(std::max(*deadline - now(), Duration(0))) : std::nullopt;
    n = kernel_->wait(p.sim, scratch, left);
    LOOPSIM_ASSERT_OP(n, <=, int(scratch.size()));  // the kernel fills no more than it was given
    seen.t = now();
    // The first wait of the loop is the pass's: what came before it is the previous pass's work.
    if (seen.work < 0) seen.work = sim::ev::work_count(kernel_->work_before_wait(scheduler_->current()));
    for (int i = 0; i < std::max(n, 0); ++i) {
      auto it = p.watched.find(scratch[std::size_t(i)].fd);
      if (it == p.watched.end()) continue;
      std::uint32_t bits = reported(scratch[std::size_t(i)].ready, it->second.event.events);
      if (bits == 0) continue;
      found.push_back(epoll_event{bits, it->second.event.data});
      ++out;
      seen.fds.push_back(it->second.fd);
    }
    // Linux reports nothing a registration did not ask for, and does not wake the waiter for
    // it: a wait that may still block goes on waiting.
    if (out > 0 || n <= 0 || left == Duration(0)) break;
  }
  LOOPSIM_ASSERT(out <= max && std::size_t(out) == found.size());  // at most what the program has room for
  if (!copy_out(events, found.data(), found.size() * sizeof(epoll_event))) {
    // Linux's EFAULT: nothing was returned (an edge-triggered readiness taken is not put back).
    seen.fds.clear();
    trace_->events.push_back(std::move(seen));
    return failed(-EFAULT);
  }
  trace_->events.push_back(std::move(seen));
  return n < 0 ? failed(n) : out;
}

namespace {

std::uint32_t poll_interest(short events) {
  std::uint32_t interest = 0;
  if (events & (POLLIN | POLLPRI | POLLRDNORM)) interest |= io::readable;
  if (events & (POLLOUT | POLLWRNORM)) interest |= io::writable;
  return interest;
}

// What Linux's poll reports of `ready` to an entry that asked for `events`: the bits asked
// for, and hang-ups and errors always.
short poll_reported(std::uint32_t ready, short events) {
  short out = 0;
  if (ready & io::readable) out |= short(events & (POLLIN | POLLRDNORM));
  if (ready & io::writable) out |= short(events & (POLLOUT | POLLWRNORM));
  if ((ready & io::read_hangup) && (events & POLLRDHUP)) out |= POLLRDHUP;
  if (ready & io::hangup) out |= POLLHUP;
  if (ready & io::error) out |= POLLERR;
  return out;
}

}  // namespace

long Seam::poll(struct pollfd* fds, std::size_t n, std::optional<Duration> timeout) {
  Inside inside(*this);
  const int poller = blocker();
  if (poller < 0) return failed(poller);
  // One registration a descriptor, asking for what all its entries ask.
  std::map<int, std::uint32_t> interest;  // by simulated descriptor
  for (std::size_t i = 0; i < n; ++i) {
    fds[i].revents = 0;
    if (fds[i].fd < 0) continue;
    if (!owns(fds[i].fd)) {
      refuse("poll", fds[i].fd, "it mixes real descriptors with simulated ones, which no one wait can watch");
    }
    interest[fds_[std::size_t(fds[i].fd)].sim] |= poll_interest(fds[i].events);
  }
  for (const auto& [sim, wanted] : interest) kernel_->watch(poller, sim, wanted, Trigger::level);
  const std::uint64_t pass = begin_pass(timeout);
  sim::ev::Events seen{now(), worker(), pass, {}, -1};
  std::vector<PollEvent> scratch(std::max<std::size_t>(interest.size(), 1));
  const std::optional<Instant> deadline = timeout ? std::optional<Instant>(now() + *timeout) : std::nullopt;
  long ready = 0;
  int rc = 0;
  for (;;) {
    const std::optional<Duration> left = deadline ? std::optional<Duration>(std::max(*deadline - now(), Duration(0))) : std::nullopt;
    rc = kernel_->wait(poller, scratch, left);
    LOOPSIM_ASSERT_OP(rc, <=, int(scratch.size()));
    seen.t = now();
    if (seen.work < 0) seen.work = sim::ev::work_count(kernel_->work_before_wait(scheduler_->current()));
    std::map<int, std::uint32_t> now_ready;
    for (int i = 0; i < std::max(rc, 0); ++i) now_ready[scratch[std::size_t(i)].fd] = scratch[std::size_t(i)].ready;
    for (std::size_t i = 0; i < n; ++i) {
      if (fds[i].fd < 0) continue;
      auto it = now_ready.find(fds_[std::size_t(fds[i].fd)].sim);
      fds[i].revents = it == now_ready.end() ? 0 : poll_reported(it->second, fds[i].events);
      if (fds[i].revents != 0) {
        ++ready;
        seen.fds.push_back(fds[i].fd);
      }
    }
    // Reported only what no entry asked for: Linux goes on waiting while it may.
    if (ready > 0 || rc < 0 || left == Duration(0)) break;
  }
  LOOPSIM_ASSERT_OP(std::size_t(ready), <=, n);  // poll counts entries, each at most once
  for (const auto& [sim, wanted] : interest) kernel_->unwatch(poller, sim);
  trace_->events.push_back(std::move(seen));
  return rc < 0 ? failed(rc) : ready;
}

// ---- eventfds, pipes, descriptor flags ----

long Seam::eventfd(unsigned int value, int flags) {
  Inside inside(*this);
  int sim = kernel_->wake_create();
  if (sim < 0) return failed(sim);
  int fd = adopt(Kind::eventfd, sim, (flags & EFD_NONBLOCK) != 0, (flags & EFD_CLOEXEC) != 0);
  Fd& f = file_of(fd);
  f.semaphore = (flags & EFD_SEMAPHORE) != 0;
  f.counter = value;
  if (value > 0) kernel_->wake_signal(sim);
  return fd;
}

long Seam::pipe(int ends[2], int flags) {
  Inside inside(*this);
  int sim[2];
  int rc = kernel_->pipe(sim);
  if (rc < 0) return failed(rc);
  bool nonblocking = (flags & O_NONBLOCK) != 0;
  const bool cloexec = (flags & O_CLOEXEC) != 0;
  ends[0] = adopt(Kind::pipe_read, sim[0], nonblocking, cloexec);
  ends[1] = adopt(Kind::pipe_write, sim[1], nonblocking, cloexec);
  return 0;
}

// K15. Linux's other local socket types are refused by name: a program given an error would go
// another way than it goes on Linux. Other families are EOPNOTSUPP, as Linux says of AF_INET.
long Seam::socketpair(int domain, int type, int ends[2]) {
  Inside inside(*this);
  if (domain != AF_UNIX) return failed(-EOPNOTSUPP);
  const int kind = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (kind != SOCK_STREAM) {
    refuse("socketpair(AF_UNIX, " + std::string(kind == SOCK_DGRAM ? "SOCK_DGRAM" : kind == SOCK_SEQPACKET ? "SOCK_SEQPACKET" : "type " + std::to_string(kind)) + ")",
           -1, "the seam serves socketpair(AF_UNIX, SOCK_STREAM) only");
  }
  int sim[2];
  int rc = kernel_->socketpair(sim);
  if (rc < 0) return failed(rc);
  bool nonblocking = (type & SOCK_NONBLOCK) != 0;
  const bool cloexec = (type & SOCK_CLOEXEC) != 0;
  ends[0] = adopt(Kind::pair, sim[0], nonblocking, cloexec);
  ends[1] = adopt(Kind::pair, sim[1], nonblocking, cloexec);
  return 0;
}

namespace {

// An fcntl command by its name, for a refusal's message.
std::string fcntl_name(int cmd) {
  switch (cmd) {
    case F_DUPFD: return "F_DUPFD";
    case F_GETFD: return "F_GETFD";
    case F_SETFD: return "F_SETFD";
    case F_GETFL: return "F_GETFL";
    case F_SETFL: return "F_SETFL";
    case F_GETLK: return "F_GETLK";
    case F_SETLK: return "F_SETLK";
    case F_SETLKW: return "F_SETLKW";
    case F_SETOWN: return "F_SETOWN";
    case F_GETOWN: return "F_GETOWN";
    case F_SETSIG: return "F_SETSIG";
    case F_GETSIG: return "F_GETSIG";
    case F_SETOWN_EX: return "F_SETOWN_EX";
    case F_GETOWN_EX: return "F_GETOWN_EX";
    case F_OFD_GETLK: return "F_OFD_GETLK";
    case F_OFD_SETLK: return "F_OFD_SETLK";
    case F_OFD_SETLKW: return "F_OFD_SETLKW";
    case F_SETLEASE: return "F_SETLEASE";
    case F_GETLEASE: return "F_GETLEASE";
    case F_NOTIFY: return "F_NOTIFY";
    case F_DUPFD_CLOEXEC: return "F_DUPFD_CLOEXEC";
    case F_SETPIPE_SZ: return "F_SETPIPE_SZ";
    case F_GETPIPE_SZ: return "F_GETPIPE_SZ";
    case F_ADD_SEALS: return "F_ADD_SEALS";
    case F_GET_SEALS: return "F_GET_SEALS";
    default: return "command " + std::to_string(cmd);
  }
}

// An ioctl request by its name in <sys/ioctl.h> and <linux/sockios.h>, for a refusal: nginx's
// master asks for FIOASYNC, and "request 21586" says nothing to a person.
std::string ioctl_name(unsigned long request) {
  switch (request) {
    case FIONBIO: return "FIONBIO";
    case FIONREAD: return "FIONREAD";  // SIOCINQ, TIOCINQ
    case FIOASYNC: return "FIOASYNC";
    case FIOCLEX: return "FIOCLEX";
    case FIONCLEX: return "FIONCLEX";
    case FIOSETOWN: return "FIOSETOWN";
    case FIOGETOWN: return "FIOGETOWN";
    case SIOCSPGRP: return "SIOCSPGRP";
    case SIOCGPGRP: return "SIOCGPGRP";
    case SIOCATMARK: return "SIOCATMARK";
    case TIOCOUTQ: return "TIOCOUTQ";  // SIOCOUTQ
    case SIOCOUTQNSD: return "SIOCOUTQNSD";
    case SIOCGSTAMP: return "SIOCGSTAMP";
    case SIOCGSTAMPNS: return "SIOCGSTAMPNS";
    case TCGETS: return "TCGETS";
    case TCSETS: return "TCSETS";
    case TIOCGWINSZ: return "TIOCGWINSZ";
    case TIOCSWINSZ: return "TIOCSWINSZ";
    case SIOCGIFCONF: return "SIOCGIFCONF";
    case SIOCGIFFLAGS: return "SIOCGIFFLAGS";
    case SIOCGIFADDR: return "SIOCGIFADDR";
    case SIOCGIFINDEX: return "SIOCGIFINDEX";
    case SIOCGIFNAME: return "SIOCGIFNAME";
    case SIOCGIFHWADDR: return "SIOCGIFHWADDR";
    case SIOCGIFMTU: return "SIOCGIFMTU";
    case SIOCGIFNETMASK: return "SIOCGIFNETMASK";
    default: {
      char text[48];
      std::snprintf(text, sizeof text, "request %lu (0x%lx)", request, request);
      return text;
    }
  }
}

}  // namespace

long Seam::fcntl(int fd, int cmd, long arg) {
  Inside inside(*this);
  Fd* entry = simulated(fd);
  if (entry == nullptr) return failed(-EBADF);  // closed by another thread since (Seam::simulated)
  Fd& f = *entry;
  switch (cmd) {
    case F_GETFL: {
      int mode = f.kind == Kind::pipe_read ? O_RDONLY : f.kind == Kind::pipe_write ? O_WRONLY : O_RDWR;
      return mode | (f.nonblocking ? O_NONBLOCK : 0);
    }
    case F_SETFL:
      f.nonblocking = (arg & O_NONBLOCK) != 0;
      return 0;
    case F_GETFD: return fds_[std::size_t(fd)].cloexec ? FD_CLOEXEC : 0;
    case F_SETFD:
      fds_[std::size_t(fd)].cloexec = (arg & FD_CLOEXEC) != 0;
      return 0;
    case F_DUPFD: return duplicate(fd, int(arg), false, true);
    case F_DUPFD_CLOEXEC: return duplicate(fd, int(arg), true, true);
    case F_GETPIPE_SZ: {
      std::int64_t n = kernel_->pipe_size(f.sim);
      return n < 0 ? failed(n) : long(n);
    }
    case F_SETPIPE_SZ: {
      std::int64_t n = kernel_->set_pipe_size(f.sim, arg < 0 ? std::uint64_t(-1) : std::uint64_t(arg));
      return n < 0 ? failed(n) : long(n);
    }
    default:
      refuse("fcntl(" + fcntl_name(cmd) + ")", fd,
             "the seam serves F_GETFL, F_SETFL, F_GETFD, F_SETFD, F_DUPFD, F_DUPFD_CLOEXEC, F_GETPIPE_SZ and F_SETPIPE_SZ");
  }
}

long Seam::ioctl(int fd, unsigned long request, void* arg) {
  Inside inside(*this);
  Fd* entry = simulated(fd);
  if (entry == nullptr) return failed(-EBADF);  // closed by another thread since (Seam::simulated)
  Fd& f = *entry;
  switch (request) {
    case FIONBIO:
      if (arg == nullptr) return failed(-EFAULT);
      f.nonblocking = *static_cast<int*>(arg) != 0;
      return 0;
    case FIONREAD: {
      if (arg == nullptr) return failed(-EFAULT);
      std::int64_t n = kernel_->pending_bytes(f.sim);
      if (n < 0) return failed(n);
      *static_cast<int*>(arg) = int(std::min<std::int64_t>(n, INT32_MAX));
      return 0;
    }
    case FIOCLEX:
    case FIONCLEX: return 0;
    default:
      refuse("ioctl(" + ioctl_name(request) + ")", fd, "the seam serves FIONBIO, FIONREAD, FIOCLEX and FIONCLEX");
  }
}

// dup(2), dup2 and dup3 (`lowest` false: onto `to`), F_DUPFD (`lowest`: the lowest free number
// from `to`). The new number opens the same file: its status flags (O_NONBLOCK), offsets and
// epoll registrations are shared; only FD_CLOEXEC is its own, and off unless asked. The number
// is taken in the real table too, as a copy of the placeholder, so that it is the one Linux
// would give; and it counts against the simulated RLIMIT_NOFILE as any descriptor does (K2), a
// SimKernel descriptor held for it. dup2 and dup3 onto an open descriptor close it first,
// silently, as Linux's do.
long Seam::duplicate(int fd, int to, bool cloexec, bool lowest) {
  Inside inside(*this);
  if (!owns(fd) && !owns(to)) return failed(-EBADF);  // the interposer's to pass on, but for a race
  if (!owns(fd) && LOOPSIM_REAL(fcntl)(fd, F_GETFD) < 0) return failed(-EBADF);
  if (!lowest && fd == to) return to;  // dup2 onto itself changes nothing (dup3 refused it before)
  if (lowest && to < 0) return failed(-EINVAL);
  // The real dup3 below takes the number over. Closing it first gives its count back, so that
  // a dup2 onto an open descriptor never fails EMFILE, as on Linux.
  if (!lowest && owns(to)) release(to, false);
  int held = -1;
  if (owns(fd)) {
    held = kernel_->file_open();
    if (held < 0) return failed(held);  // EMFILE, as Linux's dup at the limit
  }
  // A placeholder's copy is close-on-exec for real, whatever the program asked (adopt).
  const bool real_cloexec = cloexec || owns(fd);
  const int made = lowest ? LOOPSIM_REAL(fcntl)(fd, real_cloexec ? F_DUPFD_CLOEXEC : F_DUPFD, to)
                          : LOOPSIM_REAL(dup3)(fd, to, real_cloexec ? O_CLOEXEC : 0);
  if (made < 0) {
    const int error = errno;
    if (held >= 0) kernel_->close(held);
    return failed(-error);
  }
  if (owns(fd)) {
    share(made, fds_[std::size_t(fd)].sim, cloexec);
    fds_[std::size_t(made)].held = held;
  }
  return made;
}

long Seam::file_slot() {
  Inside inside(*this);
  int slot = kernel_->file_open();
  return slot < 0 ? failed(slot) : slot;
}

void Seam::file_opened(int fd, int slot) {
  if (std::size_t(slot) >= files_.size()) files_.resize(std::size_t(slot) + 1);
  LOOPSIM_ASSERT(files_[std::size_t(slot)].slots == 0);
  Fd& f = files_[std::size_t(slot)];
  f = Fd{};
  f.kind = Kind::file;
  f.sim = slot;
  share(fd, slot, false);
}

void Seam::file_closed(int fd) {
  Inside inside(*this);
  kernel_->close(fds_[std::size_t(fd)].sim);
  forget(fd);
}

void Seam::file_failed(int slot) {
  Inside inside(*this);
  kernel_->close(slot);
}

}  // namespace loopsim::posix
