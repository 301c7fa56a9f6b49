#include "model/scheduler.hpp"

#include <algorithm>
#include <boost/context/stack_context.hpp>

#include <array>
#include <iterator>
#include <optional>
#include <utility>

#include "model/digest.hpp"
#include "model/scheduler_thread.hpp"
#include "base/assert.hpp"
#include "base/stack_watch.hpp"
#include "realloop/state.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define LOOPSIM_ASAN_FIBERS 1
#endif
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define LOOPSIM_TSAN_FIBERS 1
#endif

namespace loopsim::model {

namespace ctx = boost::context;

namespace {

void start_switch([[maybe_unused]] void** fake_stack, [[maybe_unused]] const StackBounds& to) {
#ifdef LOOPSIM_ASAN_FIBERS
  __sanitizer_start_switch_fiber(fake_stack, to.bottom, to.size);
#endif
#ifdef LOOPSIM_TSAN_FIBERS
  // Flags 0: the switch orders what one fiber did before what the next does, as it does.
  __tsan_switch_to_fiber(to.tsan_fiber, 0);
#endif
}

void finish_switch([[maybe_unused]] void* fake_stack, [[maybe_unused]] StackBounds* from) {
#ifdef LOOPSIM_ASAN_FIBERS
  __sanitizer_finish_switch_fiber(fake_stack, from ? &from->bottom : nullptr,
                                  from ? &from->size : nullptr);
#endif
}

// A fixed-size stack that remembers where it is, for the sanitizer, and tells a snapshotting
// search about itself (base/stack_watch.hpp). It comes from operator new, so that it lives
// wherever the world's memory does.
class TrackedStack {
 public:
  TrackedStack(StackBounds& bounds, std::size_t bytes) : bytes_(bytes), bounds_(&bounds) {}
  ctx::stack_context allocate() {
    void* low = ::operator new(bytes_);
    ctx::stack_context sc;
    sc.size = bytes_;
    sc.sp = static_cast<char*>(low) + bytes_;
    bounds_->bottom = low;
    bounds_->size = bytes_;
    if (base::stack_watch != nullptr) base::stack_watch->allocated(low, bytes_);
    return sc;
  }
  void deallocate(ctx::stack_context& sc) noexcept {
    void* low = static_cast<char*>(sc.sp) - sc.size;
    if (base::stack_watch != nullptr) base::stack_watch->freed(low);
    ::operator delete(low);
  }

 private:
  std::size_t bytes_;
  StackBounds* bounds_;
};

}  // namespace

namespace {
// Thrown inside a cancelled thread from the call that blocked it, and caught at the bottom of
// its stack, so that the stack unwinds through ordinary C++ exception handling.
struct Cancelled {};
}  // namespace

namespace {
thread_local StackBounds scheduler_stack;  // the scheduler's own stack, learnt at the first switch
}

Scheduler::Scheduler(Chooser* chooser) : chooser_(chooser) {}

namespace {
std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  std::uint64_t state = a ^ (b * 0x9e3779b97f4a7c15ull);
  return splitmix64(state);
}
}  // namespace

std::uint32_t Scheduler::choose(ChoiceKind kind, std::uint32_t options) {
  if (options < 2 || chooser_ == nullptr) return 0;
  std::uint32_t pick = chooser_->choose(kind, options);
  LOOPSIM_ASSERT_OP(pick, <, options);
  // The decision's digest was taken inside the chooser, a pause: whatever follows it (what the
  // caller does with the pick, a call's step below) is a new state, not that one.
  ++epoch_;
  // A landing is not something the running thread learns: it learns what landed through its
  // calls' results. Any other decision inside a call is a step of that call.
  if (current_ != no_thread && !landing_ && kind != ChoiceKind::land) ++threads_[std::size_t(current_)]->in_call;
  return pick;
}

void Scheduler::rest(std::uint64_t site) {
  if (current_ == no_thread || landing_) return;
  Thread& thread = *threads_[std::size_t(current_)];
  thread.context = mix(0x5e57, site);
  thread.resting = true;
  thread.rest_at = now_;
  thread.in_call = 0;
}

void Scheduler::learn(std::uint64_t what) {
  if (current_ == no_thread || landing_) return;
  Thread& thread = *threads_[std::size_t(current_)];
  if (digesting_) thread.context = mix(mix(thread.context, what), shared_ ? shared_() : 0);
  thread.resting = false;
  thread.in_call = 0;
}

void Scheduler::leave_rest() {
  if (current_ == no_thread || landing_) return;
  threads_[std::size_t(current_)]->rest_at = now_;
}

Duration Scheduler::since_rest() const {
  if (current_ == no_thread) return Duration(0);
  return now_ - threads_[std::size_t(current_)]->rest_at;
}

