// The event loop under test. Written once, against Kernel, as ordinary blocking code:
//   wait -> drain posts -> handle the pass's events -> serve owed turns -> take batches -> repeat.
// The same code serves real sockets (LinuxKernel) and runs in simulation (SimKernel).
// The rules it follows are R1..R13 in docs/design.md; each has a knob in LoopConfig that turns it off.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/paged.hpp"
#include "realloop/atomic_instant.hpp"
#include "realloop/config.hpp"
#include "realloop/http.hpp"
#include "realloop/kernel.hpp"
#include "realloop/observer.hpp"
#include "realloop/output.hpp"
#include "realloop/state.hpp"

namespace loopsim {

class Loop;
class HandlerPool;
class WorkerGroup;

// R10: the loops of a process of `workers` workers, and which of them opens the listener. When
// several workers share by hand-off (accept_share), one loop accepts: with accept_thread a loop
// of its own, numbered after the workers, that hands every connection over; without, worker 0,
// which serves too. Without hand-offs, or with siblings_watch_listener, the other loops watch
// the same listener and accept from it as well.
struct LoopLayout {
  int loops = 1;               // workers, and the accept thread's loop
  int acceptor = 0;            // the loop that opens the listener
  bool hands_off = false;      // the workers form a WorkerGroup
  bool accept_thread = false;  // `acceptor` is a loop of its own, not a worker
  bool siblings_watch = true;  // the other loops watch the acceptor's listener
  static LoopLayout of(const LoopConfig& config, int workers);
  // Opens `loops` (layout.loops of them, each numbered by its index): the acceptor's listener
  // first, then the others' pollers, watching it or not; with hand-offs the workers form
  // `group`. Returns 0, or -errno with `failed` set to the loop that could not open.
  int open(const std::vector<Loop*>& loops, const ListenSpec& spec, WorkerGroup& group, int& failed) const;
};

// The loops of one process, for accept sharing (R10). Not owned by the loops.
class WorkerGroup {
 public:
  void add(Loop& loop) { loops_.push_back(&loop); }
  std::size_t size() const { return loops_.size(); }
  Loop& at(std::size_t i) const { return *loops_[i]; }
  // The loop to hand the next accepted connection to: round robin over every worker, skipping
  // those busy in one pass for longer than `busy`. `from` itself means: keep it. With `room`,
  // only a worker with room is picked (a busy one before none), and `from` when none has.
  Loop& pick(Loop& from, Instant now, Duration busy, bool room = false);
  // Whether any worker holds fewer than its max_connections, counting hand-offs on their way.
  bool any_room() const;
  // The accept thread's loop, when there is one: told when a worker closes a connection,
  // which frees room and a descriptor.
  void set_acceptor(Loop& acceptor) { acceptor_ = &acceptor; }
  void closed_one();

 private:
  std::vector<Loop*> loops_;
  Loop* acceptor_ = nullptr;
  std::atomic<std::size_t> next_{0};  // every worker's thread picks

 public:
  // Skipped: the loops and the acceptor (digested as the process's own; these are references
  // to them).
  static constexpr auto state_fields = state::fields(
      state::f::skip<&WorkerGroup::loops_>, state::f::skip<&WorkerGroup::acceptor_>,
      state::f::value<&WorkerGroup::next_>);
  friend struct state::Access;
};

class Loop {
 public:
  Loop(Kernel& kernel, LoopConfig config, LoopObserver& observer, int worker = 0);
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;
  ~Loop();

  // Opens the poller and a listener of its own. Returns 0 or -errno.
  int open(const ListenSpec& spec);
  // Opens the poller and watches a sibling's listener (R10); -1: none, the worker takes only
  // hand-offs. Returns 0 or -errno.
  int attach(int listener);
  // R10: hands accepted connections to the group's workers; with `accept_only`, this loop is
  // not one of them and keeps nothing it can hand over.
  void join(WorkerGroup& group, bool accept_only = false) {
    group_ = &group;
    accept_only_ = accept_only;
  }
  void use_pool(HandlerPool& pool) { pool_ = &pool; }
  int listener() const { return listener_; }
  int poller() const { return poller_; }
  int worker() const { return worker_; }

