#include "model/scheduler.hpp"

#include <algorithm>
#include <boost/context/fixedsize_stack.hpp>

#include "realloop/assert.hpp"

namespace loopsim::model {

namespace ctx = boost::context;

namespace {
constexpr std::size_t stack_bytes = 256 * 1024;
}

struct Scheduler::Thread {
  enum class State : std::uint8_t { runnable, sleeping, blocked, done };
  std::string name;
  std::function<void()> body;
  ctx::fiber fiber;  // the thread, suspended; resumed by the scheduler
  ctx::fiber sink;   // the scheduler, suspended while the thread runs
  State state = State::runnable;
  std::uint64_t generation = 0;
  bool woken = false;
};

Scheduler::Scheduler() = default;

Scheduler::~Scheduler() { unwind(); }

void Scheduler::unwind() {
  LOOPSIM_ASSERT(current_ == no_thread);
  // Destroying a suspended fiber unwinds its stack.
  for (auto& thread : threads_) {
    thread->fiber = ctx::fiber{};
    thread->state = Thread::State::done;
  }
  queue_.clear();
}

void Scheduler::push(Entry entry) {
  queue_.push_back(std::move(entry));
  std::push_heap(queue_.begin(), queue_.end(), Later{});
}

void Scheduler::at(Nanos when, std::function<void()> callback) {
  LOOPSIM_ASSERT(callback != nullptr);
  push(Entry{std::max(when, now_), seq_++, Kind::callback, no_thread, 0, std::move(callback)});
}

ThreadId Scheduler::spawn(std::string name, std::function<void()> body) {
  auto id = ThreadId(threads_.size());
  auto thread = std::make_unique<Thread>();
  thread->name = std::move(name);
  thread->body = std::move(body);
  Thread* self = thread.get();
  thread->fiber = ctx::fiber(std::allocator_arg, ctx::fixedsize_stack(stack_bytes),
                             [self](ctx::fiber&& sink) {
                               self->sink = std::move(sink);
                               self->body();
                               self->state = Thread::State::done;
                               return std::move(self->sink);
                             });
  threads_.push_back(std::move(thread));
  push(Entry{now_, seq_++, Kind::resume, id, 0, nullptr});
  return id;
}

bool Scheduler::finished(ThreadId thread) const {
  return threads_.at(std::size_t(thread))->state == Thread::State::done;
}

void Scheduler::yield(Thread& thread) {
  thread.sink = std::move(thread.sink).resume();
}

void Scheduler::sleep_until(Nanos when) {
  LOOPSIM_ASSERT(current_ != no_thread);
  Thread& thread = *threads_[std::size_t(current_)];
  thread.state = Thread::State::sleeping;
  push(Entry{std::max(when, now_), seq_++, Kind::resume, current_, ++thread.generation, nullptr});
  yield(thread);
}

bool Scheduler::block(Nanos deadline) {
  LOOPSIM_ASSERT(current_ != no_thread);
  Thread& thread = *threads_[std::size_t(current_)];
  thread.state = Thread::State::blocked;
  thread.woken = false;
  ++thread.generation;
  if (deadline != wait_forever) {
    push(Entry{std::max(deadline, now_), seq_++, Kind::resume, current_, thread.generation,
               nullptr});
  }
  yield(thread);
  return thread.woken;
}

void Scheduler::wake(ThreadId id) {
  Thread& thread = *threads_.at(std::size_t(id));
  if (thread.state != Thread::State::blocked || thread.woken) return;
  thread.woken = true;
  push(Entry{now_, seq_++, Kind::resume, id, ++thread.generation, nullptr});
}

void Scheduler::resume(ThreadId id) {
  Thread& thread = *threads_[std::size_t(id)];
  LOOPSIM_ASSERT(current_ == no_thread);
  thread.state = Thread::State::runnable;
  current_ = id;
  thread.fiber = std::move(thread.fiber).resume();
  current_ = no_thread;
}

std::uint64_t Scheduler::run_until(Nanos until) {
  LOOPSIM_ASSERT(current_ == no_thread);
  std::uint64_t steps = 0;
  while (!queue_.empty() && queue_.front().when < until) {
    std::pop_heap(queue_.begin(), queue_.end(), Later{});
    Entry entry = std::move(queue_.back());
    queue_.pop_back();
    LOOPSIM_ASSERT_OP(entry.when.count(), >=, now_.count());
    now_ = entry.when;
    ++steps;
    if (entry.kind == Kind::callback) {
      entry.callback();
      continue;
    }
    Thread& thread = *threads_[std::size_t(entry.thread)];
    if (thread.state == Thread::State::done || entry.generation != thread.generation) continue;
    resume(entry.thread);
  }
  now_ = std::max(now_, until);
  return steps;
}

}  // namespace loopsim::model
