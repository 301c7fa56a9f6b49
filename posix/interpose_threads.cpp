// The interposers for a target's threads: starting and joining them, and every point where one
// blocks or yields (mutexes, condition variables, read-write locks, spin locks, semaphores,
// barriers, futexes, sched_yield). A target thread never blocks in the kernel: each of these
// tries the real object without waiting, and where it would wait, its simulated thread waits in
// virtual time instead, until an unlock, a post or a signal from another wakes it
// (posix/threads.hpp). Without a simulation, or from a thread it does not run, each is libc's.
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <map>
#include <new>
#include <optional>
#include <unordered_map>

#include "posix/interpose.hpp"
#include "posix/seam.hpp"


// libc declares some pointers nonnull; a program may still pass null, and the seam checks.
#pragma GCC diagnostic ignored "-Wnonnull-compare"

using loopsim::Duration;
using loopsim::Instant;
using loopsim::wait_forever;
using loopsim::posix::current;
using loopsim::posix::real;
using loopsim::posix::TargetThread;
using namespace loopsim::posix::calls;

namespace {

// The waits below go through the engine only when they must: an object taken at the first try
// costs no switch.
//
// A signal for the waiting thread cuts its wait short, and its handlers run here, on the
// thread, during the wait, as Linux runs them where glibc waits on a futex. Then the caller
// looks at the object again and waits on (a lock, a barrier, a condition variable: glibc waits
// again after its futex wait fails EINTR), as if woken for nothing: 0. A semaphore's wait
// (`fails`) is Linux's FUTEX_WAIT, restarted only where every handler asked SA_RESTART, and
// otherwise failing EINTR (sem_wait(3)): -EINTR.
long wait_for(const char* call, const void* object, std::optional<Instant> deadline, bool fails = false) {
  const long rc = engine_call(call, [&] { return current->wait_on(object, deadline, true); });
  if (rc != -EINTR) return rc;
  const bool restarts = current->restarts();
  current->deliver_signals();
  return fails && !restarts ? -EINTR : 0;
}

// After a release (an unlock, a post): wakes whoever waits on `object`, and offers a switch.
void released(const char* call, const void* object) {
  if (!making() || !current->awaited(object)) return;
  engine_call(call, [&] {
    current->wake_on(object, INT_MAX);
    current->switch_point();
    return 0L;
  });
}

// A lock taken by trying: `attempt` returns 0, EBUSY (held: wait for a release) or an error.
// `fails`: a signal's handler may end the wait, EINTR (wait_for).
template <typename Try>
int acquire(const char* call, const void* object, std::optional<Instant> deadline, Try attempt, bool fails = false) {
  for (;;) {
    int rc = attempt();
    if (rc != EBUSY) return rc;
    const long waited = wait_for(call, object, deadline, fails);
    if (waited == -EINTR) return EINTR;
    if (waited == -ETIMEDOUT) {
      LOOPSIM_ASSERT(deadline.has_value());  // only a wait with a deadline times out
      rc = attempt();
      return rc == EBUSY ? ETIMEDOUT : rc;
    }
  }
}

int try_mutex(pthread_mutex_t* m) { return LOOPSIM_REAL(pthread_mutex_trylock)(m); }
int unlock_mutex(pthread_mutex_t* m) { return LOOPSIM_REAL(pthread_mutex_unlock)(m); }

int lock_mutex(const char* call, pthread_mutex_t* m, std::optional<Instant> deadline) {
  return acquire(call, m, deadline, [&] { return try_mutex(m); });
}

// The clock each condition variable's timed waits read, as pthread_cond_init was told
// (pthread_condattr_setclock): kept for those not on CLOCK_REALTIME, the default of an
// attribute and of PTHREAD_COND_INITIALIZER. Looked up, never iterated. Its own lock, not a
// mutex: the seam stands in front of pthread's, and a thread may init before the run starts.
struct CondClocks {
  std::atomic_flag busy = ATOMIC_FLAG_INIT;
  std::unordered_map<const pthread_cond_t*, clockid_t> clocks;
  template <typename F>
  auto locked(F&& f) {
    while (busy.test_and_set(std::memory_order_acquire)) {
    }
    auto out = f(clocks);
    busy.clear(std::memory_order_release);
    return out;
  }
};
// In static storage, and never destroyed (threads may wait at exit): an allocator initializes
// its own condition variables (jemalloc's, inside malloc), so making the table must not allocate,
// and a default init or a destroy on an empty table allocates nothing either.
CondClocks& cond_clocks() {
  alignas(CondClocks) static unsigned char storage[sizeof(CondClocks)];
  static CondClocks* kept = new (storage) CondClocks;
  return *kept;
}

clockid_t clock_of(const pthread_cond_t* c) {
  return cond_clocks().locked([c](auto& clocks) {
    auto it = clocks.find(c);
    return it == clocks.end() ? clockid_t(CLOCK_REALTIME) : it->second;
  });
}

int cond_wait(const char* call, pthread_cond_t* c, pthread_mutex_t* m, std::optional<Instant> deadline) {
  int rc = unlock_mutex(m);
  if (rc != 0) return rc;
  // Released and waiting in one step of the engine: no signal can fall between the two. A
  // signal's handlers run during the wait, which then goes on (wait_for).
  long waited = engine_call(call, [&] {
    current->wake_on(m, INT_MAX);
    return current->wait_on(c, deadline, true);
  });
  while (waited == -EINTR) {
    current->deliver_signals();
    waited = engine_call(call, [&] { return current->wait_on(c, deadline, true); });
  }
  // Woken, or timed out where a deadline was set: a condition variable's wait knows no other end.
  LOOPSIM_ASSERT(waited == 0 || (waited == -ETIMEDOUT && deadline.has_value()));
  rc = lock_mutex(call, m, wait_forever);
  if (rc != 0) return rc;
  return waited == -ETIMEDOUT ? ETIMEDOUT : 0;
}

// sem_* report errors through errno; a wait that succeeds leaves errno as it found it.
int sem_acquire(const char* call, sem_t* s, std::optional<Instant> deadline) {
  const int saved = errno;
  int rc = acquire(
      call, s, deadline,
      [&] {
        if (LOOPSIM_REAL(sem_trywait)(s) == 0) return 0;
        return errno == EAGAIN ? EBUSY : errno;
      },
      true);
  if (rc == 0) {
    errno = saved;
    return 0;
  }
  errno = rc;
  return -1;
}

// Barriers: how many each needs, how many have come, and which round it is in. Touched only by
// the thread holding the baton.
struct Barrier {
  unsigned needed = 0;
  unsigned arrived = 0;
  std::uint64_t round = 0;
};
std::map<const void*, Barrier>& barriers() {
  static std::map<const void*, Barrier> all;
  return all;
}

}  // namespace