  // Runs passes until stop() is seen or a shutdown has finished. May block.
  void run();
  // One pass: wait, posts, the events, owed turns, then the batches.
  void run_pass();
  // R6, inverted mode: a pass driven by an outside scheduler, with a wait that never blocks;
  // further passes follow while a door is owed, up to max_connections accepts.
  void run_pass_once();
  bool finished() const { return finished_; }

  // Each of these is safe from another thread; stop() also from a signal handler.
  void stop();
  // R5; `asked_at`: when it was asked (the signal's time), from which drain_timeout runs (the
  // loop's own clock when it begins, without).
  void shutdown(std::optional<Instant> asked_at = std::nullopt);
  // R7. `what` describes the callback, for state digests: two posts with equal `what` do the
  // same thing.
  void post(std::function<void()> callback, std::uint64_t what = 0);
  bool offer(int fd);                         // R10: a sibling hands a connection over
  // A reload: what `take_reloadable` lets change of the configuration, applied on this loop's thread
  // (post it). Returns whether anything changed.
  bool reconfigure(const LoopConfig& next);
  const LoopConfig& config() const { return config_; }

  // R11: the pool's answer to a request of connection `fd`; run on this loop, as a post.
  void pool_answer(int fd, std::uint64_t generation, const http::Response& response);

  // R10: inside one pass for longer than `busy` at `now`.
  bool busy(Instant now, Duration busy) const;
  // R10: held and handed over, below max_connections (read from the accepting worker's thread).
  bool has_room() const;
  bool accept_only() const { return accept_only_; }
  // R10: a worker closed a connection; the accept thread, if it waits for one, takes its batch
  // again (room under max_connections, R9) or retries its accept (a descriptor, R4).
  void note_close();

  // Feeds the loop's state to `add` (a digest), times relative to `now`: every field that
  // state_fields (below) does not skip.
  template <class Add>
  void visit_state(Add&& add, Instant now) const;
  // What of this loop other threads write or read without a kernel call: its mailbox (posts,
  // hand-offs), its stop and shutdown requests, and what siblings read of it (whether it is
  // shutting down, since when it is inside a pass). What one thread reads of another's state
  // is part of what it learns (model::Scheduler::learn).
  template <class Add>
  void visit_shared(Add&& add, Instant now) const;

  bool accept_owed() const { return accept_owed_; }
  bool handoff_owed() const { return handoff_owed_; }
  std::size_t connections() const { return connection_count_; }
  std::size_t handoffs_pending();
  std::uint64_t passes() const { return pass_; }
  // R5: connections reset because the drain outlasted drain_timeout.
  int drain_resets() const { return drain_resets_; }
  // R13: the bytes buffered by the connection on `fd` (input and output), for tests.
  std::size_t buffered(int fd);

 private:
  struct Connection {
    bool open = false;
    bool closing = false;     // close once the output is flushed
    bool want_write = false;  // registered for writability
    bool owed_turn = false;   // R8: complete requests wait for its next turn
    bool in_pool = false;     // R11: a request is with the handler pool
    bool answered = false;    // R12: has answered a request (idle since is keep-alive, not head)
    bool input_full = false;  // R13: the last read stopped at max_input, bytes left unread
    // The peer half-closed: no more input comes. Unlike `closing`, the complete requests it sent
    // before are still answered (their turns, R8, and the pool, R11, included), then it closes.
    bool peer_ended = false;
    // RFC 9110 §10.1.1: the request being read asked `Expect: 100-continue`, and 100 Continue
    // (or the final answer) has been queued for it.
    bool continue_sent = false;
    // R14: an event said the peer hung up, and the read has not reached the end of stream yet:
    // a short read does not end the reading.
    bool hangup_told = false;
    // R15: registered with the poller. Not yet while its eager read is served.
    bool watched = false;
    std::uint32_t timer_slot = 0;  // with timer_at: its place in timers_
    std::uint64_t generation = 0;  // bumped at every close: tells reuses of a descriptor apart
    std::string input;
    Output output;
    // R12: when each phase in progress times out (its start plus its timeout; none: not in it),
    // and the deadline this connection's entry in timers_ was filed under (none: no entry). The
    // digest skips timer_at and timer_slot: where the entry is filed is bookkeeping; the
    // phases' deadlines say when the connection times out.
    MaybeInstant head_until;   // from a request's first byte, or the admission
    MaybeInstant body_until;   // from its head's end
    MaybeInstant idle_until;   // from the last answer written, nothing since
    MaybeInstant write_until;  // output waiting: from the last progress
    MaybeInstant timer_at;
    static constexpr auto state_fields = state::fields(
        state::f::value<&Connection::open>, state::f::value<&Connection::closing>,
        state::f::value<&Connection::want_write>, state::f::value<&Connection::owed_turn>,
        state::f::value<&Connection::in_pool>, state::f::value<&Connection::answered>,
        state::f::value<&Connection::input_full>, state::f::value<&Connection::peer_ended>,
        state::f::value<&Connection::continue_sent>, state::f::value<&Connection::hangup_told>,
        state::f::value<&Connection::watched>, state::f::skip<&Connection::timer_slot>,
        state::f::value<&Connection::generation>,
        state::f::value<&Connection::input>, state::f::value<&Connection::output>,
        state::f::deadline<&Connection::head_until>, state::f::deadline<&Connection::body_until>,
        state::f::deadline<&Connection::idle_until>, state::f::deadline<&Connection::write_until>,
        state::f::skip<&Connection::timer_at>);
  };
  enum class Input : std::uint8_t { open, ended, reset, full };
  enum class Timeout : std::uint8_t { head, body, keepalive, write };

