// What the interposers share (posix/interpose.cpp, posix/interpose_threads.cpp,
// posix/interpose_signals.cpp and the rest): how a call is served, whether the seam serves it,
// and the virtual clocks.
#pragma once

#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <exception>

#include "posix/seam.hpp"
#include "posix/user_memory.hpp"

namespace loopsim::posix::calls {

// The virtual clocks' origins: a monotonic clock that has been up for 1000 s, and a calendar
// that starts at 2026-01-01T00:00:00Z. Fixed, so that the same run reads the same times.
inline constexpr std::int64_t monotonic_origin_ns = 1'000'000'000'000;
inline constexpr std::int64_t realtime_origin_ns = 1'767'225'600'000'000'000;

inline long result(long rc) {
  if (rc < 0) {
    errno = int(-rc);
    return -1;
  }
  return rc;
}

// Runs `serve` on the engine, on the calling thread's behalf (Seam::on_engine), and returns what
// it returns. Nothing the engine throws may cross libc's frames: it ends the run, naming the call.
template <typename F>
long engine_call(const char* call, F&& serve) noexcept {
  // A forked child's simulation is a copy, frozen at the fork (posix/processes.cpp): what it
  // does on a connection its parent makes for it, and nothing else.
  if (current->forked() && Seam::forwarded(call)) return serve();
  if (current->forked()) {
    current->refuse(call, -1,
                    "a child is served only as far as its exec: it may close and duplicate simulated descriptors, "
                    "and exec (docs/targets.md)");
  }
  long rc = 0;
  current->on_engine([&] {
    try {
      rc = serve();
    } catch (const std::exception& e) {
      current->fatal(call, e.what());
    } catch (...) {
      current->fatal(call, "an exception of unknown type");
    }
  });
  return rc;
}

// A call served by the seam: its result, or -1 with errno set. errno is otherwise the program's:
// while a call blocks, the engine runs the simulation's other threads (clients, timers) on
// this OS thread, and they may set it, so a call that succeeds leaves errno as it found it.
template <typename F>
long served(const char* call, F&& serve) noexcept {
  LOOPSIM_ASSERT(current != nullptr);  // only an interposer that found the seam running calls in
  const int saved = errno;
  long rc = engine_call(call, serve);
  // A thread other than main() whose call a signal cut short, every handler asking SA_RESTART:
  // the handlers run here, on its own OS thread, and the call is made again, as Linux restarts it.
  while (rc == -EINTR && !current->forked() && this_thread() != nullptr && current->take_restart()) {
    current->deliver_signals();
    rc = engine_call(call, serve);
  }
  LOOPSIM_ASSERT_OP(rc, >=, -4095L);  // a failure is -errno, as Linux's system calls return it
  // A signal that came meanwhile is delivered on the way back to the program, on the thread
  // that takes it.
  if (!current->forked() && current->signals_pending() && current->in_target()) current->deliver_signals();
  if (rc < 0) {
    errno = int(-rc);
    return -1;
  }
  errno = saved;
  return rc;
}

using posix::copy_in;
using posix::copy_out;

// getrandom's bytes, from the scenario's seed (Seam::random_bytes). Linux gives at most 32 MiB - 1
// a call from the urandom source. The bytes are drawn in chunks of a multiple of 8, so that the
// stream is the one a single draw gives, and copied out as Linux copies them: a buffer it cannot
// write ends the call with what was written, or EFAULT when nothing was.
inline long random_into(void* buffer, std::size_t size) {
  const std::size_t n = size < 33554431 ? size : 33554431;
  unsigned char chunk[256];
  for (std::size_t at = 0; at < n; at += sizeof chunk) {
    const std::size_t length = std::min(sizeof chunk, n - at);
    current->random_bytes(chunk, length);
    if (!copy_out(static_cast<unsigned char*>(buffer) + at, chunk, length)) {
      return at > 0 ? long(at) : result(-EFAULT);
    }
  }
  return long(n);
}

// A thread's new signal mask, as the seam keeps it for a scenario's signals. What the change lets
// go is delivered before the call returns, as Linux delivers it: on main() by mask_changed, on
// another thread here, on its own OS thread. Both ways a mask changes come here: libc's
// pthread_sigmask and sigprocmask, and a static binary's trapped rt_sigprocmask.
inline void mask_now(const sigset_t& blocked) {
  current->on_engine([&] { current->mask_changed(blocked); });
  if (this_thread() != nullptr && current->signals_pending() && current->in_target()) current->deliver_signals();
}

inline bool owned(int fd) { return current != nullptr && current->owns(fd); }
// Whether the program is calling, from a thread the simulation runs (not from a forked child,
// whose calls go to libc but for those on simulated descriptors).
inline bool making() { return current != nullptr && !current->forked() && current->in_target(); }

// Whether the clocks the caller reads are the simulation's: the program's own threads, and a
// forked child's (its copy of the simulation, at its parent's time: a child's date in its answer
// must not be the machine's, or the same run would answer differently).
inline bool virtual_clocks() { return making() || (current != nullptr && current->forked()); }

inline std::int64_t virtual_ns(clockid_t clock) {
  std::int64_t t = since_start(current->now()).count();
  switch (clock) {
    case CLOCK_REALTIME:
    case CLOCK_REALTIME_COARSE:
    case CLOCK_TAI: return realtime_origin_ns + t;
    case CLOCK_PROCESS_CPUTIME_ID:
    case CLOCK_THREAD_CPUTIME_ID: return t;
    default: return monotonic_origin_ns + t;
  }
}

inline timespec to_timespec(std::int64_t ns) { return timespec{time_t(ns / 1'000'000'000), long(ns % 1'000'000'000)}; }
inline Duration from_timespec(const timespec& t) { return Duration(std::int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec); }

// The virtual instant a deadline on `clock` (an absolute time, as pthread's timed waits take)
// stands for.
inline Instant deadline_of(clockid_t clock, const timespec& at) {
  return current->now() + (from_timespec(at) - Duration(virtual_ns(clock)));
}

// A system call by its number, with its six arguments, as syscall(3) makes it: routed to the
// interposer of the same name where the seam serves it, to libc's syscall() where not. libc's
// result (-1 and errno on failure). For syscall() itself, and for the calls the trap catches
// (posix/interpose_trap.cpp): `own` says the program made it itself, for the refusals' names.
long system_call(long number, const long* arguments, bool own) noexcept;

// syscall(SYS_futex, ...) from a target's thread: its waits and wakes in virtual time
// (posix/interpose_threads.cpp).
long futex_call(const long* arguments);

}  // namespace loopsim::posix::calls
