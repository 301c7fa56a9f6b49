// The target's threads: the baton between OS threads, and the Seam's side of pthread_create,
// joins and waits (posix/threads.hpp).
#include "posix/threads.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string>

#include "base/assert.hpp"
#include "posix/seam.hpp"
#include "sim/target_wire.hpp"

namespace loopsim::posix {

namespace {

thread_local TargetThread* running = nullptr;  // the target thread this OS thread is
thread_local bool engine_here = false;

long futex(std::atomic<int>* word, int op, int value, const timespec* timeout) {
  return real<long(long, ...), "syscall">()(SYS_futex, reinterpret_cast<long>(word), long(op), long(value),
                                            reinterpret_cast<long>(timeout), 0L, 0L);
}

// A real clock's time (the program's clock_gettime is virtual); -1 where it cannot be read.
std::int64_t clock_ns(clockid_t clock) {
  timespec t{};
  if (real<int(clockid_t, timespec*), "clock_gettime">()(clock, &t) != 0) return -1;
  return std::int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// The OS thread of a target thread: waits for the baton, runs the program's start routine,
// and tells its proxy when it ends (by return, or by pthread_exit's unwinding).
void* trampoline(void* argument) {
  auto* t = static_cast<TargetThread*>(argument);
  t->run.take();
  running = t;
  struct Finish {
    TargetThread* t;
    ~Finish() {
      running = nullptr;  // what the thread's exit runs after this goes to libc
      t->finished = true;
      t->back.give();
    }
  } finish{t};
  t->value = t->start(t->argument);
  return t->value;
}

}  // namespace

TargetThread* this_thread() { return running; }
bool on_engine_thread() { return engine_here; }
void set_engine_thread() { engine_here = true; }

void Baton::give() {
  word_.store(1, std::memory_order_release);
  futex(&word_, FUTEX_WAKE_PRIVATE, 1, nullptr);
}

bool Baton::take(std::int64_t limit_ns, clockid_t cpu) {
  const std::int64_t start = limit_ns > 0 ? clock_ns(cpu) : 0;
  for (;;) {
    int expected = 1;
    if (word_.compare_exchange_strong(expected, 0, std::memory_order_acquire)) return true;
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
  if (TargetThread* t = this_thread()) {
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
  using Create = int(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  int rc = real<Create, "pthread_create">()(&t->os, attributes != nullptr ? &attr : nullptr, trampoline, t.get());
  if (rc != 0) return rc;
  if (thread != nullptr) *thread = t->os;
  TargetThread* made = t.get();
  threads_.push_back(std::move(t));
  made->fiber = scheduler_->spawn("thread " + std::to_string(made->index), [this, made] { run_thread(*made); },
                                  model::Scheduler::default_stack);
  const auto slot = std::size_t(made->fiber + 1);
  if (slot >= per_thread_.size()) per_thread_.resize(slot + 1);
  per_thread_[slot].worker = made->index;
  return 0;
}

void Seam::run_thread(TargetThread& t) {
  for (;;) {
    t.run.give();
    // The spin watch counts the thread's own CPU time, so that a loaded machine judges as an
    // idle one does.
    const Nanos limit = scenario_.target->spin_limit;
    clockid_t cpu = CLOCK_MONOTONIC;
    if (pthread_getcpuclockid(t.os, &cpu) != 0) cpu = CLOCK_MONOTONIC;
    if (!t.back.take(std::max<std::int64_t>(limit.count(), 1), cpu)) spun("thread " + std::to_string(t.index), limit);
    if (t.finished) break;
    Request request = std::exchange(t.request, Request{});
    LOOPSIM_ASSERT(request.call != nullptr);
    request.call(request.object);
    stop_if_ended();
  }
  real<int(pthread_t, void**), "pthread_join">()(t.os, nullptr);
  t.gone = true;
  wake_on(&t, INT32_MAX);
}

void Seam::spun(const std::string& who, Nanos limit) {
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.0f ms", double(limit.count()) / 1e6);
  sim::wire::send_failure(host_, sim::wire::Failure::bad_input,
                          scenario_.position_of({"target.spin_limit", "target.exec"}) + ": the target's " + who +
                              where(-1) + " ran for " + ms +
                              " of its own CPU time without a call the simulation serves: a spin, which "
                              "virtual time cannot move past (target.spin_limit)");
  real<void(int), "_exit">()(2);
  __builtin_unreachable();
}

TargetThread* Seam::thread_of(pthread_t thread) {
  // The newest first: an exited thread's identifier is given again to a later one.
  for (auto it = threads_.rbegin(); it != threads_.rend(); ++it) {
    if (pthread_equal((*it)->os, thread)) return it->get();
  }
  return nullptr;
}

long Seam::join(TargetThread& t, void** value) {
  if (t.detached || t.joined) return EINVAL;
  if (t.fiber == scheduler_->current()) return EDEADLK;
  while (!t.gone) wait_on(&t, wait_forever);
  t.joined = true;
  if (value != nullptr) *value = t.value;
  return 0;
}

long Seam::wait_on(const void* address, std::optional<Nanos> deadline) {
  const model::ThreadId me = scheduler_->current();
  LOOPSIM_ASSERT(me != model::no_thread);
  std::deque<model::ThreadId>& queue = waiting_[address];
  queue.push_back(me);
  const bool woken = scheduler_->block(deadline);
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

}  // namespace loopsim::posix
