// A simulated thread as the scheduler keeps it (model/scheduler.cpp), in a header of its own so
// that the digest completeness test (sim/state_digest_test.cpp) can check its declaration.
// Nothing but the scheduler and that test includes it.
#pragma once

#include <boost/context/fiber.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "model/scheduler.hpp"
#include "realloop/state.hpp"

namespace loopsim::model {

// AddressSanitizer must be told of every switch between stacks, or it takes a fiber's stack
// for a stack overflow and an unwinding exception for a jump into the unknown. ThreadSanitizer
// must be too, with a fiber of its own for each stack, or it mixes their call stacks and their
// clocks.
struct StackBounds {
  const void* bottom = nullptr;
  std::size_t size = 0;
  void* tsan_fiber = nullptr;  // ThreadSanitizer's handle for this stack (its builds only)
};

struct Scheduler::Thread {
  enum class State : std::uint8_t { runnable, sleeping, blocked, done };
  std::string name;
  std::function<void()> body;
  boost::context::fiber fiber;  // the thread, suspended; resumed by the scheduler
  boost::context::fiber sink;   // the scheduler, suspended while the thread runs
  State state = State::runnable;
  std::uint64_t generation = 0;
  bool woken = false;
  StackBounds stack;
  void* fake_stack = nullptr;  // the sanitizer's, while the thread is switched out
  bool cancelled = false;      // unwind(): the thread's next yield returns by throwing
  // What it learnt since its last rest point (Scheduler::rest), and whether it is at one now.
  std::uint64_t context = 0;
  bool resting = false;
  Instant rest_at{};
  Instant resume_at{};  // sleeping: until when
  // Decisions taken inside the kernel call it is making (a fault's, a slack's), so that two in
  // one call are two states.
  std::uint32_t in_call = 0;
  // Blocked with a deadline: its resumption at the deadline is in the queue, and goes stale if
  // the thread is woken first (Scheduler::wake counts it for purge_stale).
  bool deadline_queued = false;
  // Skipped: the name and body (fixed), the fibers and stack (the thread's machine state, which
  // its context and its owner's declared state stand for), generation (bumped at every block,
  // to tell stale resumptions, which the digest leaves out), and rest_at, when it last left its
  // rest point (the context holds times relative to it), and resume_at (its pending resumption,
  // which the pending work's digest holds relative to now), and deadline_queued (bookkeeping of
  // the queue's stale entries, which no digest sees).
  static constexpr auto state_fields = loopsim::state::fields(
      loopsim::state::f::skip<&Thread::name>, loopsim::state::f::skip<&Thread::body>,
      loopsim::state::f::skip<&Thread::fiber>, loopsim::state::f::skip<&Thread::sink>,
      loopsim::state::f::value<&Thread::state>, loopsim::state::f::skip<&Thread::generation>,
      loopsim::state::f::value<&Thread::woken>, loopsim::state::f::skip<&Thread::stack>,
      loopsim::state::f::skip<&Thread::fake_stack>, loopsim::state::f::value<&Thread::cancelled>,
      loopsim::state::f::value<&Thread::context>, loopsim::state::f::value<&Thread::resting>,
      loopsim::state::f::skip<&Thread::rest_at>, loopsim::state::f::skip<&Thread::resume_at>,
      loopsim::state::f::value<&Thread::in_call>, loopsim::state::f::skip<&Thread::deadline_queued>);
};

}  // namespace loopsim::model