  // loop.cpp: the pass
  std::optional<Duration> wait_timeout();
  void dispatch(const PollEvent& event);
  void drain_posts(DrainPoint point);
  void serve_owed_turns();
  void take_batches();
  void begin_shutdown();
  void check_finished();
  // accept.cpp: doors, batches, descriptors and handles (R1-R4, R9, R10)
  int take_batch(Door door);  // returns the connections it took
  int accept_one(Door door);
  bool table_full() const;
  bool draining_gracefully() const;
  bool says_close(std::string_view rest) const;
  // R5: open, nothing to write, no owed turn, nothing with the pool.
  static bool quiet(const Connection& c) { return c.open && c.output.empty() && !c.owed_turn && !c.in_pool; }
  Instant quiet_close_at(const Connection& connection) const;  // R5: answers say close, idle connections get their grace
  bool sharing() const;  // R10: hands accepted connections to siblings
  void note_accept_error();
  bool retry_due();
  void place(int fd);
  void admit(int fd);
  bool watch_connection(int fd, Connection& connection);  // R15; closes it and says false on failure
  // Adds `fd` to the poller's interest set, edge-triggered; the kernel's answer.
  int watch(int fd, std::uint32_t interest);
  // connection.cpp: serving (R8, R11)
  void serve(int fd);
  Input read_input(int fd, Connection& connection);
  bool answer_requests(int fd, Connection& connection);
  void answer_and_flush(int fd, Connection& connection);
  bool serve_parsed(int fd, Connection& connection, std::size_t& consumed);
  void respond(int fd, Connection& connection, const http::Response& response);
  std::string_view date();  // the Date field's value now, or empty
  void flush(int fd, Connection& connection);
  void close_connection(int fd);
  void reset_connection(int fd);  // abortive: the peer sees a reset
  void release(int fd, bool abortive);
  void note_phase(Connection& connection);
  std::size_t input_limit() const;
  bool output_full(const Connection& connection) const;
  // Nothing left to answer: closing, or the peer ended with no complete request waiting.
  bool finished_with(const Connection& connection) const;
  Connection* connection(int fd);
  // timers.cpp: R12
  struct Deadline {
    Instant at;
    Timeout why;
  };
  std::optional<Deadline> deadline_of(const Connection& connection) const;
  void arm_timer(int fd, Connection& connection);
  void drop_timer(int fd, Connection& connection);
  void expire_timers();
  void expire(int fd, Connection& connection, Timeout why);
  void expire_drain();
  // timers_ as a heap: whether a's entry comes before b's, and the moves that keep its order.
  bool timer_before(int a, int b) const;
  void timer_place(std::size_t slot, int fd);
  void timer_up(std::size_t slot);
  void timer_down(std::size_t slot);
  void timer_take(std::size_t slot);

