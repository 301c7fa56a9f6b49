#include "model/scheduler.hpp"

#include <algorithm>
#include <boost/context/fixedsize_stack.hpp>

#include <array>

#include "model/digest.hpp"
#include "base/assert.hpp"
#include "realloop/state.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define LOOPSIM_ASAN_FIBERS 1
#endif

namespace loopsim::model {

namespace ctx = boost::context;

namespace {

// AddressSanitizer must be told of every switch between stacks, or it takes a fiber's stack
// for a stack overflow and an unwinding exception for a jump into the unknown.
struct StackBounds {
  const void* bottom = nullptr;
  std::size_t size = 0;
};

void start_switch([[maybe_unused]] void** fake_stack, [[maybe_unused]] const StackBounds& to) {
#ifdef LOOPSIM_ASAN_FIBERS
  __sanitizer_start_switch_fiber(fake_stack, to.bottom, to.size);
#endif
}

void finish_switch([[maybe_unused]] void* fake_stack, [[maybe_unused]] StackBounds* from) {
#ifdef LOOPSIM_ASAN_FIBERS
  __sanitizer_finish_switch_fiber(fake_stack, from ? &from->bottom : nullptr,
                                  from ? &from->size : nullptr);
#endif
}

// A fixed-size stack that remembers where it is, for the sanitizer.
class TrackedStack {
 public:
  TrackedStack(StackBounds& bounds, std::size_t bytes) : stack_(bytes), bounds_(&bounds) {}
  ctx::stack_context allocate() {
    ctx::stack_context sc = stack_.allocate();
    bounds_->bottom = static_cast<char*>(sc.sp) - sc.size;
    bounds_->size = sc.size;
    return sc;
  }
  void deallocate(ctx::stack_context& sc) noexcept { stack_.deallocate(sc); }