// ---- starting, joining, ending ----

SEAM_EXPORT int pthread_create(pthread_t* thread, const pthread_attr_t* attributes, void* (*start)(void*),
                               void* argument) noexcept {
  if (making()) {
    return int(engine_call(__func__, [&] {
      long rc = current->create_thread(thread, attributes, start, argument);
      if (rc == 0) current->switch_point();
      return rc;
    }));
  }
  return LOOPSIM_REAL(pthread_create)(thread, attributes, start, argument);
}

SEAM_EXPORT int pthread_join(pthread_t thread, void** value) {
  if (making()) {
    if (TargetThread* t = current->thread_of(thread)) {
      // A signal for the joining thread runs its handlers during the wait, which goes on.
      for (;;) {
        const long rc = engine_call(__func__, [&] { return current->join(*t, value); });
        if (rc != -EINTR) return int(rc);
        current->deliver_signals();
      }
    }
  }
  return LOOPSIM_REAL(pthread_join)(thread, value);
}

SEAM_EXPORT int pthread_detach(pthread_t thread) noexcept {
  if (making()) {
    if (TargetThread* t = current->thread_of(thread)) {
      if (t->detached) return EINVAL;
      t->detached = true;  // its proxy joins the OS thread either way
      return 0;
    }
  }
  return LOOPSIM_REAL(pthread_detach)(thread);
}

SEAM_EXPORT void pthread_exit(void* value) {
  if (TargetThread* t = loopsim::posix::this_thread()) t->value = value;
  LOOPSIM_REAL(pthread_exit)(value);
  __builtin_unreachable();
}

SEAM_EXPORT int sched_yield() noexcept {
  if (making() && current->thread_count() > 0) {
    engine_call(__func__, [&] {
      current->yield_thread();
      return 0L;
    });
    return 0;
  }
  return LOOPSIM_REAL(sched_yield)();
}

// ---- mutexes ----