bool Scheduler::at_rest() const {
  for (const auto& thread : threads_) {
    if (thread->state == Thread::State::done) continue;
    if (thread->state != Thread::State::blocked || !thread->resting) return false;
  }
  return true;
}

Scheduler::~Scheduler() { unwind(); }

void Scheduler::unwind() {
  LOOPSIM_ASSERT(current_ == no_thread);
  unwound_ = true;
  queue_.clear();
  now_batch_.clear();
  non_callbacks_now_ = 0;
  unfiled_now_ = 0;
  batch_keys_.clear();
  batch_keys_taken_ = batch_keys_shared_ = 0;
  open_.clear();
  for (auto& sums : pending_) sums.clear();
  for (ThreadId id = 0; id < ThreadId(threads_.size()); ++id) {
    Thread& thread = *threads_[std::size_t(id)];
    if (thread.state == Thread::State::done) continue;
    thread.cancelled = true;
    resume(id);  // its blocking call throws; the stack unwinds; the thread ends
    LOOPSIM_ASSERT(thread.state == Thread::State::done);
  }
}

void Scheduler::push(Entry entry) {
  if (unwound_) return;  // nothing runs any more: see unwind
  came(entry);
  if (entry.when == now_ && !now_batch_.empty()) {
    add_to_batch(std::move(entry));  // joins the instant being run
    return;
  }
  queue_.push_back(std::move(entry));
  std::push_heap(queue_.begin(), queue_.end(), Later{});
}

bool Scheduler::stale(const Entry& entry) const {
  if (entry.kind == Kind::callback) return false;
  if (entry.kind == Kind::deadline) {
    return std::none_of(open_.begin(), open_.end(), [&](const Entry& o) { return o.window == entry.window; });
  }
  const Thread& thread = *threads_[std::size_t(entry.thread)];
  return thread.state == Thread::State::done || entry.generation != thread.generation;
}

// Stale resumptions (and deadlines of windows landed) at the head of the queue: nothing would
// run them, and no digest sees them.
void Scheduler::drop_stale_heads() {
  while (!queue_.empty() && stale(queue_.front())) {
    std::pop_heap(queue_.begin(), queue_.end(), Later{});
    queue_.pop_back();
    if (stale_queued_ > 0) --stale_queued_;
  }
}

// Only what is not a callback can go stale, and an instant rarely holds more than a resumption
// or two of those: without one, there is nothing to look at. They joined the instant late, so
// the look starts from the back, and stops once it has seen them all.
void Scheduler::drop_stale_now() {
  std::size_t left = non_callbacks_now_;
  for (std::size_t i = now_batch_.size(); left > 0 && i-- > 0;) {
    const Entry& e = now_batch_[i];
    if (e.kind == Kind::callback) continue;
    --left;
    if (stale(e)) take_from_batch(std::uint32_t(i));
  }
  LOOPSIM_ASSERT_OP(left, ==, std::size_t(0));  // non_callbacks_now_ counted no more than there are
}

void Scheduler::add_to_batch(Entry entry) {
  if (entry.kind != Kind::callback) ++non_callbacks_now_;
  else ++unfiled_now_;
  entry.filed = false;
  now_batch_.push_back(std::move(entry));
}

Scheduler::Entry Scheduler::take_from_batch(std::uint32_t at) {
  LOOPSIM_ASSERT_OP(std::size_t(at), <, now_batch_.size());
  Entry entry = now_batch_.take(at);
  if (entry.kind != Kind::callback) {
    LOOPSIM_ASSERT(non_callbacks_now_ > 0);
    --non_callbacks_now_;
  } else if (entry.filed) {
    unfile_key(entry);
    entry.filed = false;
  } else {
    LOOPSIM_ASSERT(unfiled_now_ > 0);
    --unfiled_now_;
  }
  return entry;
}

namespace {
// Where an open-addressed table of 2^k slots (`mask`: 2^k - 1) starts looking for `key`; keys
// are digests already.
std::size_t key_slot(std::uint64_t key, std::size_t mask) { return std::size_t((key ^ (key >> 29)) & mask); }
}  // namespace

// batch_keys_'s slot for `key`: the one that holds it, else the free one it would take.
Scheduler::BatchKey& Scheduler::batch_key(std::uint64_t key) {
  LOOPSIM_ASSERT(!batch_keys_.empty());
  const std::size_t mask = batch_keys_.size() - 1;
  std::size_t at = key_slot(key, mask);
  while (batch_keys_[at].taken && batch_keys_[at].key != key) at = (at + 1) & mask;
  return batch_keys_[at];
}

