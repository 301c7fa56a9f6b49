// A target's own threads (pthread_create), run deterministically: one OS thread at a time.
//
// Each thread the program starts is a real OS thread, so that it keeps its own thread-local
// storage and errno, and a simulated thread, its proxy, which holds its place in virtual time.
// The two pass a baton: while the real thread runs the program's code, its proxy's fiber waits
// for it on the engine's OS thread, and nothing else runs. A call the simulation serves is
// handed to the proxy, which makes it in virtual time (blocking there as a simulated thread
// blocks) and hands the baton back with its result. So exactly one OS thread runs at any moment,
// and every switch between threads is made by the scheduler, from the run's choices.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>

#include "model/scheduler.hpp"
#include "target/target.hpp"

namespace loopsim::posix {

// A binary semaphore on a futex, for handing the baton between OS threads.
class Baton {
 public:
  // Only the OS thread that holds the baton gives it, and a taker finds it given: at most one
  // OS thread runs the program's code or the seam's (both asserted). `ending`: a thread's last
  // word as it ends, which it may say without holding it (cancelled while it waited).
  void give(bool ending = false);
  // Waits for the baton. With a limit (nanoseconds, > 0), false once `cpu`, the CPU-time clock
  // of the thread that holds the baton, has run that long since the wait began: a watchdog's
  // wait, not a simulated one, and one that a loaded machine does not shorten. A thread that
  // runs no CPU (blocked for real) is never given up here.
  bool take(std::int64_t limit_ns = 0, clockid_t cpu = CLOCK_MONOTONIC);

 private:
  std::atomic<int> word_{0};
};

// A call to be made on the engine's OS thread, on the calling thread's behalf.
struct Request {
  void* object = nullptr;
  void (*call)(void*) = nullptr;
};

struct TargetThread {
  int index = 0;  // 1, 2, ... in the order the program started them (its main thread is 0)
  pthread_t os{};
  pid_t tid = 0;  // its OS thread's id, once it runs (for a tgkill to it)
  model::ThreadId fiber = model::no_thread;  // its proxy
  void* (*start)(void*) = nullptr;
  void* argument = nullptr;
  void* value = nullptr;   // what it returned, or passed to pthread_exit
  bool detached = false;   // as the program sees it: the OS thread is always joined, by the proxy
  bool finished = false;   // its start routine ended: set by the thread, read by its proxy
  bool gone = false;       // ...and the OS thread has exited (the proxy joined it)
  bool joined = false;     // the program joined it
  Baton run;   // the thread may run
  Baton back;  // the engine may run: a request waits, or the thread finished
  Request request;
  // Its proxy asks it to give way: it has run a spin slice of its own CPU time without a call
  // (posix/threads.cpp, the preemption signal's handler).
  std::atomic<bool> preempt{false};
  bool spun = false;  // its last request was a spin's yield, not a call of its own
};

// The real-time signal the seam sends a target thread that spins, so that it gives way as a
// thread Linux preempts does, is sim::preempt_signal(). The program's masks never block it.
using sim::preempt_signal;
// At the seam's start: the handler of preempt_signal, and the address ranges of the code it never
// preempts (libc, the dynamic loader, the seam itself: their locks are real).
void install_preemption();

// The target's thread this OS thread runs, or null (the engine's OS thread, or one the
// simulation does not run).
TargetThread* this_thread();
// Whether this OS thread is the engine's: where the scheduler, its fibers, and the program's
// main() run.
bool on_engine_thread();
void set_engine_thread();

}  // namespace loopsim::posix