 private:
  ctx::fixedsize_stack stack_;
  StackBounds* bounds_;
};

}  // namespace

struct Scheduler::Thread {
  enum class State : std::uint8_t { runnable, sleeping, blocked, done };
  std::string name;
  std::function<void()> body;
  ctx::fiber fiber;  // the thread, suspended; resumed by the scheduler
  ctx::fiber sink;   // the scheduler, suspended while the thread runs
  State state = State::runnable;
  std::uint64_t generation = 0;
  bool woken = false;
  StackBounds stack;
  void* fake_stack = nullptr;  // the sanitizer's, while the thread is switched out
  bool cancelled = false;      // unwind(): the thread's next yield returns by throwing
  // Skipped: the name and body (fixed), the fibers and stack (the thread's machine state, which
  // its other fields and the loop's state stand for), and generation (bumped at every block, to
  // tell stale resumptions, which the digest leaves out).
  static constexpr loopsim::state::Fields<10> state_fields{
      loopsim::state::skip,  loopsim::state::skip, loopsim::state::skip, loopsim::state::skip,
      loopsim::state::value, loopsim::state::skip, loopsim::state::value, loopsim::state::skip,
      loopsim::state::skip,  loopsim::state::value};
};

namespace {
// Thrown inside a cancelled thread from the call that blocked it, and caught at the bottom of
// its stack, so that the stack unwinds through ordinary C++ exception handling.
struct Cancelled {};
}  // namespace

namespace {
thread_local StackBounds scheduler_stack;  // the scheduler's own stack, learnt at the first switch
}

namespace {
// Same-instant happenings are chosen among the first few in line: a bound on the choice (and
// on the cost of taking one out of the middle), as everything here has one.
constexpr std::uint32_t order_window = 64;
}  // namespace

Scheduler::Scheduler(Chooser* chooser) : chooser_(chooser) {}

std::uint32_t Scheduler::choose(ChoiceKind kind, std::uint32_t options) {
  if (options < 2 || chooser_ == nullptr) return 0;
  std::uint32_t pick = chooser_->choose(kind, options);
  LOOPSIM_ASSERT_OP(pick, <, options);
  return pick;
}

Scheduler::~Scheduler() { unwind(); }

void Scheduler::unwind() {
  LOOPSIM_ASSERT(current_ == no_thread);
  queue_.clear();
  now_batch_.clear();
  for (ThreadId id = 0; id < ThreadId(threads_.size()); ++id) {
    Thread& thread = *threads_[std::size_t(id)];
    if (thread.state == Thread::State::done) continue;
    thread.cancelled = true;
    resume(id);  // its blocking call throws; the stack unwinds; the thread ends
    LOOPSIM_ASSERT(thread.state == Thread::State::done);
  }
}

void Scheduler::push(Entry entry) {
  if (entry.when == now_ && !now_batch_.empty()) {
    now_batch_.push_back(std::move(entry));  // joins the instant being run
    return;
  }
  queue_.push_back(std::move(entry));
  std::push_heap(queue_.begin(), queue_.end(), Later{});
}

bool Scheduler::stale(const Entry& entry) const {
  if (entry.kind == Kind::callback) return false;
  const Thread& thread = *threads_[std::size_t(entry.thread)];
  return thread.state == Thread::State::done || entry.generation != thread.generation;
}

// Moves everything due at the next instant before `until` into now_batch_ (stale resumptions
// dropped), and the clock to it. False when nothing is due before `until`.
bool Scheduler::load_next_instant(Nanos until) {
  while (now_batch_.empty()) {
    if (queue_.empty() || queue_.front().when >= until) return false;
    LOOPSIM_ASSERT_OP(queue_.front().when.count(), >=, now_.count());
    now_ = queue_.front().when;
    while (!queue_.empty() && queue_.front().when == now_) {
      std::pop_heap(queue_.begin(), queue_.end(), Later{});
      if (!stale(queue_.back())) now_batch_.push_back(std::move(queue_.back()));
      queue_.pop_back();
    }
  }
  return true;
}

const char* happening_name(Happening what) {
  switch (what) {
    case Happening::handshake: return "handshake";
    case Happening::delivery: return "delivery";
    case Happening::peer_reset: return "peer_reset";
    case Happening::connect: return "connect";
    case Happening::request_due: return "request_due";
    case Happening::rlimit: return "rlimit";
    case Happening::reset_group: return "reset_group";
    case Happening::post: return "post";
    case Happening::shutdown: return "shutdown";
    case Happening::scripted: return "scripted";
    case Happening::client_read: return "client_read";
    case Happening::network: return "network";
  }
  return "?";
}

// The alternatives are the first few in line, less the twins of one already offered: of each
// class of interchangeable happenings only the first in line is a distinct choice.
Scheduler::Entry Scheduler::take_next() {
  auto window = std::uint32_t(std::min<std::size_t>(now_batch_.size(), order_window));
  std::array<std::uint32_t, order_window> offered;
  std::array<std::uint64_t, order_window> classes;
  std::uint32_t options = 0;
  for (std::uint32_t i = 0; i < window; ++i) {
    const Entry& e = now_batch_[i];
    std::uint64_t twin = twins_ && window > 1 && e.kind == Kind::callback ? twins_(e.tag) : 0;
    bool seen = twin != 0 && std::find(classes.begin(), classes.begin() + options, twin) !=
                                 classes.begin() + options;
    if (seen) continue;
    offered[options] = i;
    classes[options] = twin;
    ++options;
  }
  std::uint32_t at = offered[choose(ChoiceKind::order, options)];
  Entry entry = std::move(now_batch_[at]);
  now_batch_.erase(now_batch_.begin() + at);
  return entry;
}

void Scheduler::at(Nanos when, std::function<void()> callback, Tag tag) {
  LOOPSIM_ASSERT(callback != nullptr);
  push(Entry{std::max(when, now_), seq_++, Kind::callback, no_thread, 0, std::move(callback), tag});
}

ThreadId Scheduler::spawn(std::string name, std::function<void()> body, std::size_t stack_bytes) {
  auto id = ThreadId(threads_.size());
  auto thread = std::make_unique<Thread>();
  thread->name = std::move(name);
  thread->body = std::move(body);
  Thread* self = thread.get();
  thread->fiber = ctx::fiber(std::allocator_arg, TrackedStack(thread->stack, stack_bytes),
                             [self](ctx::fiber&& sink) {
                               finish_switch(nullptr, &scheduler_stack);
                               self->sink = std::move(sink);
                               try {
                                 if (!self->cancelled) self->body();
                               } catch (const Cancelled&) {
                               }
                               self->state = Thread::State::done;
                               start_switch(nullptr, scheduler_stack);  // this stack ends
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
  start_switch(&thread.fake_stack, scheduler_stack);
  thread.sink = std::move(thread.sink).resume();
  finish_switch(thread.fake_stack, &scheduler_stack);
  if (thread.cancelled) throw Cancelled{};
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
  void* fake_stack = nullptr;
  start_switch(&fake_stack, thread.stack);
  thread.fiber = std::move(thread.fiber).resume();
  finish_switch(fake_stack, nullptr);
  current_ = no_thread;
}

bool Scheduler::step(Nanos until) {
  LOOPSIM_ASSERT(current_ == no_thread);
  if (!load_next_instant(until)) return false;
  Entry entry = take_next();
  if (entry.kind == Kind::callback) {
    entry.callback();
  } else if (!stale(entry)) {  // it may have gone stale within this instant
    resume(entry.thread);
  }
  return true;
}

std::uint64_t Scheduler::run_until(Nanos until) {
  std::uint64_t steps = 0;
  while (step(until)) ++steps;
  now_ = std::max(now_, until);
  return steps;
}

void Scheduler::digest(Digest& d) const {
  for (const Entry& e : now_batch_) {
    d.add(std::int64_t(e.kind)).add(e.thread).add(std::int64_t(e.tag.what)).add(std::int64_t(e.tag.subject));
  }
  // In the order they will run (time, then the order they were scheduled in), which the heap's
  // layout does not show.
  std::vector<const Entry*> later;
  for (const Entry& e : queue_) {
    if (!stale(e)) later.push_back(&e);
  }
  std::sort(later.begin(), later.end(), [](const Entry* a, const Entry* b) { return Later{}(*b, *a); });
  d.add(std::int64_t(later.size()));
  for (const Entry* e : later) {
    d.add(e->when - now_).add(std::int64_t(e->kind)).add(e->thread);
    d.add(std::int64_t(e->tag.what)).add(std::int64_t(e->tag.subject));
  }
  for (const auto& thread : threads_) loopsim::state::visit([&d](std::int64_t v) { d.add(v); }, *thread, now_);
}

}  // namespace loopsim::model