SEAM_EXPORT int pthread_mutex_lock(pthread_mutex_t* m) noexcept {
  if (making()) return lock_mutex(__func__, m, wait_forever);
  return LOOPSIM_REAL(pthread_mutex_lock)(m);
}

SEAM_EXPORT int pthread_mutex_timedlock(pthread_mutex_t* m, const timespec* at) noexcept {
  if (making() && at != nullptr) return lock_mutex(__func__, m, deadline_of(CLOCK_REALTIME, *at));
  return LOOPSIM_REAL(pthread_mutex_timedlock)(m, at);
}

SEAM_EXPORT int pthread_mutex_clocklock(pthread_mutex_t* m, clockid_t clock, const timespec* at) noexcept {
  if (making() && at != nullptr) return lock_mutex(__func__, m, deadline_of(clock, *at));
  return LOOPSIM_REAL(pthread_mutex_clocklock)(m, clock, at);
}

SEAM_EXPORT int pthread_mutex_unlock(pthread_mutex_t* m) noexcept {
  int rc = unlock_mutex(m);
  if (rc == 0) released(__func__, m);
  return rc;
}

// ---- condition variables ----

SEAM_EXPORT int pthread_cond_init(pthread_cond_t* c, const pthread_condattr_t* attributes) noexcept {
  clockid_t clock = CLOCK_REALTIME;
  if (attributes != nullptr) pthread_condattr_getclock(attributes, &clock);
  const int rc = LOOPSIM_REAL(pthread_cond_init)(c, attributes);
  if (rc == 0) {
    cond_clocks().locked([&](auto& clocks) {
      if (clock == CLOCK_REALTIME) clocks.erase(c);  // (memory once another's)
      else clocks[c] = clock;
      return 0;
    });
  }
  return rc;
}

SEAM_EXPORT int pthread_cond_destroy(pthread_cond_t* c) noexcept {
  cond_clocks().locked([c](auto& clocks) { return clocks.erase(c); });
  return LOOPSIM_REAL(pthread_cond_destroy)(c);
}

SEAM_EXPORT int pthread_cond_wait(pthread_cond_t* c, pthread_mutex_t* m) {
  if (making()) return cond_wait(__func__, c, m, wait_forever);
  return LOOPSIM_REAL(pthread_cond_wait)(c, m);
}

SEAM_EXPORT int pthread_cond_timedwait(pthread_cond_t* c, pthread_mutex_t* m, const timespec* at) {
  if (making() && at != nullptr) return cond_wait(__func__, c, m, deadline_of(clock_of(c), *at));
  return LOOPSIM_REAL(pthread_cond_timedwait)(c, m, at);
}

SEAM_EXPORT int pthread_cond_clockwait(pthread_cond_t* c, pthread_mutex_t* m, clockid_t clock, const timespec* at) {
  if (making() && at != nullptr) return cond_wait(__func__, c, m, deadline_of(clock, *at));
  return LOOPSIM_REAL(pthread_cond_clockwait)(c, m, clock, at);
}

SEAM_EXPORT int pthread_cond_signal(pthread_cond_t* c) noexcept {
  if (making()) {
    if (current->awaited(c)) {
      engine_call(__func__, [&] {
        current->wake_on(c, 1);
        current->switch_point();
        return 0L;
      });
    }
    return 0;
  }
  return LOOPSIM_REAL(pthread_cond_signal)(c);
}

SEAM_EXPORT int pthread_cond_broadcast(pthread_cond_t* c) noexcept {
  if (making()) {
    released(__func__, c);
    return 0;
  }
  return LOOPSIM_REAL(pthread_cond_broadcast)(c);
}

// ---- read-write locks and spin locks ----

SEAM_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t* l) noexcept {
  if (making()) return acquire(__func__, l, wait_forever, [&] { return LOOPSIM_REAL(pthread_rwlock_tryrdlock)(l); });
  return LOOPSIM_REAL(pthread_rwlock_rdlock)(l);
}

SEAM_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t* l) noexcept {
  if (making()) return acquire(__func__, l, wait_forever, [&] { return LOOPSIM_REAL(pthread_rwlock_trywrlock)(l); });
  return LOOPSIM_REAL(pthread_rwlock_wrlock)(l);
}

SEAM_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t* l, const timespec* at) noexcept {
  if (making() && at != nullptr)
    return acquire(__func__, l, deadline_of(CLOCK_REALTIME, *at), [&] { return LOOPSIM_REAL(pthread_rwlock_tryrdlock)(l); });
  return LOOPSIM_REAL(pthread_rwlock_timedrdlock)(l, at);
}