  Kernel& kernel_;
  LoopConfig config_;
  LoopObserver& observer_;
  int worker_;
  WorkerGroup* group_ = nullptr;
  bool accept_only_ = false;  // R10: the accept thread's loop
  HandlerPool* pool_ = nullptr;
  int poller_ = -1;
  int listener_ = -1;
  bool owns_listener_ = false;
  bool listener_closed_ = false;
  int wake_ = -1;  // signalled by stop, shutdown, post and offer

  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> shutdown_requested_{false};
  AtomicInstant shutdown_asked_;  // R5: when, in the kernel's time (none: not given)
  AtomicInstant pass_started_;    // none: waiting, not inside a pass
  // R10: the accept thread stopped its batch because no worker had room (R9), or because the
  // process ran out of descriptors (R4), and waits for a worker's close to tell it (the worker
  // clears the flag). It frees neither itself.
  std::atomic<bool> awaits_close_{false};
  std::mutex mailbox_;  // guards posts_ and handoffs_
  struct Post {
    std::function<void()> run;
    std::uint64_t what;  // what `run` does (post's argument)
    static constexpr auto state_fields = state::fields(state::f::skip<&Post::run>, state::f::value<&Post::what>);
  };
  std::deque<Post> posts_;
  std::deque<int> handoffs_;

  bool stopping_ = false;
  // Written by this loop's thread under mailbox_ (offer reads it there, from siblings').
  bool shutting_down_ = false;
  bool finished_ = false;
  bool listener_ready_ = false;  // the listener announced itself in this pass
  bool accept_owed_ = false;     // R2
  bool handoff_owed_ = false;    // R2, for the hand-off door
  bool accept_blocked_ = false;  // R4: EMFILE/ENFILE; retry on a freed descriptor or back-off
  bool retry_now_ = false;       // R4: a descriptor was freed since
  Instant retry_at_;             // R4: the back-off's end
  bool backpressured_ = false;   // R9: accepting held back until room frees
  bool draining_ = false;        // R5: the shutdown is taking the whole accept queue
  // R5: the shutdown is admitting what siblings handed over, past capacity. Its own flag: a
  // worker served only by hand-offs has no listener whose close would end it.
  bool admitting_handoffs_ = false;
  // R5: between the shutdown's first accept and the listener's close no handler runs, so no
  // time passes in which connections could queue only to be reset by the close; what was
  // admitted meanwhile is served after it (begin_shutdown).
  bool deferring_ = false;
  std::vector<int> deferred_;
  std::uint64_t pass_ = 0;
  std::size_t connection_count_ = 0;
  // R10: connection_count_ plus the hand-offs in the mailbox, for the accepting sibling to read.
  std::atomic<std::int64_t> load_{0};
  std::size_t handle_capacity_ = 0;  // R9, in connections (two handles each); 0: unbounded
  std::uint64_t inverted_accepts_ = 0;
  base::Paged<Connection> connections_;  // indexed by descriptor
  std::deque<int> owed_turns_;           // R8: connections with complete requests left
  std::vector<PollEvent> events_;
  // One past the highest descriptor this loop has watched: its poller's interest set holds at
  // most this many, and so does a wait's answer. A wait's room is no larger (run_pass), so a
  // search's snapshots of the loop do not carry max_events of unused room.
  std::size_t watch_span_ = 0;
  // R12: at most one entry per connection, by (deadline, descriptor), earliest first. Filed
  // lazily: an entry may be earlier than the connection's deadline now; it is then filed again.
  // A binary heap of descriptors, each connection's timer_at its key and timer_slot its place:
  // four bytes a connection, where a std::set's node took 48.
  std::vector<int> timers_;
  std::optional<Instant> drain_until_;  // R5: when the shutdown's drain_timeout runs out (none: no shutdown yet)
  int drain_resets_ = 0;   // R5: connections reset because the drain ran out of time
  // R5: the end of the drain's grace, before which nothing quiet closes, and when the drain
  // began (none: no shutdown yet).
  std::optional<Instant> idle_close_at_;
  std::optional<Instant> drain_began_;
  // The Date field, made once a second: the calendar second it was made for (none: not yet, or
  // the kernel keeps no calendar) and its text.
  struct DateCache {
    std::optional<std::int64_t> second;
    std::array<char, 29> text{};
  } date_;
  // A reload's mark: 0 until a reload changed the configuration, then its reloadable_key. The
  // configuration is fixed for a run but for what a reload changes, and this says what it did.
  std::uint64_t reload_key_ = 0;

