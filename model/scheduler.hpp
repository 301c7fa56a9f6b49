// Virtual time and the simulated threads that live in it (K1).
//
// A simulated thread is a fiber (Boost.Context). It runs until it blocks or spends time, then
// yields to the scheduler, which runs whatever is next in virtual time: a thread's resumption
// or a callback (client agents, deliveries, timers). Time moves only when every simulated
// thread is blocked or spending. One OS thread, no wall clock: given the same calls, the same
// order, always.
//
// Windowed happenings (model/window.hpp). A run that draws its instants from the seed schedules
// each at its drawn instant. A run whose chooser explores windows (Chooser::explores_windows)
// offers each one every placement the server can tell apart, as choices of kind `land`:
// - at the window's start, in its place among that instant's happenings: land now, or later;
// - once deferred it is open, and may land before any later step of the scheduler (at any
//   instant until the window's end: whenever something else happens, or just before time
//   moves on) and at any kernel call a simulated thread makes (call_point), without moving
//   virtual time;
// - at the window's end, if it has not landed yet, it lands.
// Interchangeable open happenings (twins, below) are one alternative: of each class the one
// whose window ends first lands.
#pragma once

#include <boost/context/fiber.hpp>
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/choice.hpp"
#include "model/window.hpp"
#include "realloop/kernel.hpp"
#include "realloop/state.hpp"

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
  accept_fault, // fault: an accept_error fault's window of failing accepts opens
  timer,        // target: its interval timer (alarm, setitimer) runs out
};
const char* happening_name(Happening what);

struct Tag {
  Happening what;
  std::uint32_t subject = 0;  // the connection, client, fault, poster or action it is about
  // What the callback carries beyond its kind and subject (a network happening's message, a
  // post's number): two pending happenings with equal tags do the same thing.
  std::uint64_t detail = 0;
};
// A tag for a connection or a client by its number (which a run keeps below 2^32).
constexpr Tag tag(Happening what, std::uint64_t subject, std::uint64_t detail = 0) {
  return Tag{what, static_cast<std::uint32_t>(subject), detail};
}

// A kernel call a simulated thread is about to make, as far as landings care (call_point).
struct Call {
  enum class Kind : std::uint8_t {
    other,      // anything not below: every landing may interfere with it
    accept, wait, watch, read, write, close, shutdown, spend, wake_signal, wake_drain,
    allocate,   // a call that takes a descriptor (listen, a poller, a wake object, a pipe, a file)
  };
  Kind kind = Kind::other;
  int fd = -1;
};

// Whether pending happening `what`, landing just before call `call`, would have the same effect
// as landing just after it (and after whatever the thread does up to its next call): then the
// call point need not offer it, as the next one will. Must answer false when unsure.
using Commutes = std::function<bool(const Tag& what, const Call& call)>;