// A filed entry's key is counted (a key of 0, no twin, is not); the table is grown, and its
// slots freed, by refilling it from the filed entries once half its slots are taken.
void Scheduler::file_key(const Entry& e) {
  LOOPSIM_ASSERT(e.filed && e.kind == Kind::callback);
  if (e.key == 0) return;
  if (2 * (batch_keys_taken_ + 1) > batch_keys_.size()) {
    std::size_t filed = 0;
    for (const Entry& f : now_batch_) filed += f.filed && f.key != 0;
    std::size_t size = 16;
    while (size < 4 * filed) size *= 2;
    batch_keys_.assign(size, BatchKey{});
    batch_keys_taken_ = batch_keys_shared_ = 0;
    for (const Entry& f : now_batch_) {
      if (f.filed && f.key != 0 && &f != &e) file_key(f);
    }
  }
  BatchKey& slot = batch_key(e.key);
  if (!slot.taken) {
    slot = BatchKey{e.key, 0, true};
    ++batch_keys_taken_;
  }
  if (++slot.count == 2) ++batch_keys_shared_;
}

void Scheduler::unfile_key(const Entry& e) {
  if (e.key == 0) return;
  BatchKey& slot = batch_key(e.key);
  LOOPSIM_ASSERT(slot.taken && slot.count > 0);  // a filed key was counted
  if (slot.count-- == 2) --batch_keys_shared_;
}

// The key epoch moved: no kept key is believed, every callback is keyed afresh.
void Scheduler::refile_batch(std::uint64_t epoch) {
  for (Entry& e : now_batch_) {
    if (!e.filed) continue;
    e.filed = false;
    ++unfiled_now_;
  }
  std::fill(batch_keys_.begin(), batch_keys_.end(), BatchKey{});
  batch_keys_taken_ = batch_keys_shared_ = 0;
  batch_keys_epoch_ = epoch;
}

bool Scheduler::batch_may_have_twins() {
  if (!twins_) return false;
  const std::uint64_t epoch = twin_key_epoch_ ? twin_key_epoch_() : 0;
  if (epoch == 0 || !twin_key_) return true;  // nothing is kept: twin_classes decides
  if (epoch != batch_keys_epoch_) refile_batch(epoch);
  // Newcomers sit at the back: look from there until every unfiled callback is seen.
  transient_keys_.clear();
  std::size_t left = unfiled_now_;
  for (std::size_t i = now_batch_.size(); left > 0 && i-- > 0;) {
    Entry& e = now_batch_[i];
    if (e.kind != Kind::callback || e.filed) continue;
    --left;
    const TwinKeyed fresh = twin_key_(e.tag);
    if (fresh.lasting && e.window == 0) {
      e.key = fresh.key;
      e.key_epoch = epoch;
      e.filed = true;
      --unfiled_now_;
      file_key(e);
    } else if (fresh.key != 0) {
      // As twin_classes keys it: a windowed happening is a twin only of one whose window ends alike.
      transient_keys_.push_back(e.window != 0 ? mix(fresh.key, std::uint64_t((e.window_end - now_).count())) : fresh.key);
    }
  }
  LOOPSIM_ASSERT_OP(left, ==, std::size_t(0));  // unfiled_now_ counted no more than there are
  bool may = batch_keys_shared_ > 0;
  if (!may && !transient_keys_.empty()) {
    std::sort(transient_keys_.begin(), transient_keys_.end());
    may = std::adjacent_find(transient_keys_.begin(), transient_keys_.end()) != transient_keys_.end();
    for (std::size_t k = 0; !may && !batch_keys_.empty() && k < transient_keys_.size(); ++k) {
      const BatchKey& slot = batch_key(transient_keys_[k]);
      may = slot.taken && slot.count > 0;
    }
  }
  // One call in 64: the filed keys are the keys afresh, and where none is shared the full scan
  // finds no twin either.
  if ((++batch_checks_ & 63) == 0) {
    for (const Entry& e : now_batch_) {
      if (e.filed) LOOPSIM_ASSERT_OP(e.key, ==, twin_key_(e.tag).key);
    }
    if (!may) LOOPSIM_ASSERT(!twin_classes(now_batch_, classes_, true));
  }
  return may;
}

// Moves everything due at the next instant before `until` into now_batch_ (stale resumptions
// dropped), and the clock to it. False when nothing is due before `until`.
bool Scheduler::load_next_instant(Instant until) {
  while (now_batch_.empty()) {
    if (queue_.empty() || queue_.front().when >= until) return false;
    LOOPSIM_ASSERT_OP(since_start(queue_.front().when).count(), >=, since_start(now_).count());
    now_ = queue_.front().when;
    while (!queue_.empty() && queue_.front().when == now_) {
      std::pop_heap(queue_.begin(), queue_.end(), Later{});
      if (!stale(queue_.back())) add_to_batch(std::move(queue_.back()));
      else if (stale_queued_ > 0) --stale_queued_;
      queue_.pop_back();
    }
  }
  give_back_room();
  return true;
}

