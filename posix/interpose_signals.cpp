// The interposers for signals and the timers that send them: the dispositions and masks of the
// signals a scenario can send, the calls that wait for one (pause, sigsuspend, sigwait and its
// kin, signalfd), the calls that send one (raise, pthread_kill, tgkill, kill), and the timers in
// virtual time (alarm, setitimer, the POSIX timers, timerfd). The signals themselves, pending and
// delivered, are the seam's (posix/signals.cpp). Without a simulation, or from a thread it does
// not run, each is libc's.
#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>

#include "posix/interpose.hpp"
#include "posix/seam.hpp"

// libc declares some pointers nonnull; a program may still pass null, and the seam checks.
#pragma GCC diagnostic ignored "-Wnonnull-compare"

using loopsim::Duration;
using loopsim::Instant;
using loopsim::posix::current;
using namespace loopsim::posix::calls;

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

// The preemption signal is never blocked: a thread that spins must hear it. Nor is SIGSYS once
// the trap is installed: a trapped call with SIGSYS blocked ends the process (Linux's
// force_sig_seccomp). Nor SIGSEGV while rdtsc is trapped: a fault with it blocked does too.
const sigset_t* unblocking_preemption(int how, const sigset_t* set, sigset_t& copy) {
  if (set == nullptr || current == nullptr || how == SIG_UNBLOCK) return set;
  copy = *set;
  loopsim::posix::keep_unblocked(copy);
  return &copy;
}
}  // namespace

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
