// The target's threads: the baton between OS threads, and the Seam's side of pthread_create,
// joins and waits (posix/threads.hpp).
#include "posix/threads.hpp"

#include <link.h>
#include <linux/futex.h>
#include <signal.h>
#include <ucontext.h>
#include <sys/syscall.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/assert.hpp"
#include "posix/seam.hpp"
#include "target/target.hpp"
#include "target/target_wire.hpp"

namespace loopsim::posix {

namespace {

thread_local TargetThread* running = nullptr;  // the target thread this OS thread is
thread_local bool engine_here = false;
// The OS thread that holds the baton: the engine's from the seam's start (set_engine_thread),
// then whichever took it last. Only the holder gives it, and a taker finds it given: so at most
// one OS thread runs the program's code or the seam's at a time (threads.hpp). 0 while it is
// passed on.
std::atomic<pid_t> baton_holder{0};

// Seam::test_errno_variable's value (read before the first thread starts), or 0: a baton taken
// sets errno to it, as a futex wait that finds the baton given already fails EAGAIN.
int errno_on_take = 0;

// How the baton orders what its holders did: release as it is given, acquire as it is taken.
// In the seam built with ThreadSanitizer, relaxed with Seam::test_race_variable set (read before
// the first thread starts): a baton that orders nothing, which TSan must report.
#if defined(__SANITIZE_THREAD__)
std::memory_order giving = std::memory_order_release;
std::memory_order taking = std::memory_order_acquire;
std::memory_order passing = std::memory_order_acq_rel;
#else
constexpr std::memory_order giving = std::memory_order_release;
constexpr std::memory_order taking = std::memory_order_acquire;
constexpr std::memory_order passing = std::memory_order_acq_rel;
#endif

// The calling OS thread's id, read once a thread (gettid is a system call, and the baton
// changes hands at every switch). A fork's child keeps its parent's thread's value, which would
// be wrong there; but a child never passes the baton (making() is false in it: its calls go to
// Linux), and one that did would fail take()'s assertion at once.
thread_local pid_t my_tid = 0;
pid_t this_tid() {
  if (my_tid == 0) my_tid = ::gettid();
  return my_tid;
}

long futex(std::atomic<int>* word, int op, int value, const timespec* timeout) {
  return LOOPSIM_REAL(syscall)(SYS_futex, reinterpret_cast<long>(word), long(op), long(value),
                                            reinterpret_cast<long>(timeout), 0L, 0L);
}

// A real clock's time (the program's clock_gettime is virtual); -1 where it cannot be read.
std::int64_t clock_ns(clockid_t clock) {
  timespec t{};
  if (real_clock(clock, &t) != 0) return -1;
  return std::int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// ---- preemption: a thread that spins gives way ----

// The text of libc, the dynamic loader and the seam: a thread interrupted there may hold one of
// their real locks (malloc's, the loader's), which the thread run next could need. Filled at the
// start, read by the handler (no lock, no allocation).
struct Range {
  std::uintptr_t from = 0, to = 0;
};
Range runtime[16];
int runtime_count = 0;

int note_runtime(dl_phdr_info* info, std::size_t, void*) {
  const std::string_view name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  const bool ours = name.find("/libc.so") != std::string_view::npos || name.find("/ld-linux") != std::string_view::npos ||
                    name.find("libloopsim_seam") != std::string_view::npos ||
                    name.find("/libpthread.so") != std::string_view::npos ||
                    name.find("/libstdc++.so") != std::string_view::npos || name.find("/libgcc_s.so") != std::string_view::npos;
  if (!ours) return 0;
  for (int i = 0; i < info->dlpi_phnum && runtime_count < int(std::size(runtime)); ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD || (segment.p_flags & PF_X) == 0) continue;
    runtime[runtime_count++] = {info->dlpi_addr + segment.p_vaddr, info->dlpi_addr + segment.p_vaddr + segment.p_memsz};
  }
  return 0;
}

bool in_runtime(std::uintptr_t pc) {
  for (int i = 0; i < runtime_count; ++i) {
    if (pc >= runtime[i].from && pc < runtime[i].to) return true;
  }
  return false;
}

// The thread has spun a slice: where it was interrupted in the program's own code, it gives way
// (Seam::spin_yield, on its proxy); in the runtime's, it goes on, and its proxy asks again.
void on_preempt(int, siginfo_t*, void* context) {
#if defined(__x86_64__)
  const auto pc = std::uintptr_t(static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  const auto pc = std::uintptr_t(static_cast<ucontext_t*>(context)->uc_mcontext.pc);
#else
  const std::uintptr_t pc = 0;
#endif
  const int saved = errno;
  if (TargetThread* t = running) {
    if (!t->preempt.load(std::memory_order_acquire) || pc == 0 || in_runtime(pc)) return;
    t->preempt.store(false, std::memory_order_release);
    t->spun = true;
    current->on_engine([] { current->spin_yield(); });
  } else if (engine_here && current != nullptr && main_watch != nullptr && current->in_target()) {
    // main(), on the engine's own OS thread: it gives way from here, its fiber switched out
    // inside the handler, and the handler returns when main() is run again.
    if (pc == 0 || in_runtime(pc) || main_watch->preempt.exchange(0, std::memory_order_acq_rel) == 0) return;
    current->spin_yield();
  }
  errno = saved;
}

// The OS thread of a target thread: waits for the baton, runs the program's start routine,
// and tells its proxy when it ends (by return, or by pthread_exit's unwinding).
void* trampoline(void* argument) {
  auto* t = static_cast<TargetThread*>(argument);
  t->run.take();
  running = t;
  t->tid = this_tid();
  sigset_t preempting;
  sigemptyset(&preempting);
  sigaddset(&preempting, preempt_signal());
  LOOPSIM_REAL(pthread_sigmask)(SIG_UNBLOCK, &preempting, nullptr);
  struct Finish {
    TargetThread* t;
    ~Finish() {
      running = nullptr;  // what the thread's exit runs after this goes to libc
      t->finished = true;
      t->back.give(true);
    }
  } finish{t};
  t->value = t->start(t->argument);
  return t->value;
}

}  // namespace

void install_preemption() {
  runtime_count = 0;
  dl_iterate_phdr(note_runtime, nullptr);
  struct sigaction action{};
  action.sa_sigaction = on_preempt;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigfillset(&action.sa_mask);
  install_action(preempt_signal(), &action, nullptr, true);
}

TargetThread* this_thread() { return running; }
bool on_engine_thread() { return engine_here; }
void set_engine_thread() {
  engine_here = true;
#if defined(__SANITIZE_THREAD__)
  if (std::getenv(Seam::test_race_variable) != nullptr) {
    giving = taking = passing = std::memory_order_relaxed;
  }
#endif
  if (const char* value = std::getenv(Seam::test_errno_variable)) errno_on_take = std::atoi(value);
  baton_holder.store(this_tid(), std::memory_order_release);
}

void Baton::give(bool ending) {
  pid_t held_by_me = this_tid();
  const bool held = baton_holder.compare_exchange_strong(held_by_me, 0, passing);
  // A thread cancelled while it waited for its turn (asynchronous cancellation: redis's bio
  // threads at shutdown) unwinds and tells its proxy it ended without holding the baton; the
  // holder keeps it.
  LOOPSIM_ASSERT(held || ending);
  word_.store(1, giving);
  futex(&word_, FUTEX_WAKE_PRIVATE, 1, nullptr);
}

bool Baton::take(std::int64_t limit_ns, clockid_t cpu) {
  const std::int64_t start = limit_ns > 0 ? clock_ns(cpu) : 0;
  for (;;) {
    int expected = 1;
    if (word_.compare_exchange_strong(expected, 0, taking)) {
      const pid_t me = this_tid();
      const pid_t was = baton_holder.exchange(me, passing);
      LOOPSIM_ASSERT(was == 0 || was == me);  // given, or given back by a thread that ended
      if (errno_on_take != 0) errno = errno_on_take;
      return true;
    }
    if (limit_ns <= 0) {
      futex(&word_, FUTEX_WAIT_PRIVATE, 0, nullptr);
      continue;
    }
    const std::int64_t now = clock_ns(cpu);
    if (now < 0) {  // the clock went with its thread, which gives the baton as it ends
      futex(&word_, FUTEX_WAIT_PRIVATE, 0, nullptr);
      continue;
    }
    const std::int64_t left = limit_ns - (now - start);
    if (left <= 0) return false;
    // A thread runs at most as long as the machine's clock moves: `left` of it is the least
    // wait after which the limit may have passed.
    timespec wait{time_t(left / 1'000'000'000), long(left % 1'000'000'000)};
    futex(&word_, FUTEX_WAIT_PRIVATE, 0, &wait);
  }
}

// ---- the Seam's side ----

void Seam::run_request(Request request) {
  LOOPSIM_ASSERT(request.call != nullptr);
  if (TargetThread* t = this_thread()) {
    LOOPSIM_ASSERT(!on_engine_thread());  // a target thread's OS thread is never the engine's
    LOOPSIM_ASSERT(t->request.call == nullptr);  // one request at a time: the thread waits for its answer
    LOOPSIM_ASSERT(!t->finished);
    t->request = request;
    t->back.give();
    t->run.take();
    return;
  }
  if (!on_engine_thread()) {
    refuse("a call on a simulated descriptor", -1,
           "it came from an OS thread the simulation does not run (one the program started before the "
           "simulation, or one ending after its start routine returned)");
  }
  request.call(request.object);
  stop_if_ended();
}

// A process's exit ends all its threads at once (exit_group): none of them sees its descriptors
// close under it. A thread whose call returns after the exit began is stopped there.
void Seam::stop_if_ended() {
  if (!ended_) return;
  for (;;) scheduler_->block(wait_forever);
}

long Seam::create_thread(pthread_t* thread, const pthread_attr_t* attributes, void* (*start)(void*),
                         void* argument) {
  Inside inside(*this);
  LOOPSIM_ASSERT(on_engine_thread());  // made by a proxy or main(), never by an OS thread of the program's
  auto t = std::make_unique<TargetThread>();
  t->index = int(threads_.size()) + 1;
  t->start = start;
  t->argument = argument;
  // Every OS thread is made joinable, and its proxy joins it as it ends, with the engine waiting:
  // its exit (thread-local destructors) then runs alone too. The program's detach is kept as a flag.
  pthread_attr_t attr;
  if (attributes != nullptr) {
    attr = *attributes;
    int state = PTHREAD_CREATE_JOINABLE;
    pthread_attr_getdetachstate(&attr, &state);
    t->detached = state == PTHREAD_CREATE_DETACHED;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_JOINABLE);
  }
  int rc = LOOPSIM_REAL(pthread_create)(&t->os, attributes != nullptr ? &attr : nullptr, trampoline, t.get());
  if (rc != 0) return rc;
  if (thread != nullptr) *thread = t->os;
  TargetThread* made = t.get();
  LOOPSIM_ASSERT(made->index == int(threads_.size()) + 1);  // numbered in the order made, from 1
  threads_.push_back(std::move(t));
  made->fiber = scheduler_->spawn("thread " + std::to_string(made->index), [this, made] { run_thread(*made); },
                                  model::Scheduler::default_stack);
  // pthread_create(3): the new thread's mask is its maker's.
  mask_of(made->fiber) = mask_of(scheduler_->current());
  const auto slot = std::size_t(made->fiber + 1);
  per_thread_[slot].worker = made->index;
  return 0;
}

void Seam::run_thread(TargetThread& t) {
  // Its proxy: a fiber of the engine's, which hands the baton to the thread and takes it back.
  LOOPSIM_ASSERT(on_engine_thread() && this_thread() == nullptr);
  std::int64_t spinning = 0;  // CPU time the thread has run since its last call (its slices)
  for (;;) {
    t.run.give();
    // The spin watch counts the thread's own CPU time, so that a loaded machine judges as an
    // idle one does. Each slice of it without a call, the thread is asked to give way, as
    // Linux preempts a thread that spins on a lock another holds; past spin_limit it is a spin
    // that nothing ends.
    const Duration limit = scenario_.target->spin_limit;
    clockid_t cpu = CLOCK_MONOTONIC;
    if (pthread_getcpuclockid(t.os, &cpu) != 0) cpu = CLOCK_MONOTONIC;
    for (;;) {
      const std::int64_t slice = std::max<std::int64_t>(std::min(sim::spin_slice.count(), limit.count() - spinning), 1);
      if (t.back.take(slice, cpu)) break;
      spinning += slice;
      if (spinning >= limit.count()) spun("thread " + std::to_string(t.index), limit);
      t.preempt.store(true, std::memory_order_release);
      LOOPSIM_REAL(pthread_kill)(t.os, preempt_signal());
    }
    t.preempt.store(false, std::memory_order_release);
    if (t.finished) break;
    if (!t.spun) spinning = 0;  // a call of its own: it did not spin
    t.spun = false;
    Request request = std::exchange(t.request, Request{});
    LOOPSIM_ASSERT(request.call != nullptr);
    request.call(request.object);
    stop_if_ended();
  }
  LOOPSIM_REAL(pthread_join)(t.os, nullptr);
  t.gone = true;
  wake_on(&t, INT32_MAX);
}

void Seam::spun(const std::string& who, Duration limit) {
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.0f ms", double(limit.count()) / 1e6);
  sim::wire::send_failure(host_, sim::wire::Failure::bad_input,
                          scenario_.position_of({"target.spin_limit", "target.exec"}) + ": the target's " + who +
                              where(-1) + " ran for " + ms +
                              " of its own CPU time without a call the simulation serves, giving way each 100 ms "
                              "of it: a spin that nothing ends (target.spin_limit)");
  LOOPSIM_REAL(_exit)(2);
  __builtin_unreachable();
}

TargetThread* Seam::thread_of(pthread_t thread) {
  return newest_thread([&](const TargetThread& t) { return pthread_equal(t.os, thread) != 0; });
}

long Seam::join(TargetThread& t, void** value) {
  if (t.detached || t.joined) return EINVAL;
  if (t.fiber == scheduler_->current()) return EDEADLK;
  // Interruptible, as glibc's wait on the thread's futex: the interposer runs the handlers and
  // joins again.
  while (!t.gone) {
    if (wait_on(&t, wait_forever, true) == -EINTR) return -EINTR;
  }
  t.joined = true;
  if (value != nullptr) *value = t.value;
  return 0;
}

long Seam::wait_on(const void* address, std::optional<Instant> deadline, bool interruptible) {
  const model::ThreadId me = scheduler_->current();
  LOOPSIM_ASSERT(me != model::no_thread);
  std::deque<model::ThreadId>& queue = waiting_[address];
  LOOPSIM_ASSERT(std::find(queue.begin(), queue.end(), me) == queue.end());  // a thread waits once
  queue.push_back(me);
  if (interruptible) here().futex_wait = address;
  const bool woken = scheduler_->block(deadline);
  if (interruptible) here().futex_wait.reset();
  if (interruptible && std::exchange(here().futex_interrupted, false)) return -EINTR;  // post_signal took it off the queue
  if (woken) return 0;
  // The deadline came first: no longer waiting (a wake that came since has found it gone).
  auto it = waiting_.find(address);
  if (it != waiting_.end()) {
    std::erase(it->second, me);
    if (it->second.empty()) waiting_.erase(it);
  }
  return -ETIMEDOUT;
}

int Seam::wake_on(const void* address, int most) {
  LOOPSIM_ASSERT_OP(most, >=, 0);
  auto it = waiting_.find(address);
  if (it == waiting_.end()) return 0;
  int woken = 0;
  while (woken < most && !it->second.empty()) {
    scheduler_->wake(it->second.front());
    it->second.pop_front();
    ++woken;
  }
  if (it->second.empty()) waiting_.erase(it);
  return woken;
}

bool Seam::awaited(const void* address) const { return waiting_.count(address) > 0; }

void Seam::switch_point() {
  if (threads_.empty() || preemptions_ >= scenario_.target->preemptions) return;
  const model::ThreadId me = scheduler_->current();
  bool other = me != thread_ && scheduler_->due_now(thread_);
  for (const auto& t : threads_) other = other || (t->fiber != me && !t->gone && scheduler_->due_now(t->fiber));
  if (!other) return;
  if (scheduler_->choose(model::ChoiceKind::preempt, 2) == 0) return;
  ++preemptions_;
  LOOPSIM_ASSERT_OP(preemptions_, <=, scenario_.target->preemptions);
  scheduler_->sleep_until(now());
}

void Seam::yield_thread() { scheduler_->sleep_until(now()); }

// Not a call: main()'s watch goes on counting its spin, and a thread's proxy its slices.
void Seam::spin_yield() {
  trace_->events.push_back(sim::ev::GaveWay{now(), worker()});
  scheduler_->sleep_until(now() + sim::spin_cost);
}

}  // namespace loopsim::posix
