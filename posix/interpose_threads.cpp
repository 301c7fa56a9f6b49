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
