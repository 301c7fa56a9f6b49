// Virtual time and the simulated threads that live in it (K1).
//
// A simulated thread is a fiber (Boost.Context). It runs until it blocks or spends time, then
// yields to the scheduler, which runs whatever is next in virtual time: a thread's resumption
// or a callback (client agents, deliveries, timers). Time moves only when every simulated
// thread is blocked or spending. One OS thread, no wall clock: given the same calls, the same
// order, always.
#pragma once

#include <boost/context/fiber.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/choice.hpp"
#include "realloop/kernel.hpp"

namespace loopsim::model {

using ThreadId = int;
inline constexpr ThreadId no_thread = -1;

// What a scheduled callback does. Every kind of callback has its own, so that state digests tell
// pending work apart, and so that symmetry can tell which pending happenings are twins.
enum class Happening : std::uint8_t {
  handshake,    // kernel: a SYN reaches the listener (or its retransmission does)
  delivery,     // kernel: the server's bytes reach the client
  peer_reset,   // kernel: the client hears of a reset
  connect,      // client: a client opens its connection
  request_due,  // client: a request's time has come
  rlimit,       // fault: the descriptor limit changes
  reset_group,  // fault: clients of a group reset their connections
  post,         // poster: a foreign thread posts to a loop
  shutdown,     // action: the process begins its graceful shutdown
  scripted,     // a test's own callback
  client_read,  // client: a slow reader takes its next share of what waits for it
  network,      // client: something on its way across a delaying network arrives
};
const char* happening_name(Happening what);

struct Tag {
  Happening what;
  std::uint32_t subject = 0;  // the connection, client, fault, poster or action it is about
};
// A tag for a connection or a client by its number (which a run keeps below 2^32).
constexpr Tag tag(Happening what, std::uint64_t subject) { return Tag{what, static_cast<std::uint32_t>(subject)}; }

// Symmetry: the class of interchangeable happenings a pending callback belongs to, or 0 when it
// has no twin. Two same-instant happenings of one class lead to states that differ only by a
// renaming of identical clients, so the order between them is not a choice worth exploring.
using TwinClass = std::function<std::uint64_t(const Tag&)>;

class Scheduler {
 public:
  // Same-instant happenings run in the order `chooser` picks (a choice point of kind `order`);
  // without one, in the order they were scheduled.
  explicit Scheduler(Chooser* chooser = nullptr);
  void set_chooser(Chooser* chooser) { chooser_ = chooser; }
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;
  // Threads still blocked are unwound (their stacks' destructors run).
  ~Scheduler();

  Nanos now() const { return now_; }

  // Runs `callback` on the scheduler's own stack at `when` (never earlier than now). Callbacks
  // must not block.
  // `tag` says what the callback does and to what.
  void at(Nanos when, std::function<void()> callback, Tag tag);
  // With twins known, same-instant happenings of one class count as one alternative of an
  // `order` choice (its first in line runs).
  void set_twins(TwinClass twins) { twins_ = std::move(twins); }

  // Starts a simulated thread that runs `body` from now, on a stack of `stack_bytes`.
  static constexpr std::size_t default_stack = 256 * 1024;
  ThreadId spawn(std::string name, std::function<void()> body, std::size_t stack_bytes = default_stack);

  // The simulated thread now running, or no_thread on the scheduler's stack.
  ThreadId current() const { return current_; }

  // From a simulated thread: resumes at `when`. The thread counts as busy until then.
  void sleep_until(Nanos when);
  // From a simulated thread: blocks until wake() or `deadline` (wait_forever: none). Returns
  // true when woken, false on the deadline.
  bool block(Nanos deadline);
  // Resumes a blocked thread now. A thread that is not blocked is left alone.
  void wake(ThreadId thread);

  // Runs everything scheduled before `until` in time order, then sets the clock to `until`.
  // Returns the number of steps taken.
  std::uint64_t run_until(Nanos until);
  // Runs the next thing scheduled before `until`; false when there is none.
  bool step(Nanos until);
  // Pending work, times relative to now, and each thread's state.
  void digest(class Digest& digest) const;
  // True when nothing is scheduled.
  bool idle() const { return queue_.empty() && now_batch_.empty(); }
  // A choice point: one of `options` alternatives, 0 being the natural one. Asks the chooser
  // only when there is something to choose.
  std::uint32_t choose(ChoiceKind kind, std::uint32_t options);
  bool finished(ThreadId thread) const;
  // Unwinds every thread that has not finished: its stack's destructors run now, while what
  // they refer to still exists. Nothing is resumed after it.
  void unwind();

 private:
  struct Thread;
  enum class Kind : std::uint8_t { callback, resume };
  struct Entry {
    Nanos when;
    std::uint64_t seq;
    Kind kind;
    ThreadId thread;
    std::uint64_t generation;  // a resume is stale once the thread moved on
    std::function<void()> callback;
    Tag tag{Happening::scripted, 0};
  };
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const {
      return a.when != b.when ? a.when > b.when : a.seq > b.seq;
    }
  };

  void push(Entry entry);
  bool load_next_instant(Nanos until);
  Entry take_next();
  bool stale(const Entry& entry) const;
  void resume(ThreadId thread);
  void yield(Thread& thread);

  Nanos now_{0};
  std::uint64_t seq_ = 0;
  ThreadId current_ = no_thread;
  Chooser* chooser_;
  TwinClass twins_;
  std::vector<Entry> queue_;      // later instants: a binary heap ordered by Later
  std::deque<Entry> now_batch_;   // what is due at now_, in the order it was scheduled
  std::vector<std::unique_ptr<Thread>> threads_;
};

}  // namespace loopsim::model