SEAM_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t* l, const timespec* at) noexcept {
  if (making() && at != nullptr)
    return acquire(__func__, l, deadline_of(CLOCK_REALTIME, *at), [&] { return LOOPSIM_REAL(pthread_rwlock_trywrlock)(l); });
  return LOOPSIM_REAL(pthread_rwlock_timedwrlock)(l, at);
}

SEAM_EXPORT int pthread_rwlock_unlock(pthread_rwlock_t* l) noexcept {
  int rc = LOOPSIM_REAL(pthread_rwlock_unlock)(l);
  if (rc == 0) released(__func__, l);
  return rc;
}

SEAM_EXPORT int pthread_spin_lock(pthread_spinlock_t* l) noexcept {
  // A spin lock is a volatile int: its address names it.
  if (making()) return acquire(__func__, const_cast<const int*>(l), wait_forever, [&] { return LOOPSIM_REAL(pthread_spin_trylock)(l); });
  return LOOPSIM_REAL(pthread_spin_lock)(l);
}

SEAM_EXPORT int pthread_spin_unlock(pthread_spinlock_t* l) noexcept {
  int rc = LOOPSIM_REAL(pthread_spin_unlock)(l);
  if (rc == 0) released(__func__, const_cast<const int*>(l));
  return rc;
}

// ---- semaphores ----

SEAM_EXPORT int sem_wait(sem_t* s) {
  if (making()) return sem_acquire(__func__, s, wait_forever);
  return LOOPSIM_REAL(sem_wait)(s);
}

SEAM_EXPORT int sem_timedwait(sem_t* s, const timespec* at) {
  if (making() && at != nullptr) return sem_acquire(__func__, s, deadline_of(CLOCK_REALTIME, *at));
  return LOOPSIM_REAL(sem_timedwait)(s, at);
}

SEAM_EXPORT int sem_clockwait(sem_t* s, clockid_t clock, const timespec* at) {
  if (making() && at != nullptr) return sem_acquire(__func__, s, deadline_of(clock, *at));
  return LOOPSIM_REAL(sem_clockwait)(s, clock, at);
}

SEAM_EXPORT int sem_post(sem_t* s) noexcept {
  int rc = LOOPSIM_REAL(sem_post)(s);
  if (rc == 0) released(__func__, s);
  return rc;
}

// ---- barriers ----

SEAM_EXPORT int pthread_barrier_init(pthread_barrier_t* b, const pthread_barrierattr_t* attributes,
                                     unsigned count) noexcept {
  if (making()) {
    if (count == 0) return EINVAL;
    barriers()[b] = Barrier{count, 0, 0};
    return 0;
  }
  return LOOPSIM_REAL(pthread_barrier_init)(b, attributes, count);
}

SEAM_EXPORT int pthread_barrier_wait(pthread_barrier_t* b) {
  if (making()) {
    auto it = barriers().find(b);
    if (it == barriers().end()) return EINVAL;
    Barrier& barrier = it->second;
    if (++barrier.arrived == barrier.needed) {
      barrier.arrived = 0;
      ++barrier.round;
      released(__func__, b);
      return PTHREAD_BARRIER_SERIAL_THREAD;
    }
    const std::uint64_t round = barrier.round;
    while (barriers()[b].round == round) wait_for(__func__, b, wait_forever);
    return 0;
  }
  return LOOPSIM_REAL(pthread_barrier_wait)(b);
}

SEAM_EXPORT int pthread_barrier_destroy(pthread_barrier_t* b) noexcept {
  if (making() && barriers().erase(b) > 0) return 0;
  return LOOPSIM_REAL(pthread_barrier_destroy)(b);
}

// ---- futexes, through syscall() ----