// Halving when a quarter is used keeps taking and pushing amortized constant time, and the
// room never below what expect_happenings would make for what is left.
void Scheduler::give_back_room() {
  const std::size_t room = queue_.capacity();
  if (room <= 4 * expected_spare || queue_.size() >= room / 4) return;
  std::vector<Entry> kept;
  kept.reserve(std::max(room / 2, queue_.size() + expected_spare));
  std::move(queue_.begin(), queue_.end(), std::back_inserter(kept));  // the heap's order kept
  queue_.swap(kept);
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
    case Happening::accept_fault: return "accept_fault";
    case Happening::timer: return "timer";
  }
  return "?";
}

// The alternatives are every entry due now, less the twins of one already offered: of each
// class of interchangeable happenings only the first in line is a distinct choice. A windowed
// one is a twin only of those whose windows end alike.
Scheduler::Entry Scheduler::take_next() {
  std::vector<Alternative>& offered = offered_;
  offered.clear();
  // Without a twin among them, the alternatives are the entries themselves, in line.
  const std::uint32_t n = std::uint32_t(now_batch_.size());
  if (n > 1 && chooser_ != nullptr && (!batch_may_have_twins() || !twin_classes(now_batch_, classes_, true))) {
    std::uint32_t at = choose(ChoiceKind::order, n);
    Entry entry = take_from_batch(at);
    went(entry);
    return entry;
  }
  if (n > 1 && chooser_ != nullptr) {
    for (std::uint32_t i = 0; i < n; ++i) {
      std::uint64_t twin = classes_[i];
      bool seen = twin != 0 && std::any_of(offered.begin(), offered.end(), [twin](const Alternative& a) { return a.twin == twin; });
      if (!seen) offered.push_back(Alternative{i, twin});
    }
  }
  std::uint32_t at = offered.empty() ? 0 : offered[choose(ChoiceKind::order, std::uint32_t(offered.size()))].index;
  Entry entry = take_from_batch(at);
  went(entry);
  return entry;
}

// A class is computed only for an entry whose key another shares: one whose key is its own has
// no twin among `entries`, whatever its class. At an instant (`at_instant`) only callbacks have
// twins, and windowed ones only those whose windows end alike.
template <class Entries>
bool Scheduler::twin_classes(const Entries& entries, std::vector<std::uint64_t>& out, bool at_instant) const {
  const std::size_t n = entries.size();
  out.assign(n, 0);
  if (!twins_) return false;
  auto offset = [this](const Entry& e) { return std::uint64_t((e.window_end - now_).count()); };
  const std::uint64_t epoch = twin_key_epoch_ ? twin_key_epoch_() : 0;
  // Which keys are shared: an open-addressed table of (key, count) at most half full, whose
  // slots from an earlier call read as empty (their round is not this one's), so that it is
  // never cleared.
  if (key_slots_.size() < 2 * n || key_slots_.empty()) {
    std::size_t size = 16;
    while (size < 2 * n) size *= 2;
    key_slots_.assign(size, KeySlot{});
    key_round_ = 0;
  }
  ++key_round_;
  const std::size_t mask = key_slots_.size() - 1;
  auto slot = [this, mask](std::uint64_t key) -> KeySlot& {
    std::size_t at = key_slot(key, mask);
    while (key_slots_[at].round == key_round_ && key_slots_[at].key != key) at = (at + 1) & mask;
    return key_slots_[at];
  };
  keys_.clear();  // (key, index), for the entries that may have a twin
  bool shared = false;
  std::size_t i = 0;
  for (auto it = entries.begin(); it != entries.end(); ++it, ++i) {
    const Entry& e = *it;
    std::uint64_t key = 0;
    if (at_instant && e.kind != Kind::callback) {
      continue;
    } else if (epoch != 0 && e.key_epoch == epoch && (++kept_keys_used_ & 63) != 0) {
      key = e.key;  // kept (one in 64 goes to twin_key_of, to be compared with a fresh one)
    } else {
      key = twin_key_of(e, epoch);
    }
    if (key == 0) continue;
    if (at_instant && e.window != 0) key = mix(key, offset(e));
    keys_.emplace_back(key, i);
    KeySlot& s = slot(key);
    if (s.round != key_round_) {
      s = KeySlot{key, 1, key_round_};
    } else {
      shared = true;
      ++s.count;
    }
  }
  if (!shared) return false;  // every key its own: no entry has a twin
  bool any = false;
  for (const auto& [key, index] : keys_) {
    if (slot(key).count < 2) continue;
    const Entry& e = entries[index];
    std::uint64_t twin = twins_(e.tag, pending_part(e));
    if (twin != 0 && at_instant && e.window != 0) twin = mix(twin, offset(e));
    out[index] = twin;
    any = any || twin != 0;
  }
  return any;
}