 public:
  // The state, field by field (realloop/state.hpp). Skipped: the kernel, observer, group and
  // pool (collaborators), the configuration (fixed for a run), the mailbox's lock, load_
  // (derived: the held count and the mailbox's size), the pass counter (so that an idle loop's
  // passes look alike), events_ (scratch, filled by each wait before it is read) and its room
  // (watch_span_, which changes how much of it a wait may fill, never what a wait returns),
  // timers_ (derived: each connection's timer_at) and the Date cache (derived from the kernel's
  // calendar, which a simulated kernel does not keep). Posts are callbacks: each is digested by
  // what it does (Post::what).
  static constexpr auto state_fields = state::fields(
      state::f::reference("kernel_"), state::f::skip<&Loop::config_>, state::f::reference("observer_"),
      state::f::value<&Loop::worker_>, state::f::skip<&Loop::group_>, state::f::skip<&Loop::accept_only_>,
      state::f::skip<&Loop::pool_>, state::f::value<&Loop::poller_>, state::f::value<&Loop::listener_>,
      state::f::value<&Loop::owns_listener_>, state::f::value<&Loop::listener_closed_>, state::f::value<&Loop::wake_>,
      state::f::value<&Loop::stop_requested_>, state::f::value<&Loop::shutdown_requested_>,
      state::f::since<&Loop::shutdown_asked_>, state::f::since<&Loop::pass_started_>,
      state::f::value<&Loop::awaits_close_>, state::f::skip<&Loop::mailbox_>, state::f::value<&Loop::posts_>,
      state::f::value<&Loop::handoffs_>, state::f::value<&Loop::stopping_>, state::f::value<&Loop::shutting_down_>,
      state::f::value<&Loop::finished_>, state::f::value<&Loop::listener_ready_>, state::f::value<&Loop::accept_owed_>,
      state::f::value<&Loop::handoff_owed_>, state::f::value<&Loop::accept_blocked_>,
      state::f::value<&Loop::retry_now_>, state::f::until<&Loop::retry_at_>, state::f::value<&Loop::backpressured_>,
      state::f::value<&Loop::draining_>, state::f::value<&Loop::admitting_handoffs_>,
      state::f::value<&Loop::deferring_>, state::f::value<&Loop::deferred_>, state::f::skip<&Loop::pass_>,
      state::f::value<&Loop::connection_count_>, state::f::skip<&Loop::load_>, state::f::value<&Loop::handle_capacity_>,
      state::f::value<&Loop::inverted_accepts_>, state::f::value<&Loop::connections_>,
      state::f::value<&Loop::owed_turns_>, state::f::skip<&Loop::events_>, state::f::skip<&Loop::watch_span_>, state::f::skip<&Loop::timers_>,
      state::f::deadline<&Loop::drain_until_>, state::f::value<&Loop::drain_resets_>,
      state::f::deadline<&Loop::idle_close_at_>, state::f::since<&Loop::drain_began_>, state::f::skip<&Loop::date_>,
      state::f::value<&Loop::reload_key_>);
  friend struct state::Access;
};

template <class Add>
void Loop::visit_state(Add&& add, Instant now) const {
  state::visit(add, *this, now);
}

template <class Add>
void Loop::visit_shared(Add&& add, Instant now) const {
  add(std::int64_t(posts_.size()));
  for (const Post& post : posts_) add(std::int64_t(post.what));
  add(std::int64_t(handoffs_.size()));
  for (int fd : handoffs_) add(fd);
  add(std::int64_t(stop_requested_.load(std::memory_order_acquire)));
  add(std::int64_t(shutdown_requested_.load(std::memory_order_acquire)));
  add(std::int64_t(shutting_down_));
  add(std::int64_t(awaits_close_.load()));
  const std::optional<Instant> started = pass_started_.load();
  add(started ? (now - *started).count() : -1);
}

}  // namespace loopsim