long loopsim::posix::calls::futex_call(const long* a) {
  auto* word = reinterpret_cast<const int*>(a[0]);
  const int op = int(a[1]) & FUTEX_CMD_MASK;
  const bool realtime = (int(a[1]) & FUTEX_CLOCK_REALTIME) != 0;
  const auto* timeout = reinterpret_cast<const timespec*>(a[3]);
  // Linux: a futex word is 4-byte aligned (EINVAL), and one that cannot be read, or a timeout
  // that cannot, is EFAULT, not a fault in the caller.
  if (a[0] % alignof(int) != 0) return result(-EINVAL);
  switch (op) {
    case FUTEX_WAIT:
    case FUTEX_WAIT_BITSET: {
      int value = 0;
      if (!copy_in(&value, word, sizeof value)) return result(-EFAULT);
      std::optional<Instant> deadline;
      if (timeout != nullptr) {
        timespec limit{};
        if (!copy_in(&limit, timeout, sizeof limit)) return result(-EFAULT);
        deadline = op == FUTEX_WAIT ? current->now() + from_timespec(limit)
                                    : deadline_of(realtime ? CLOCK_REALTIME : CLOCK_MONOTONIC, limit);
      }
      // A signal's handler runs as the wait returns (served). A wait without a timeout whose
      // handlers all asked SA_RESTART is then made again, the word read again, as Linux restarts
      // futex_wait's -ERESTARTSYS; one with a timeout fails EINTR (-ERESTART_RESTARTBLOCK, which
      // a handler turns into EINTR). glibc's sem_wait, made of it, waits on or fails as it.
      const int saved = errno;
      for (;;) {
        if (__atomic_load_n(word, __ATOMIC_ACQUIRE) != int(a[2])) return result(-EAGAIN);
        bool restarts = false;
        const long rc = served("futex(FUTEX_WAIT)", [&] {
          const long waited = current->wait_on(word, deadline, true);
          restarts = waited == -EINTR && !deadline && current->restarts();
          return waited;
        });
        if (!restarts) return rc;
        errno = saved;
      }
    }
    case FUTEX_WAKE:
    case FUTEX_WAKE_BITSET:
      return served("futex(FUTEX_WAKE)", [&] {
        long woken = current->wake_on(word, int(std::min<long>(a[2], INT_MAX)));
        if (woken > 0) current->switch_point();
        return woken;
      });
    default:
      current->refuse("futex (operation " + std::to_string(op) + ")", -1,
                      "a target thread's futex may only wait and wake (FUTEX_WAIT, FUTEX_WAKE and their BITSET forms)");
  }
}

// ---- signals: the dispositions of those a scenario can send (posix/signals.cpp) ----

SEAM_EXPORT int sigaction(int signal, const struct sigaction* action, struct sigaction* old) noexcept {
  // The seam's own (posix/seam.hpp): the program's action is kept, and answered, but never
  // installed. (EINVAL for the preemption signal, as glibc answers for SIGRTMIN's first two,
  // ends a Go program, which sets one for every signal.)
  if (loopsim::posix::seam_keeps(signal)) return int(loopsim::posix::kept_action(signal, action, old));
  if (making() && loopsim::posix::Seam::simulated_signal(signal)) return int(current->sigaction(signal, action, old));
  // A handler's mask never blocks the signals the trap keeps (keep_unblocked): Go's block every
  // signal, and make system calls the trap serves.
  if (action != nullptr) {
    struct sigaction copy = *action;
    loopsim::posix::keep_unblocked(copy.sa_mask, false);
    return loopsim::posix::install_action(signal, &copy, old, false);
  }
  return loopsim::posix::install_action(signal, action, old, false);
}

// signal(2) as glibc gives it: BSD semantics, the handler kept and calls restarted. A signal the
// seam keeps or simulates goes through sigaction above.
SEAM_EXPORT sighandler_t signal(int signal, sighandler_t handler) noexcept {
  if (loopsim::posix::seam_keeps(signal) || (making() && loopsim::posix::Seam::simulated_signal(signal))) {
    struct sigaction action{}, old{};
    action.sa_handler = handler;
    action.sa_flags = SA_RESTART;
    sigaction(signal, &action, &old);
    return old.sa_handler;
  }
  return LOOPSIM_REAL(signal)(signal, handler);
}

// The mask is the real one for every signal, and each thread's is also the seam's for its own
// (mask_now): the real kernel never sees those come.
namespace {
int masked(int rc, bool served_here) {
  if (rc != 0 || !served_here) return rc;
  sigset_t now;
  sigemptyset(&now);
  LOOPSIM_REAL(pthread_sigmask)(SIG_BLOCK, nullptr, &now);
  mask_now(now);
  return rc;
}
}  // namespace