std::uint64_t Scheduler::twin_key_of(const Entry& e, std::uint64_t epoch) const {
  if (!twin_key_) return 1;
  if (epoch != 0 && e.key_epoch == epoch) {
    // A kept key taken afresh and compared: a key the epoch does not cover shows.
    LOOPSIM_ASSERT_OP(e.key, ==, twin_key_(e.tag).key);
    return e.key;
  }
  TwinKeyed fresh = twin_key_(e.tag);
  if (fresh.lasting) {
    e.key = fresh.key;
    e.key_epoch = epoch;
  }
  return fresh.key;
}

// Of each twin class of open windows, the one that must land first: if an execution lands a
// later-ending twin here, the one that lands the earlier-ending twin here and the other where
// that one landed is also an execution, and ends alike.
std::vector<Scheduler::Alternative> Scheduler::landing_alternatives(const Call* call) const {
  std::vector<Alternative> out;
  twin_classes(open_, classes_, false);
  for (std::uint32_t i = 0; i < open_.size(); ++i) {
    const Entry& e = open_[i];
    if (call != nullptr && commutes_ && commutes_(e.tag, *call)) continue;
    std::uint64_t twin = classes_[i];
    auto same = std::find_if(out.begin(), out.end(), [twin](const Alternative& a) { return twin != 0 && a.twin == twin; });
    if (same == out.end()) {
      out.push_back(Alternative{i, twin});
      continue;
    }
    const Entry& held = open_[same->index];
    if (std::tie(e.window_end, e.seq) < std::tie(held.window_end, held.seq)) same->index = i;
  }
  return out;
}

bool Scheduler::offer_landing() {
  if (open_.empty()) return false;
  std::vector<Alternative> alternatives = landing_alternatives();
  std::uint32_t pick = choose(ChoiceKind::land, std::uint32_t(alternatives.size() + 1));
  if (pick == 0) return false;
  Entry entry = std::move(open_[alternatives[pick - 1].index]);
  open_.erase(open_.begin() + alternatives[pick - 1].index);
  went(entry);
  entry.callback();
  return true;
}

// A window entry taken at its start: it opens, and (the natural choice) its class lands now,
// earliest end first: an open twin that must land before it goes in its place.
void Scheduler::window_start(Entry& entry) {
  in_hand_ = &entry;
  bool now = choose(ChoiceKind::land, 2) == 0;
  in_hand_ = nullptr;
  std::optional<std::size_t> earlier;
  if (now && twins_) {
    std::uint64_t twin = twins_(entry.tag, 0);  // taken off already: nothing of its own is pending
    for (std::size_t i = 0; twin != 0 && i < open_.size(); ++i) {
      const Entry& o = open_[i];
      if (o.window_end >= entry.window_end || twins_(o.tag, pending_part(o)) != twin) continue;
      if (!earlier || std::tie(o.window_end, o.seq) < std::tie(open_[*earlier].window_end, open_[*earlier].seq)) earlier = i;
    }
  }
  if (now && !earlier) {
    entry.callback();
    return;
  }
  Entry deadline{entry.window_end, seq_++, Kind::deadline, no_thread, 0, nullptr, entry.tag, entry.window, entry.window_end};
  came(entry);  // pending again, open
  open_.push_back(std::move(entry));
  push(std::move(deadline));
  if (!earlier) return;
  Entry landing = std::move(open_[*earlier]);
  open_.erase(open_.begin() + std::ptrdiff_t(*earlier));
  went(landing);
  landing.callback();
}

void Scheduler::run_entry(Entry& entry) {
  switch (entry.kind) {
    case Kind::callback:
      if (entry.window != 0 && entry.window_end > now_) {
        window_start(entry);
      } else {
        entry.callback();
      }
      return;
    case Kind::deadline: {
      auto it = std::find_if(open_.begin(), open_.end(), [&](const Entry& o) { return o.window == entry.window; });
      if (it == open_.end()) return;  // it landed earlier in this instant
      Entry landing = std::move(*it);
      open_.erase(it);
      went(landing);
      landing.callback();
      return;
    }
    case Kind::resume:
      if (!stale(entry)) resume(entry.thread);  // it may have gone stale within this instant
      return;
  }
}