// Symmetry: the class of interchangeable happenings a pending callback belongs to, or 0 when it
// has no twin. Two same-instant happenings of one class lead to states that differ only by a
// renaming of identical clients, so the order between them is not a choice worth exploring.
// `own` is what Scheduler::pending_about counts for the happening itself: twins are alike in
// everything else pending for them.
using TwinClass = std::function<std::uint64_t(const Tag&, std::uint64_t own)>;
// A cheap necessary condition for two happenings to be twins: happenings of different keys are
// never of one class, and a key of 0 has no twin. The class, a digest of the clients' whole
// states, is computed only where two same-instant happenings share a key, so that a large
// instant of happenings about clients that differ costs a key each rather than a digest each.
// A `lasting` key is kept with its happening until the key epoch (TwinKeyEpoch) moves, so that
// an instant of n happenings costs n keys, not one per happening per step. A key that depends
// on anything the epoch does not count must not be lasting.
struct TwinKeyed {
  std::uint64_t key = 0;
  bool lasting = false;
};
using TwinKey = std::function<TwinKeyed(const Tag&)>;
// Moves whenever a lasting key may have changed; never 0 (without one, no key is kept).
using TwinKeyEpoch = std::function<std::uint64_t()>;

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

  Instant now() const { return now_; }
  // The world changes only inside a step (callbacks and threads run nowhere else), and a
  // decision is a pause inside one. So the epoch moves on where the world leaves a pause, and
  // nowhere else: as a step begins, and as a decision returns (run_until moves the clock only
  // after a step has begun). A digest taken at one epoch describes the world until the next. Nothing keys a state by a kept
  // digest (sim::World digests afresh each time it is asked): the epoch tells the audit and a
  // replay's check whether the digest kept is this pause's, and each compares it with a fresh walk.
  std::uint64_t epoch() const { return epoch_; }

  // Runs `callback` on the scheduler's own stack at `when` (never earlier than now). Callbacks
  // must not block.
  // `tag` says what the callback does and to what.
  void at(Instant when, std::function<void()> callback, Tag tag);
  // Room for `count` more happenings to come, made at once: a world that schedules a hundred
  // thousand connects up front holds no growth slack, and no old and new queue side by side.
  // With room to spare for what comes beside them (the threads' first resumes, timers), lest
  // the first of those double the queue: as many again, up to expected_spare. The spare is
  // bounded by the count because a search copies the whole queue, spare room included, into
  // every snapshot.
  void expect_happenings(std::size_t count) {
    queue_.reserve(queue_.size() + count + std::min(count, expected_spare));
  }
  static constexpr std::size_t expected_spare = 1024;
  // Entries the queue has room for without growing. As happenings are taken, a queue left
  // three-quarters empty gives half its room back (give_back_room): the room made for a
  // hundred thousand connects is not kept beside the connections they made.
  std::size_t queue_room() const { return queue_.capacity(); }
  // Entries in the queue of later instants, stale resumptions among them: never more stale
  // than live ones, once there are stale_purge_floor of them (purge_stale).
  std::size_t queued() const { return queue_.size(); }
  static constexpr std::size_t stale_purge_floor = 1024;
  // A windowed happening: at `drawn` (an instant of `window`) unless windows are explored, in
  // which case it is offered every placement in the window (see the top of this file).
  void at(const Window& window, Instant drawn, std::function<void()> callback, Tag tag);
  // Whether windowed happenings are explored (choices of kind `land`) rather than drawn. Set
  // before anything is scheduled.
  void explore_windows(bool on) { explore_windows_ = on; }
  bool windows_explored() const { return explore_windows_; }
  // With twins known, same-instant happenings of one class count as one alternative of an
  // `order` choice (its first in line runs), and of open windows of one class the one that ends
  // first is the alternative.
  // `key` (optional) spares the classes of happenings that share no key (TwinKey); `epoch`
  // (optional) lets lasting keys be kept.
  void set_twins(TwinClass twins, TwinKey key = {}, TwinKeyEpoch epoch = {}) {
    twins_ = std::move(twins);
    twin_key_ = std::move(key);
    twin_key_epoch_ = std::move(epoch);
  }
  // What is pending about a client (Name::client) or a connection (Name::conn): a multiset's
  // digest of its happenings (kind, detail, instants), kept as they come and go.
  std::uint64_t pending_about(loopsim::state::Name kind, std::uint32_t subject) const;

  // Starts a simulated thread that runs `body` from now, on a stack of `stack_bytes`.
  static constexpr std::size_t default_stack = 256 * 1024;
  ThreadId spawn(std::string name, std::function<void()> body, std::size_t stack_bytes = default_stack);

  // The simulated thread now running, or no_thread on the scheduler's stack.
  ThreadId current() const { return current_; }

  // From a simulated thread: resumes at `when`. The thread counts as busy until then.
  void sleep_until(Instant when);
  // From a simulated thread: blocks until wake() or `deadline` (none, wait_forever: until
  // woken). Returns true when woken, false on the deadline.
  bool block(std::optional<Instant> deadline);
  // Resumes a blocked thread now. A thread that is not blocked is left alone.
  void wake(ThreadId thread);

  // ---- what a simulated thread knows (its context) ----
  //
  // A thread's state is its code's declared state (digested by its owner) plus what its stack
  // holds: where it is and what its locals say. The stack is not digested. Instead each thread
  // has a context: a digest of everything it learnt since its last rest point, the place where
  // its locals hold nothing that its declared state does not. Since the thread's code is
  // deterministic, equal declared states and equal contexts are equal threads.
  //
  // A rest point: the thread is at `site` (where it called from) with nothing on its stack but
  // what its declared state says. The kernel calls it at the top of every wait.
  void rest(std::uint64_t site);
  // What the running thread learnt: a kernel call's result, folded into its context with what
  // it may read that others write (shared_inputs). Ignored outside a thread and while a
  // happening lands inside a call.
  void learn(std::uint64_t what);
  // The running thread leaves its rest point (its wait returned): nothing it holds is older.
  void leave_rest();
  // Virtual time since the running thread last left its rest point: how a thread learns the
  // time. (Since it left it, not since it came: the time it waited there is nowhere on its
  // stack, so two threads woken at one instant know the same, however long each waited.)
  Duration since_rest() const;
  // What the threads may read without a kernel call that others (threads, callbacks) write: a
  // loop's mailbox, its shutdown flag. Digested into the context at every call's return.
  void set_shared_inputs(std::function<std::uint64_t()> shared) { shared_ = std::move(shared); }
  // No digest of this run's states will be taken (a run that looks for no cycle): what a thread
  // learnt is not folded into its context, which only a digest reads. Its kernel need not work
  // out what was learnt either (digesting()).
  void digests_unused() {
    digesting_ = false;
    shared_ = {};
  }
  bool digesting() const { return digesting_; }

  // A kernel call begins, made by the running thread: open windowed happenings may land here
  // (choices of kind `land`), before the call goes on, without moving virtual time. (A landing
  // connection's SYN completes its handshake in the same step: SimKernel::arrive.) One that
  // commutes with the call (set_commutes) is not offered here: landing here or at the next
  // call point (or the scheduler's next step) reaches the same state.
  void call_point(const Call& call = {});
  void set_commutes(Commutes commutes) { commutes_ = std::move(commutes); }

  // Runs everything scheduled before `until` in time order, then sets the clock to `until`.
  // Returns the number of steps taken.
  std::uint64_t run_until(Instant until);
  // Runs the next thing scheduled before `until`; false when there is none.
  bool step(Instant until);
  // Pending work, times relative to now, and each thread's state. With canonical names, a
  // happening about a client or a connection is digested under that one's canonical name.
  void digest(class Digest& digest) const;
  void digest_state(loopsim::state::Sink& sink, Instant now) const;
  // True when nothing is scheduled.
  bool idle() const { return queue_.empty() && now_batch_.empty() && open_.empty(); }
  // A choice point: one of `options` alternatives, 0 being the natural one. Asks the chooser
  // only when there is something to choose. A decision taken inside a thread is part of what
  // the thread knows (its context).
  std::uint32_t choose(ChoiceKind kind, std::uint32_t options);
  bool finished(ThreadId thread) const;
  // Whether `thread` may run at this instant without time moving: started and not yet run,
  // woken, or sleeping until now. (The running thread is not due: it runs.)
  bool due_now(ThreadId thread) const;
  // Every thread not finished is blocked at a rest point: nothing lives on any stack.
  bool at_rest() const;
  // Windowed happenings still open (deferred past their start and not landed).
  std::size_t open_windows() const { return open_.size(); }
  // Unwinds every thread that has not finished: its stack's destructors run now, while what
  // they refer to still exists. Nothing is resumed after it, and nothing is scheduled: a
  // happening the unwinding stacks or the worlds' destructors schedule (a loop closing its
  // connections schedules their deliveries) would never run, and is dropped, not kept.
  void unwind();

  // A simulated thread's record, defined in model/scheduler_thread.hpp.
  struct Thread;

 private:
  enum class Kind : std::uint8_t { callback, resume, deadline };
  struct Entry {
    Instant when;
    std::uint64_t seq;
    Kind kind;
    ThreadId thread;
    std::uint64_t generation;  // a resume is stale once the thread moved on
    std::function<void()> callback;
    Tag tag{Happening::scripted, 0};
    // A windowed happening (0: none): its number, and its window's end.
    std::uint64_t window = 0;
    Instant window_end{};
    // Its twin key, kept while the key epoch is `key_epoch` (0: none kept). Derived from the
    // world, never digested: a kept key is the key a fresh one would be.
    mutable std::uint64_t key = 0;
    mutable std::uint64_t key_epoch = 0;
    // In now_batch_, with its lasting key counted in batch_keys_ (at batch_keys_epoch_).
    bool filed = false;
  };
  // The happenings due now, in line: the entries stay where they were put (in a slab whose
  // freed places are reused), and only their places move when one is taken from the middle.
  class Batch {
   public:
    std::size_t size() const { return order_.size(); }
    bool empty() const { return order_.empty(); }
    Entry& operator[](std::size_t i) { return slab_[order_[i]]; }
    const Entry& operator[](std::size_t i) const { return slab_[order_[i]]; }
    void push_back(Entry entry) {
      if (free_.empty()) {
        order_.push_back(std::uint32_t(slab_.size()));
        slab_.push_back(std::move(entry));
      } else {
        order_.push_back(free_.back());
        free_.pop_back();
        slab_[order_.back()] = std::move(entry);
      }
    }
    Entry take(std::size_t i) {
      const std::uint32_t place = order_[i];
      Entry entry = std::move(slab_[place]);
      slab_[place].callback = nullptr;
      free_.push_back(place);
      order_.erase(order_.begin() + std::ptrdiff_t(i));
      if (order_.empty()) {
        slab_.clear();  // every place is free: start again from the first
        free_.clear();
      }
      return entry;
    }
    void clear() {
      slab_.clear();
      free_.clear();
      order_.clear();
    }
    template <class B, class E>
    struct Iterator {
      B* batch;
      std::size_t i;
      E& operator*() const { return (*batch)[i]; }
      E* operator->() const { return &(*batch)[i]; }
      Iterator& operator++() {
        ++i;
        return *this;
      }
      bool operator==(const Iterator& o) const { return i == o.i; }
    };
    Iterator<Batch, Entry> begin() { return {this, 0}; }
    Iterator<Batch, Entry> end() { return {this, size()}; }
    Iterator<const Batch, const Entry> begin() const { return {this, 0}; }
    Iterator<const Batch, const Entry> end() const { return {this, size()}; }

   private:
    std::vector<Entry> slab_;
    std::vector<std::uint32_t> free_;   // places of slab_ no entry holds
    std::vector<std::uint32_t> order_;  // the entries' places, in line
  };
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const {
      return a.when != b.when ? a.when > b.when : a.seq > b.seq;
    }
  };
  // The alternatives of a choice among happenings: of each twin class, one entry.
  struct Alternative {
    std::uint32_t index;  // into the list the alternatives were drawn from
    std::uint64_t twin;
  };

  void push(Entry entry);
  bool load_next_instant(Instant until);
  Entry take_next();
  bool stale(const Entry& entry) const;
  void drop_stale_heads();
  void give_back_room();
  void purge_stale();
  // Stale resumptions left in queue_ by threads woken before their deadline (a count that
  // errs low, never high: purge_stale's trigger).
  std::size_t stale_queued_ = 0;
  void drop_stale_now();
  // now_batch_'s one way in and one way out, which keep non_callbacks_now_.
  void add_to_batch(Entry entry);
  Entry take_from_batch(std::uint32_t at);
  void resume(ThreadId thread);
  void yield(Thread& thread);
  void run_entry(Entry& entry);
  // A window entry taken at its start: lands now, or opens until its end.
  void window_start(Entry& entry);
  // The open windows' alternatives, one per twin class (the earliest end of each); at a call
  // point, those that do not commute with the call.
  std::vector<Alternative> landing_alternatives(const Call* call = nullptr) const;
  // Whether a same-instant happening may have a twin: false when no two callbacks of now_batch_
  // share a twin key. Lasting keys are kept counted as entries come and go (batch_keys_), so a
  // step keys only its newcomers and those whose keys do not last. True sends take_next to
  // twin_classes, which decides.
  bool batch_may_have_twins();
  void file_key(const Entry& e);
  void unfile_key(const Entry& e);
  void refile_batch(std::uint64_t epoch);
  struct BatchKey;
  BatchKey& batch_key(std::uint64_t key);
  // The twin classes of `entries` (0: none), each computed only where its key is shared.
  // True if any entry has a twin among them.
  template <class Entries>
  bool twin_classes(const Entries& entries, std::vector<std::uint64_t>& out, bool at_instant) const;
  // An entry's twin key, kept or taken afresh (at key epoch `epoch`, 0: none).
  std::uint64_t twin_key_of(const Entry& e, std::uint64_t epoch) const;
  // Offers the open windows a landing; true if one landed.
  bool offer_landing();
  // Lands open window `index` inside a call: it and what it schedules for now run at once.
  void land_inside(std::size_t index);
  // With `clamp`, a window's end at or past its horizon is fed as state::beyond, and said so.
  std::uint64_t entry_digest(const Entry& e, const loopsim::state::Names* names,
                             loopsim::state::Sink* clamp = nullptr) const;
  // pending_about's part for one entry, and its bookkeeping as entries come and go.
  static std::uint64_t pending_part(const Entry& e);
  void came(const Entry& e);
  void went(const Entry& e);

  Instant now_{};
  std::uint64_t epoch_ = 0;
  std::uint64_t seq_ = 0;
  ThreadId current_ = no_thread;
  bool unwound_ = false;  // unwind() has begun: push() drops what comes
  Chooser* chooser_;
  TwinClass twins_;
  TwinKey twin_key_;
  TwinKeyEpoch twin_key_epoch_;
  mutable std::uint64_t kept_keys_used_ = 0;
  mutable std::vector<std::pair<std::uint64_t, std::size_t>> keys_;  // twin_classes' scratch
  struct KeySlot {
    std::uint64_t key = 0;
    std::uint32_t count = 0;
    std::uint64_t round = 0;  // the twin_classes call that filled it
  };
  mutable std::vector<KeySlot> key_slots_;
  mutable std::uint64_t key_round_ = 0;
  std::vector<Alternative> offered_;  // take_next's scratch
  mutable std::vector<std::uint64_t> classes_;
  Commutes commutes_;
  std::function<std::uint64_t()> shared_;
  bool digesting_ = true;
  // pending_about's sums, by kind, then subject (a client's index, a connection's id: dense).
  std::array<std::vector<std::uint64_t>, 2> pending_;
  std::uint64_t& pending_sum(loopsim::state::Name kind, std::uint32_t subject);
  bool explore_windows_ = false;
  bool landing_ = false;          // a happening lands inside a call
  // seq_ + 1 when the last instant before `until` was left with its open windows offered a
  // landing and declined (0: none): a run that ends there, with nothing queued since, is not
  // asked again (World::finish steps once more), or the second question, in the same state,
  // would be a revisit to a search, which then never reaches the run's end. Not digested: no
  // decision follows it.
  std::uint64_t declined_at_end_ = 0;
  std::uint64_t windows_ = 0;     // windowed happenings numbered so far
  std::vector<Entry> queue_;      // later instants: a binary heap ordered by Later
  Batch now_batch_;   // what is due at now_, in the order it was scheduled
  std::size_t non_callbacks_now_ = 0;  // of now_batch_: resumptions and deadlines, which go stale
  // now_batch_'s filed keys (batch_may_have_twins): an open-addressed table of (key, count),
  // whose slots stay taken when their count falls to 0 until it is refilled. Derived, never
  // digested: what it says, twin_classes would say afresh (checked one call in 64).
  struct BatchKey {
    std::uint64_t key = 0;
    std::uint32_t count = 0;
    bool taken = false;
  };
  std::vector<BatchKey> batch_keys_;
  std::size_t batch_keys_taken_ = 0;   // slots taken
  std::size_t batch_keys_shared_ = 0;  // keys counted twice or more
  std::uint64_t batch_keys_epoch_ = 0; // the key epoch its keys were read at
  std::size_t unfiled_now_ = 0;        // callbacks of now_batch_ not filed
  std::uint64_t batch_checks_ = 0;
  std::vector<std::uint64_t> transient_keys_;  // batch_may_have_twins' scratch
  std::vector<Entry> open_;       // windowed happenings deferred past their start, not landed
  // A windowed entry taken off to start, while whether it lands now is asked: still pending.
  const Entry* in_hand_ = nullptr;
  std::vector<std::unique_ptr<Thread>> threads_;
};

}  // namespace loopsim::model