// The preemption signal is never blocked: a thread that spins must hear it. Nor is SIGSYS once
// the trap is installed: a trapped call with SIGSYS blocked ends the process (Linux's
// force_sig_seccomp). Nor SIGSEGV while rdtsc is trapped: a fault with it blocked does too.
const sigset_t* unblocking_preemption(int how, const sigset_t* set, sigset_t& copy) {
  if (set == nullptr || current == nullptr || how == SIG_UNBLOCK) return set;
  copy = *set;
  loopsim::posix::keep_unblocked(copy);
  return &copy;
}

SEAM_EXPORT int pthread_sigmask(int how, const sigset_t* set, sigset_t* old) noexcept {
  const bool served_here = making();
  sigset_t copy;
  return masked(LOOPSIM_REAL(pthread_sigmask)(how, unblocking_preemption(how, set, copy), old),
                served_here);
}

SEAM_EXPORT int sigprocmask(int how, const sigset_t* set, sigset_t* old) noexcept {
  const bool served_here = making();
  sigset_t copy;
  return masked(LOOPSIM_REAL(sigprocmask)(how, unblocking_preemption(how, set, copy), old), served_here);
}

SEAM_EXPORT int sigpending(sigset_t* set) noexcept {
  const int rc = LOOPSIM_REAL(sigpending)(set);
  if (rc == 0 && making()) current->add_pending(*set);
  return rc;
}

// Waits for a signal, on any thread, in virtual time (Seam::suspend, Seam::wait_signal). The
// handler runs as the call returns (served), under the call's mask; then the thread's own is back.
namespace {
int suspended(long rc) {
  current->on_engine([] { current->end_suspend(); });
  return int(rc);
}
}  // namespace

SEAM_EXPORT int pause() {
  if (making()) return suspended(served(__func__, [&] { return current->suspend("pause", nullptr); }));
  return LOOPSIM_REAL(pause)();
}

SEAM_EXPORT int sigsuspend(const sigset_t* mask) {
  if (making()) {
    if (mask == nullptr) return int(result(-EFAULT));
    return suspended(served(__func__, [&] { return current->suspend("sigsuspend", mask); }));
  }
  return LOOPSIM_REAL(sigsuspend)(mask);
}

SEAM_EXPORT int sigwait(const sigset_t* set, int* signal) {
  if (making()) {
    if (set == nullptr || signal == nullptr) return EFAULT;  // sigwait returns its error
    // glibc's sigwait waits again after a handler interrupted it.
    const int saved = errno;
    long taken;
    do taken = served(__func__, [&] { return current->wait_signal("sigwait", *set); });
    while (taken < 0 && errno == EINTR);
    errno = saved;
    *signal = int(taken);
    return 0;
  }
  return LOOPSIM_REAL(sigwait)(set, signal);
}

SEAM_EXPORT int sigwaitinfo(const sigset_t* set, siginfo_t* info) {
  if (making()) {
    if (set == nullptr) return int(result(-EFAULT));
    const int signal = int(served(__func__, [&] { return current->wait_signal("sigwaitinfo", *set); }));
    if (signal > 0 && info != nullptr) {
      std::memset(info, 0, sizeof *info);
      info->si_signo = signal;
      info->si_code = SI_USER;
    }
    return signal;
  }
  return LOOPSIM_REAL(sigwaitinfo)(set, info);
}