void Scheduler::call_point(const Call& call) {
  if (!explore_windows_ || landing_ || current_ == no_thread) return;
  threads_[std::size_t(current_)]->in_call = 0;
  // Windows starting now that have not been taken yet may land here too: they open first.
  for (std::size_t i = 0; i < now_batch_.size();) {
    Entry& e = now_batch_[i];
    if (e.kind != Kind::callback || e.window == 0 || e.window_end <= now_) {
      ++i;
      continue;
    }
    Entry deadline{e.window_end, seq_++, Kind::deadline, no_thread, 0, nullptr, e.tag, e.window, e.window_end};
    open_.push_back(take_from_batch(std::uint32_t(i)));
    push(std::move(deadline));
  }
  while (!open_.empty()) {
    std::vector<Alternative> alternatives = landing_alternatives(&call);
    if (alternatives.empty()) return;
    std::uint32_t pick = choose(ChoiceKind::land, std::uint32_t(alternatives.size() + 1));
    if (pick == 0) return;
    land_inside(alternatives[pick - 1].index);
  }
}

void Scheduler::land_inside(std::size_t index) {
  Entry entry = std::move(open_[index]);
  open_.erase(open_.begin() + std::ptrdiff_t(index));
  went(entry);
  ThreadId caller = current_;
  current_ = no_thread;  // callbacks run as if on the scheduler's stack
  landing_ = true;
  entry.callback();
  landing_ = false;
  current_ = caller;
}

void Scheduler::at(Instant when, std::function<void()> callback, Tag tag) {
  LOOPSIM_ASSERT(callback != nullptr);
  push(Entry{std::max(when, now_), seq_++, Kind::callback, no_thread, 0, std::move(callback), tag});
}

