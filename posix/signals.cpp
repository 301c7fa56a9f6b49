// Signals in virtual time: the seam keeps the dispositions of the signals a scenario can send,
// and each thread's mask of them, and delivers each to a thread of the program's as Linux would
// (main() first, else a thread that does not block it), on its way back from a call.
#include <signal.h>
#include <sys/signalfd.h>

#include <algorithm>
#include <cstring>

#include "base/assert.hpp"
#include "posix/seam.hpp"
#include "scenario/scenario.hpp"

namespace loopsim::posix {

namespace {
constexpr std::uint64_t bit(int signal) { return std::uint64_t(1) << signal; }

// The signals the seam keeps: those a scenario can send, SIGALRM (its timers') and SIGCHLD (a
// child's end, posix/processes.cpp).
constexpr std::uint64_t seam_signals = [] {
  std::uint64_t bits = bit(SIGALRM) | bit(SIGCHLD);
  for (const auto& [number, name] : sim::action_signals) bits |= bit(number);
  return bits;
}();
}  // namespace

bool Seam::simulated_signal(int signal) { return signal > 0 && signal < 64 && (seam_signals & bit(signal)) != 0; }

long Seam::sigaction(int signal, const struct sigaction* action, struct sigaction* old) {
  struct sigaction none{};
  none.sa_handler = SIG_DFL;
  auto it = actions_.find(signal);
  if (old != nullptr) *old = it != actions_.end() ? it->second : none;
  if (action != nullptr) actions_[signal] = *action;
  // Linux: setting SIG_IGN discards what is pending of the signal, blocked or not, the
  // process's and every thread's.
  if (action != nullptr && ignored(signal)) {
    pending_signals_ &= ~bit(signal);
    for (PerThread& t : per_thread_) t.pending &= ~bit(signal);
  }
  signals_changed();
  return 0;
}

// SIGCHLD's default action is to ignore it; every other seam signal's ends the process.
bool Seam::ignored(int signal) const {
  auto it = actions_.find(signal);
  const sighandler_t handler = it != actions_.end() ? it->second.sa_handler : SIG_DFL;
  return handler == SIG_IGN || (handler == SIG_DFL && signal == SIGCHLD);
}

// Linux discards an ignored signal that main() does not block when it is sent, and wakes no one
// for it; a blocked one stays pending. It goes to main() if main() does not block it; otherwise
// to a thread that does not (Linux's complete_signal), here the first made whose wait a signal
// can cut short; if none is waiting so, the first that lets it go as a call returns takes it.
// A wait for it in sigwait and its kin gives way too. Pending, it is the process's.
void Seam::post_signal(int signal) {
  LOOPSIM_ASSERT(signal > 0 && signal < 64);  // the seam's signals fit its 64-bit sets
  if ((mask_of(thread_) & bit(signal)) == 0 && ignored(signal)) return;
  pending_signals_ |= bit(signal);
  signals_changed();
  if ((mask_of(thread_) & bit(signal)) != 0) {
    for (const auto& t : threads_) {
      if (!t->finished && (mask_of(t->fiber) & bit(signal)) == 0 && interrupt(t->fiber)) break;
    }
  } else {
    interrupt(thread_);
  }
  for (const auto& [thread, awaited] : awaiting_) {
    if ((awaited & bit(signal)) != 0) kernel_->interrupt(thread);
  }
}

// A wait of `thread`'s that a signal cuts short ends: one the kernel knows (a poller's, a sleep),
// or a FUTEX_WAIT (a Go program's idle thread waits so), which ends EINTR. False if it waits in
// neither.
bool Seam::interrupt(model::ThreadId thread) {
  if (kernel_->interrupt(thread)) return true;
  PerThread& t = of(thread);
  if (!t.futex_wait || t.futex_interrupted) return false;  // not waiting, or already cut short
  auto it = waiting_.find(*t.futex_wait);
  LOOPSIM_ASSERT(it != waiting_.end());  // the thread is in the word's queue while futex_wait is set
  std::erase(it->second, thread);
  if (it->second.empty()) waiting_.erase(it);
  t.futex_interrupted = true;
  scheduler_->wake(thread);
  return true;
}

void Seam::signal(int signal) {
  if (sim::stopping_signal(signal)) asked_ |= bit(signal);
  post_signal(signal);
}

// raise() is the caller's alone, as Linux's tgkill makes it: taken before the call returns where
// its mask lets it go, and otherwise pending for that thread, which no other takes (an ignored
// one it does not block is dropped, as post_signal drops the process's). kill() of the process
// comes for the process, as a scenario's signal does: main()'s, unless main() blocks it; then
// the caller, running, may take it, as Linux's complete_signal lets it.
void Seam::raise_signal(int signal, bool to_process) {
  bool mine = true;
  on_engine([&] {
    if (!to_process) {
      pend_for(here(), signal);
      return;
    }
    post_signal(signal);
    mine = scheduler_->current() == thread_ || (mask_of(thread_) & bit(signal)) != 0;
  });
  if (mine) deliver_signals();
}

bool Seam::kill_thread(pthread_t os, int signal) {
  if (::pthread_equal(os, main_os_) != 0) {
    send_to_thread(thread_, false, signal);
    return true;
  }
  TargetThread* t = thread_of(os);
  if (t == nullptr) return false;
  send_to_thread(t->fiber, t->finished, signal);
  return true;
}

bool Seam::kill_task(pid_t tid, int signal) {
  if (tid == main_tid_) {
    send_to_thread(thread_, false, signal);
    return true;
  }
  TargetThread* t = newest_thread([&](const TargetThread& candidate) { return candidate.tid == tid; });
  if (t == nullptr) return false;
  send_to_thread(t->fiber, t->finished, signal);
  return true;
}

void Seam::send_to_thread(model::ThreadId to, bool finished, int signal) {
  if (finished) return;  // glibc: a thread that ended, not yet joined, takes nothing, and 0
  if (to == scheduler_->current()) {
    raise_signal(signal, false);
    return;
  }
  on_engine([&] {
    PerThread& t = of(to);
    if (!pend_for(t, signal)) return;
    if ((t.blocked & bit(signal)) == 0) interrupt(to);
    if (auto it = awaiting_.find(to); it != awaiting_.end() && (it->second & bit(signal)) != 0) kernel_->interrupt(to);
  });
}

bool Seam::pend_for(PerThread& t, int signal) {
  if ((t.blocked & bit(signal)) == 0 && ignored(signal)) return false;
  t.pending |= bit(signal);
  signals_changed();
  return true;
}

// The shutdown began when the scenario's signal reached the program, once for each one it sent:
// a handler that raises the signal again (to die of it) begins nothing new.
void Seam::shutdown_begins(int signal) {
  if ((asked_ & bit(signal)) == 0) return;
  asked_ &= ~bit(signal);
  trace_->events.push_back(sim::ev::ShutdownBegin{now(), 0});
}

// The lowest pending signal of `among` (which has one) leaves the pending set, and the
// signalfds say so. The running thread's own come first, then the process's, as Linux's
// dequeue_signal takes them.
int Seam::take_signal(std::uint64_t among) {
  LOOPSIM_ASSERT((pending_here() & among) != 0);  // __builtin_ctzll of 0 is undefined
  std::uint64_t& from = (here().pending & among) != 0 ? here().pending : pending_signals_;
  const int signal = __builtin_ctzll(from & among);
  from &= ~bit(signal);
  signals_changed();
  return signal;
}

bool Seam::restarts() const {
  for (int signal = 1; signal < 64; ++signal) {
    if ((deliverable() & bit(signal)) == 0) continue;
    auto it = actions_.find(signal);
    if (it == actions_.end()) return false;  // the default action ends the process: no restart
    const struct sigaction& a = it->second;
    if (a.sa_handler != SIG_IGN && (a.sa_flags & SA_RESTART) == 0) return false;
  }
  return true;
}

void Seam::deliver_signals() {
  for (;;) {
    // Which signal, and what its action asks: the engine's to decide (a default action ends the
    // process there). The handler runs here, on the thread that takes it; on main() these are
    // one OS thread.
    int signal = 0;
    struct sigaction a{};
    std::uint64_t saved = 0;
    on_engine([&] {
      while (signal == 0 && deliverable() != 0) {
        const int next = take_signal(~here().blocked);
        a = sigaction_of(next);
        if (ignored(next)) continue;
        shutdown_begins(next);
        if (a.sa_handler == SIG_DFL) exited(128 + next, next);  // each of these ends the process
        if (a.sa_flags & SA_RESETHAND) actions_[next].sa_handler = SIG_DFL;
        // The handler runs with its signal blocked, and with what sa_mask adds, as Linux runs it.
        std::uint64_t& blocked = here().blocked;
        saved = blocked;
        if ((a.sa_flags & SA_NODEFER) == 0) blocked |= bit(next);
        blocked |= simulated_bits(a.sa_mask);
        signal = next;
      }
    });
    if (signal == 0) return;
    LOOPSIM_ASSERT(a.sa_handler != SIG_IGN && a.sa_handler != SIG_DFL);  // a handler of the program's
    if (a.sa_flags & SA_ONSTACK) {
      // A handler that asked for the alternate stack (every Go handler does, and reads the
      // context the kernel gives) is run by the kernel: installed for the moment, and raised in
      // this thread, which runs it as the tgkill returns. Where the thread's real mask blocks
      // it (Go's runtime blocks signals in places of its own), it stays pending, and the
      // handler stays installed for the kernel to run when the mask lets it go.
      struct sigaction kept{}, raised = a;
      keep_unblocked(raised.sa_mask, false);  // its system calls may be trapped
      install_action(signal, &raised, &kept, false);
      LOOPSIM_REAL(tgkill)(::getpid(), ::gettid(), signal);
      sigset_t waiting;
      sigemptyset(&waiting);
      LOOPSIM_REAL(sigpending)(&waiting);
      if (sigismember(&waiting, signal) != 1) install_action(signal, &kept, nullptr, false);
    } else if (a.sa_flags & SA_SIGINFO) {
      siginfo_t info;
      std::memset(&info, 0, sizeof info);
      info.si_signo = signal;
      info.si_code = SI_USER;
      run_handler(a.sa_sigaction, signal, &info, nullptr);
    } else {
      run_handler(a.sa_sigaction, signal, nullptr, nullptr);  // sa_handler: the union's same pointer
    }
    on_engine([&] { here().blocked = saved; });
  }
}

struct sigaction Seam::sigaction_of(int signal) const {
  struct sigaction a{};
  a.sa_handler = SIG_DFL;
  if (auto it = actions_.find(signal); it != actions_.end()) a = it->second;
  return a;
}

std::uint64_t Seam::simulated_bits(const sigset_t& set) {
  std::uint64_t bits = 0;
  for (int signal = 1; signal < 64; ++signal) {
    if ((seam_signals & bit(signal)) != 0 && sigismember(&set, signal) == 1) bits |= bit(signal);
  }
  return bits;
}

void Seam::mask_changed(const sigset_t& now_blocked) {
  here().blocked = simulated_bits(now_blocked);
  // Linux delivers what the change unblocked before the call returns: here on main(), which
  // runs on the engine's OS thread; another thread's interposer delivers as it returns.
  if (this_thread() == nullptr && scheduler_->current() == thread_ && deliverable() != 0) deliver_signals();
}

void Seam::await_signal(const char* call, std::optional<Instant> deadline) {
  // On the engine, whose OS thread serves every simulated thread: main() is the scheduler's.
  const bool main = scheduler_->current() == thread_;
  if (deadline && main) {
    kernel_->spend_interruptibly(std::max(*deadline - now(), Duration(0)));
    return;
  }
  const int poller = blocker();
  if (poller < 0) refuse(call, -1, "no descriptor is left for the seam to wait with");
  PollEvent none[1];
  if (deadline) {
    kernel_->wait(poller, none, std::max(*deadline - now(), Duration(0)));
  } else {
    kernel_->wait(poller, none, wait_forever);
  }
}

long Seam::suspend(const char* call, const sigset_t* mask) {
  const std::uint64_t saved = here().blocked;
  {
    Inside inside(*this);
    if (mask != nullptr) here().blocked = simulated_bits(*mask);
    while (deliverable() == 0) await_signal(call);
  }
  if (scheduler_->current() != thread_) {
    // Another thread's handler runs on its own OS thread, as the call returns there (served,
    // posix/interpose.hpp), still under the call's mask; then end_suspend puts the thread's back.
    here().suspended = saved;
    return -EINTR;
  }
  // The handler runs under the call's mask; the program's comes back as the call returns.
  deliver_signals();
  here().blocked = saved;
  return -EINTR;
}

void Seam::end_suspend() {
  if (auto saved = std::exchange(here().suspended, std::nullopt)) here().blocked = *saved;
}

void Seam::add_pending(sigset_t& into) const {
  for (int signal = 1; signal < 64; ++signal) {
    if ((pending_here() & bit(signal)) != 0) sigaddset(&into, signal);
  }
}

// Any thread may wait so (a thread of its own for signals, the others blocking them all, is a
// common design); what it waits for is its own, and a signal that comes wakes it.
long Seam::wait_signal(const char* call, const sigset_t& set, std::optional<Duration> timeout) {
  Inside inside(*this);
  const model::ThreadId me = scheduler_->current();
  std::optional<Instant> deadline;
  if (timeout) deadline = now() + *timeout;
  std::uint64_t& awaited = awaiting_[me];
  awaited = simulated_bits(set);
  for (;;) {
    if ((pending_here() & awaited) != 0) {
      const int signal = take_signal(awaited);
      awaiting_.erase(me);
      shutdown_begins(signal);
      return signal;
    }
    // signal(7): a handler interrupts the wait, whatever SA_RESTART says.
    if (deliverable() != 0 || (deadline && now() >= *deadline)) {
      awaiting_.erase(me);
      return deliverable() != 0 ? -EINTR : -EAGAIN;
    }
    await_signal(call, deadline);
  }
}

// Linux's ITIMER_REAL is a process's, and its SIGALRM the process's: here main()'s.
void Seam::real_timer(Duration& left, Duration& every) const {
  left = !timer_due_ ? Duration(0) : std::max(*timer_due_ - now(), Duration(1000));  // armed: never 0
  every = timer_interval_;
}

void Seam::set_real_timer(Duration value, Duration interval, Duration& left, Duration& every) {
  real_timer(left, every);
  ++timer_armings_;
  timer_due_.reset();
  timer_interval_ = value > Duration(0) ? interval : Duration(0);
  if (value > Duration(0)) arm_real_timer(now() + value);
}

void Seam::arm_real_timer(Instant due) {
  timer_due_ = due;
  scheduler_->at(
      due,
      [this, arming = timer_armings_] {
        if (arming != timer_armings_) return;  // disarmed or set again since
        if (timer_interval_ > Duration(0)) {
          ++timer_armings_;
          arm_real_timer(*timer_due_ + timer_interval_);
        } else {
          timer_due_.reset();
        }
        post_signal(SIGALRM);
      },
      model::tag(model::Happening::timer, 0, timer_armings_));
}

// ---- signalfd: the pending signals as a descriptor ----

long Seam::signalfd(int fd, const sigset_t& mask, int flags) {
  Inside inside(*this);
  if ((flags & ~(SFD_NONBLOCK | SFD_CLOEXEC)) != 0) return failed(-EINVAL);
  if (fd != -1) {  // Linux: another descriptor is EINVAL, a closed one EBADF
    Fd* f = simulated(fd);
    if (f == nullptr) return failed(fd >= 0 ? -EINVAL : -EBADF);
    if (f->kind != Kind::signalfd) return failed(-EINVAL);
    f->counter = simulated_bits(mask);
    signals_changed();
    return fd;
  }
  const int sim = kernel_->wake_create();
  if (sim < 0) return failed(sim);
  const int made = adopt(Kind::signalfd, sim, (flags & SFD_NONBLOCK) != 0, (flags & SFD_CLOEXEC) != 0);
  file_of(made).counter = simulated_bits(mask);
  signals_changed();
  return made;
}

// Only where a signalfd's readiness changes: the kernel calls are the seam's, not the program's.
// Readiness is the process's pending signals: a signal one thread raised for itself, blocked,
// does not make the descriptor ready (Linux's signalfd_poll looks at the poller's own too); a
// read by that thread still takes it.
void Seam::signals_changed() {
  for (Fd& f : files_) {
    if (f.kind != Kind::signalfd) continue;
    const bool ready = (pending_signals_ & f.counter) != 0;
    if (ready == f.signalled) continue;
    f.signalled = ready;
    if (ready) {
      kernel_->wake_signal(f.sim);
    } else {
      kernel_->wake_drain(f.sim);
    }
  }
}

long Seam::read_signals(Fd& f, void* into, std::size_t size) {
  if (size < sizeof(signalfd_siginfo)) return -EINVAL;
  std::size_t done = 0;
  while (done + sizeof(signalfd_siginfo) <= size) {
    if ((pending_here() & f.counter) == 0) break;  // the reader's own too, as Linux's signalfd_read
    const int signal = take_signal(f.counter);
    shutdown_begins(signal);
    signalfd_siginfo info;
    std::memset(&info, 0, sizeof info);
    info.ssi_signo = std::uint32_t(signal);
    info.ssi_code = SI_USER;
    std::memcpy(static_cast<char*>(into) + done, &info, sizeof info);
    done += sizeof info;
  }
  return done == 0 ? -EAGAIN : long(done);
}

}  // namespace loopsim::posix