SEAM_EXPORT int sigtimedwait(const sigset_t* set, siginfo_t* info, const timespec* timeout) {
  if (making()) {
    if (set == nullptr) return int(result(-EFAULT));
    std::optional<Duration> limit;
    if (timeout != nullptr) {
      if (timeout->tv_sec < 0 || timeout->tv_nsec < 0 || timeout->tv_nsec >= 1'000'000'000) return int(result(-EINVAL));
      limit = Duration(std::chrono::seconds(timeout->tv_sec)) + Duration(timeout->tv_nsec);
    }
    const long signal = served(__func__, [&] { return current->wait_signal("sigtimedwait", *set, limit); });
    if (signal > 0 && info != nullptr) {
      std::memset(info, 0, sizeof *info);
      info->si_signo = int(signal);
      info->si_code = SI_USER;
    }
    return int(signal);
  }
  return LOOPSIM_REAL(sigtimedwait)(set, info, timeout);
}

// The seam's signals as a descriptor (Seam::signalfd). Refused by name rather than left to the
// real kernel: timers that would fire in wall-clock time.
SEAM_EXPORT int signalfd(int fd, const sigset_t* mask, int flags) noexcept {
  if (making()) {
    if (mask == nullptr) return int(result(-EFAULT));
    return int(served(__func__, [&] { return current->signalfd(fd, *mask, flags); }));
  }
  return LOOPSIM_REAL(signalfd)(fd, mask, flags);
}

SEAM_EXPORT int timerfd_create(int clock, int flags) noexcept {
  if (making()) current->refuse("timerfd_create", -1, "its expirations would come in wall-clock time; the seam does not serve it yet");
  return LOOPSIM_REAL(timerfd_create)(clock, flags);
}

// POSIX timers on a CPU-time clock (haproxy's watchdog, on each thread's): a target's threads
// spend no CPU time in virtual time between their calls (a spin is caught apart, by
// target.spin_limit), so such a timer is kept, armed as asked, and never expires. On another
// clock it is refused by name: its expirations would come in wall-clock time.
namespace {
struct CpuTimer {
  itimerspec setting{};
};
std::map<timer_t, CpuTimer>& cpu_timers() {
  static std::map<timer_t, CpuTimer> timers;
  return timers;
}
// A CPU-time clock: the process's or the thread's, or one of pthread_getcpuclockid's and
// clock_getcpuclockid's (negative: Linux's CPUCLOCK encoding).
bool cpu_clock(clockid_t clock) {
  return clock == CLOCK_PROCESS_CPUTIME_ID || clock == CLOCK_THREAD_CPUTIME_ID || clock < 0;
}
bool seam_timer(timer_t timer) { return cpu_timers().count(timer) != 0; }
}  // namespace

SEAM_EXPORT int timer_create(clockid_t clock, sigevent* event, timer_t* timer) noexcept {
  if (!making()) return LOOPSIM_REAL(timer_create)(clock, event, timer);
  if (!cpu_clock(clock)) {
    current->refuse("timer_create", -1, "on a wall clock its expirations would come in wall-clock time; the seam serves CPU-time timers only");
  }
  if (timer == nullptr) return int(result(-EFAULT));
  // Numbers no kernel timer has (glibc's are small integers).
  *timer = reinterpret_cast<timer_t>(std::intptr_t(0x10000000) + std::intptr_t(cpu_timers().size()));
  cpu_timers()[*timer] = CpuTimer{};
  (void)event;
  return 0;
}

SEAM_EXPORT int timer_settime(timer_t timer, int flags, const itimerspec* value, itimerspec* old) noexcept {
  if (!seam_timer(timer)) return LOOPSIM_REAL(timer_settime)(timer, flags, value, old);
  if (value == nullptr) return int(result(-EFAULT));
  if (value->it_value.tv_nsec < 0 || value->it_value.tv_nsec >= 1'000'000'000 || value->it_interval.tv_nsec < 0 ||
      value->it_interval.tv_nsec >= 1'000'000'000) {
    return int(result(-EINVAL));
  }
  CpuTimer& t = cpu_timers()[timer];
  if (old != nullptr) *old = t.setting;
  t.setting = *value;
  return 0;
}

SEAM_EXPORT int timer_gettime(timer_t timer, itimerspec* value) noexcept {
  if (!seam_timer(timer)) return LOOPSIM_REAL(timer_gettime)(timer, value);
  if (value == nullptr) return int(result(-EFAULT));
  *value = cpu_timers()[timer].setting;  // no CPU time passes: what is left stays what was set
  return 0;
}

SEAM_EXPORT int timer_getoverrun(timer_t timer) noexcept {
  if (!seam_timer(timer)) return LOOPSIM_REAL(timer_getoverrun)(timer);
  return 0;
}

SEAM_EXPORT int timer_delete(timer_t timer) noexcept {
  if (!seam_timer(timer)) return LOOPSIM_REAL(timer_delete)(timer);
  cpu_timers().erase(timer);
  return 0;
}

// ITIMER_REAL and alarm in virtual time (Seam::set_real_timer): SIGALRM comes as a scenario's
// signal does. The CPU-time timers (ITIMER_VIRTUAL, ITIMER_PROF) are refused by name once set:
// a target's CPU time is the host's, not the simulation's.
namespace {
timeval as_timeval(Duration t) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(t).count();
  return timeval{time_t(us / 1'000'000), suseconds_t(us % 1'000'000)};
}
Duration of_timeval(const timeval& t) { return Duration(std::chrono::seconds(t.tv_sec)) + Duration(std::chrono::microseconds(t.tv_usec)); }
bool valid(const timeval& t) { return t.tv_sec >= 0 && t.tv_usec >= 0 && t.tv_usec < 1'000'000; }
}  // namespace