void Scheduler::at(const Window& window, Instant drawn, std::function<void()> callback, Tag tag) {
  LOOPSIM_ASSERT(callback != nullptr);
  LOOPSIM_ASSERT_OP(since_start(window.lo).count(), <=, since_start(window.hi).count());
  if (!explore_windows_ || window.fixed() || window.hi <= now_) {
    return at(window.fixed() ? window.lo : drawn, std::move(callback), tag);
  }
  push(Entry{std::max(window.lo, now_), seq_++, Kind::callback, no_thread, 0, std::move(callback), tag,
             ++windows_, window.hi});
}
ThreadId Scheduler::spawn(std::string name, std::function<void()> body, std::size_t stack_bytes) {
  auto id = ThreadId(threads_.size());
  auto thread = std::make_unique<Thread>();
  thread->name = std::move(name);
  thread->body = std::move(body);
  Thread* self = thread.get();
#ifdef LOOPSIM_TSAN_FIBERS
  thread->stack.tsan_fiber = __tsan_create_fiber(0);
#endif
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

bool Scheduler::due_now(ThreadId id) const {
  if (id == current_) return false;
  const Thread& thread = *threads_.at(std::size_t(id));
  switch (thread.state) {
    case Thread::State::runnable: return true;  // spawned, its first resumption pending
    case Thread::State::sleeping: return thread.resume_at <= now_;
    case Thread::State::blocked: return thread.woken;
    case Thread::State::done: return false;
  }
  return false;
}

void Scheduler::yield(Thread& thread) {
  char here = 0;
  base::note_stack_depth(&here);
  start_switch(&thread.fake_stack, scheduler_stack);
  thread.sink = std::move(thread.sink).resume();
  finish_switch(thread.fake_stack, &scheduler_stack);
  if (thread.cancelled) throw Cancelled{};
}

void Scheduler::sleep_until(Instant when) {
  LOOPSIM_ASSERT(current_ != no_thread);
  Thread& thread = *threads_[std::size_t(current_)];
  thread.state = Thread::State::sleeping;
  thread.resume_at = std::max(when, now_);
  push(Entry{std::max(when, now_), seq_++, Kind::resume, current_, ++thread.generation, nullptr});
  yield(thread);
}

bool Scheduler::block(std::optional<Instant> deadline) {
  LOOPSIM_ASSERT(current_ != no_thread);
  Thread& thread = *threads_[std::size_t(current_)];
  thread.state = Thread::State::blocked;
  thread.woken = false;
  ++thread.generation;
  thread.deadline_queued = deadline.has_value();
  if (deadline) {
    push(Entry{std::max(*deadline, now_), seq_++, Kind::resume, current_, thread.generation,
               nullptr});
  }
  yield(thread);
  // Only a blocked thread's flag is state: once it runs, it has learnt it.
  return std::exchange(thread.woken, false);
}

void Scheduler::wake(ThreadId id) {
  Thread& thread = *threads_.at(std::size_t(id));
  if (thread.state != Thread::State::blocked || thread.woken) return;
  thread.woken = true;
  push(Entry{now_, seq_++, Kind::resume, id, ++thread.generation, nullptr});
  if (std::exchange(thread.deadline_queued, false)) {
    ++stale_queued_;
    purge_stale();
  }
}

// A loop that waits with a timeout (its next timer) and is woken first leaves its resumption
// at the timeout in the queue, stale: a hundred thousand connections accepted in a burst, one
// wait each, would leave a hundred thousand until their timeouts came. Once at least half the
// queue is stale, and that is more than a few, they go at once: amortized constant time per
// entry. Stale entries are invisible (no digest sees them, nothing runs them), and the queue's
// order is by (when, seq), a total order, so rebuilding the heap changes nothing that happens.
void Scheduler::purge_stale() {
  if (stale_queued_ < stale_purge_floor || 2 * stale_queued_ <= queue_.size()) return;
  std::erase_if(queue_, [this](const Entry& e) { return stale(e); });
  std::make_heap(queue_.begin(), queue_.end(), Later{});
  stale_queued_ = 0;
}

void Scheduler::resume(ThreadId id) {
  Thread& thread = *threads_[std::size_t(id)];
  LOOPSIM_ASSERT(current_ == no_thread);
  thread.state = Thread::State::runnable;
  current_ = id;
  char here = 0;
  base::note_stack_depth(&here);
  void* fake_stack = nullptr;
#ifdef LOOPSIM_TSAN_FIBERS
  scheduler_stack.tsan_fiber = __tsan_get_current_fiber();
#endif
  start_switch(&fake_stack, thread.stack);
  thread.fiber = std::move(thread.fiber).resume();
  finish_switch(fake_stack, nullptr);
#ifdef LOOPSIM_TSAN_FIBERS
  if (thread.state == Thread::State::done && thread.stack.tsan_fiber != nullptr) {
    __tsan_destroy_fiber(std::exchange(thread.stack.tsan_fiber, nullptr));
  }
#endif
  current_ = no_thread;
}

bool Scheduler::step(Instant until) {
  LOOPSIM_ASSERT(current_ == no_thread);
  ++epoch_;  // the world leaves the pause between steps
  // Open windows may land before anything else: before time moves on, and at each instant
  // before what is due there. Offered once where time does not move: asked twice in one state,
  // the question would be two decisions a search cannot tell apart, the first of which leads
  // only to the second.
  // What went stale within this instant (a landed window's deadline, a resumption overtaken)
  // goes before anything is offered: it would run as a step that changes nothing.
  drop_stale_now();
  if (now_batch_.empty()) {
    drop_stale_heads();
    bool moves = queue_.empty() || queue_.front().when != now_;
    // Time moves to the run's end: the open windows' last chance, asked once. One that ends at
    // the horizon and declines here never lands, as in a run that draws its instant there.
    bool ends = queue_.empty() || queue_.front().when >= until;
    if (moves && !(ends && declined_at_end_ == seq_ + 1) && offer_landing()) return true;
    if (!load_next_instant(until)) {
      declined_at_end_ = seq_ + 1;
      return false;
    }
  }
  if (offer_landing()) return true;
  Entry entry = take_next();
  run_entry(entry);
  return true;
}

std::uint64_t Scheduler::run_until(Instant until) {
  std::uint64_t steps = 0;
  while (step(until)) ++steps;
  now_ = std::max(now_, until);
  return steps;
}

// What a pending entry does, with its window's end relative to now; not its number or its
// place in line (entries due at one instant run in whatever order the chooser picks).
namespace {

// The kind of name a happening's subject is.
std::optional<loopsim::state::Name> subject_name(Happening what) {
  switch (what) {
    case Happening::connect:
    case Happening::request_due:
    case Happening::network:
    case Happening::client_read: return loopsim::state::Name::client;
    case Happening::handshake:
    case Happening::delivery:
    case Happening::peer_reset: return loopsim::state::Name::conn;
    default: return std::nullopt;
  }
}

}  // namespace

std::uint64_t Scheduler::entry_digest(const Entry& e, const loopsim::state::Names* names, loopsim::state::Sink* clamp) const {
  const std::optional<Instant> horizon = clamp != nullptr ? clamp->horizon() : std::nullopt;
  using loopsim::state::fold;
  std::uint64_t v = fold(std::uint64_t(e.kind), std::uint64_t(e.thread));
  std::int64_t subject = e.tag.subject;
  if (names != nullptr && e.kind != Kind::resume) {
    if (auto name = subject_name(e.tag.what)) subject = names->canonical(*name, subject);
  }
  v = fold(fold(v, std::uint64_t(e.tag.what)), std::uint64_t(subject));
  std::int64_t end = e.window != 0 ? (e.window_end - now_).count() : -1;
  // A window ending at or past the horizon need not land: where past it is no matter.
  if (end >= 0 && horizon && end >= (*horizon - now_).count()) {
    clamp->clamped(end);
    end = loopsim::state::beyond;
  }
  return fold(fold(v, e.tag.detail), std::uint64_t(end));
}

std::uint64_t Scheduler::pending_part(const Entry& e) {
  using loopsim::state::fold;
  std::uint64_t v = fold(fold(std::uint64_t(e.tag.what), e.tag.detail), std::uint64_t(since_start(e.when).count()));
  return fold(v, std::uint64_t(e.window != 0 ? since_start(e.window_end).count() : -1));
}

std::uint64_t& Scheduler::pending_sum(loopsim::state::Name kind, std::uint32_t subject) {
  static_assert(std::tuple_size_v<decltype(pending_)> == std::size_t(loopsim::state::Name::conn) + 1);
  std::vector<std::uint64_t>& sums = pending_[std::size_t(kind)];
  if (subject >= sums.size()) sums.resize(std::size_t(subject) + 1);
  return sums[subject];
}

void Scheduler::came(const Entry& e) {
  if (e.kind != Kind::callback) return;
  if (auto name = subject_name(e.tag.what)) pending_sum(*name, e.tag.subject) += pending_part(e);
}

void Scheduler::went(const Entry& e) {
  if (e.kind != Kind::callback) return;
  if (auto name = subject_name(e.tag.what)) pending_sum(*name, e.tag.subject) -= pending_part(e);
}

std::uint64_t Scheduler::pending_about(loopsim::state::Name kind, std::uint32_t subject) const {
  const std::vector<std::uint64_t>& sums = pending_[std::size_t(kind)];
  return subject < sums.size() ? sums[subject] : 0;
}

void Scheduler::digest(Digest& d) const {
  struct Into final : loopsim::state::Sink {
    explicit Into(Digest& d) : d(d) {}
    void add(std::int64_t v) override { d.add(v); }
    Digest& d;
  } into(d);  // no horizon: every time as it is
  digest_state(into, now_);
}

namespace {
// The parts of the scheduler's digest, by name: for the digest-drop test (Sink::kept).
namespace f = loopsim::state::f;
constexpr loopsim::state::Field due_now_part = f::part("scheduler.due_now");
constexpr loopsim::state::Field later_part = f::part("scheduler.later");
constexpr loopsim::state::Field open_part = f::part("scheduler.open");
constexpr loopsim::state::Field in_hand_part = f::part("scheduler.in_hand");
constexpr loopsim::state::Field threads_part = f::part("scheduler.threads");
}  // namespace

void Scheduler::digest_state(loopsim::state::Sink& d, Instant) const {
  const loopsim::state::Names* names = d.names();
  // What is due now, wherever it waits (the instant's batch, or the heap when the batch was
  // empty as it came), then what is due later. A window's end and a later entry at or past the
  // horizon are fed as state::beyond (entry_digest, add_left).
  std::vector<std::uint64_t> now;
  for (const Entry& e : now_batch_) {
    if (!stale(e)) now.push_back(entry_digest(e, names, &d));
  }
  std::vector<std::pair<std::int64_t, std::uint64_t>> later;
  for (const Entry& e : queue_) {
    if (stale(e)) continue;
    if (e.when == now_) {
      now.push_back(entry_digest(e, names, &d));
    } else {
      later.emplace_back((e.when - now_).count(), entry_digest(e, names, &d));
    }
  }
  std::sort(now.begin(), now.end());
  if (d.kept(due_now_part)) {
    d.add(std::int64_t(now.size()));
    for (std::uint64_t v : now) d.add(std::int64_t(v));
  }
  std::sort(later.begin(), later.end());
  if (d.kept(later_part)) {
    d.add(std::int64_t(later.size()));
    for (auto [when, what] : later) {
      loopsim::state::add_left(d, when, now_);
      d.add(std::int64_t(what));
    }
  }
  std::vector<std::uint64_t> open;
  for (const Entry& e : open_) open.push_back(entry_digest(e, names, &d));
  std::sort(open.begin(), open.end());
  if (d.kept(open_part)) {
    d.add(std::int64_t(open.size()));
    for (std::uint64_t v : open) d.add(std::int64_t(v));
  }
  // A windowed entry taken off to start, while whether it lands now is asked: a state of its
  // own, apart from the same entry still due (where the question is whether an open one lands).
  if (d.kept(in_hand_part)) d.add(in_hand_ != nullptr ? std::int64_t(entry_digest(*in_hand_, names, &d)) : -1);
  if (d.kept(threads_part)) {
    for (const auto& thread : threads_) loopsim::state::visit_into(d, *thread, now_);
  }
}

}  // namespace loopsim::model