SEAM_EXPORT int setitimer(__itimer_which_t which, const itimerval* value, itimerval* old) noexcept {
  if (!making()) return LOOPSIM_REAL(setitimer)(which, value, old);
  if (which != ITIMER_REAL) {
    const bool sets = value != nullptr && (value->it_value.tv_sec != 0 || value->it_value.tv_usec != 0);
    if (sets) current->refuse(which == ITIMER_VIRTUAL ? "setitimer(ITIMER_VIRTUAL)" : "setitimer(ITIMER_PROF)", -1,
                              "a CPU-time timer: the target's CPU time is the host's, not the simulation's");
    return LOOPSIM_REAL(setitimer)(which, value, old);
  }
  itimerval wanted{};
  if (value != nullptr && !copy_in(&wanted, value, sizeof wanted)) return int(result(-EFAULT));
  if (value != nullptr && (!valid(wanted.it_value) || !valid(wanted.it_interval))) return int(result(-EINVAL));
  Duration left{0}, every{0};
  served(__func__, [&] {
    // Linux takes a null value as a zero one: the timer is disarmed.
    current->set_real_timer(of_timeval(wanted.it_value), of_timeval(wanted.it_interval), left, every);
    return 0L;
  });
  if (old != nullptr) *old = itimerval{as_timeval(every), as_timeval(left)};
  return 0;
}

SEAM_EXPORT int getitimer(__itimer_which_t which, itimerval* value) noexcept {
  if (!making() || which != ITIMER_REAL) return LOOPSIM_REAL(getitimer)(which, value);
  if (value == nullptr) return int(result(-EFAULT));
  Duration left{0}, every{0};
  served(__func__, [&] {
    current->real_timer(left, every);
    return 0L;
  });
  *value = itimerval{as_timeval(every), as_timeval(left)};
  return 0;
}

// alarm(2): whole seconds, and what was left of the last one rounded as Linux rounds it (up from
// half a second, and never 0 while one is set).
SEAM_EXPORT unsigned int alarm(unsigned int seconds) noexcept {
  if (!making()) return LOOPSIM_REAL(alarm)(seconds);
  Duration left{0}, every{0};
  served(__func__, [&] {
    current->set_real_timer(Duration(std::chrono::seconds(seconds)), Duration(0), left, every);
    return 0L;
  });
  const timeval was = as_timeval(left);
  return unsigned(was.tv_sec) + ((was.tv_sec == 0 && was.tv_usec != 0) || was.tv_usec >= 500'000 ? 1 : 0);
}

// A signal the program sends itself (node's handlers re-raise what they caught) is delivered
// before the call returns to the thread that takes it: raise()'s caller, as Linux delivers a
// signal sent to the caller's own thread, and kill()'s as Seam::raise_signal says.
namespace {
int to_self(int signal, bool to_process) {
  current->raise_signal(signal, to_process);
  return 0;
}
}  // namespace

SEAM_EXPORT int raise(int signal) noexcept {
  if (making() && loopsim::posix::Seam::simulated_signal(signal)) return to_self(signal, false);
  return LOOPSIM_REAL(raise)(signal);
}

SEAM_EXPORT int pthread_kill(pthread_t thread, int signal) noexcept {
  if (making() && loopsim::posix::Seam::simulated_signal(signal) && current->kill_thread(thread, signal)) return 0;
  return LOOPSIM_REAL(pthread_kill)(thread, signal);
}

// libc's tgkill(): to the caller's own thread, as raise(); to another of the program's, as
// pthread_kill (Seam::kill_task finds it by its id). The trapped system call of a static
// binary comes here too.
SEAM_EXPORT int tgkill(pid_t process, pid_t thread, int signal) noexcept {
  if (making() && process == ::getpid() && loopsim::posix::Seam::simulated_signal(signal)) {
    if (thread == ::gettid()) return to_self(signal, false);
    if (current->kill_task(thread, signal)) return 0;
  }
  return LOOPSIM_REAL(tgkill)(process, thread, signal);
}

SEAM_EXPORT int kill(pid_t pid, int signal) noexcept {
  if (making() && loopsim::posix::Seam::simulated_signal(signal) && (pid == 0 || pid == getpid())) {
    return to_self(signal, true);
  }
  return LOOPSIM_REAL(kill)(pid, signal);
}
