#include "realloop/loop.hpp"

#include <algorithm>
#include <cerrno>
#include <optional>
#include <type_traits>
#include <utility>

#include "base/assert.hpp"
#include "realloop/pool.hpp"

namespace loopsim {

const char* door_name(Door door) { return door == Door::listener ? "listener" : "handoff"; }

const char* batch_stop_name(BatchStop stop) {
  switch (stop) {
    case BatchStop::count: return "count";
    case BatchStop::again: return "EAGAIN";
    case BatchStop::emfile: return "EMFILE";
    case BatchStop::enfile: return "ENFILE";
    case BatchStop::enobufs: return "ENOBUFS";
    case BatchStop::max_connections: return "max_connections";
    case BatchStop::handles_full: return "handles_full";
    case BatchStop::closed: return "closed";
    case BatchStop::error: return "error";
  }
  return "?";
}

const char* drain_point_name(DrainPoint point) { return point == DrainPoint::top ? "top" : "chunk"; }

LoopLayout LoopLayout::of(const LoopConfig& config, int workers) {
  LOOPSIM_ASSERT_OP(workers, >=, 1);
  LoopLayout layout;
  layout.hands_off = workers > 1 && config.accept_share;
  layout.accept_thread = layout.hands_off && config.accept_thread;
  layout.loops = workers + (layout.accept_thread ? 1 : 0);
  layout.acceptor = layout.accept_thread ? workers : 0;
  layout.siblings_watch = !layout.hands_off || config.siblings_watch_listener;
  return layout;
}

int LoopLayout::open(const std::vector<Loop*>& loops, const ListenSpec& spec, WorkerGroup& group, int& failed) const {
  LOOPSIM_ASSERT_OP(loops.size(), ==, std::size_t(this->loops));
  failed = acceptor;
  if (int rc = loops[std::size_t(acceptor)]->open(spec); rc < 0) return rc;
  const int listener = loops[std::size_t(acceptor)]->listener();
  for (int i = 0; i < this->loops; ++i) {
    Loop& loop = *loops[std::size_t(i)];
    failed = i;
    if (i != acceptor) {
      if (int rc = loop.attach(siblings_watch ? listener : -1); rc < 0) return rc;
    }
    if (this->loops == 1) continue;  // nobody to share with
    if (i != acceptor || !accept_thread) group.add(loop);
    if (i == acceptor && accept_thread) group.set_acceptor(loop);
    loop.join(group, accept_thread && i == acceptor);
  }
  return 0;
}

Loop& WorkerGroup::pick(Loop& from, Instant now, Duration busy, bool room) {
  // The turn moves past whichever worker is picked, so that workers that are all busy still
  // take connections in turn. Concurrent pickers (siblings that watch the listener too) may
  // both start from one turn: that costs evenness, never a connection.
  const std::size_t start = next_.load(std::memory_order_relaxed) % loops_.size();
  auto chosen = [&](std::size_t offset) -> Loop& {
    next_.store((start + offset + 1) % loops_.size(), std::memory_order_relaxed);
    return *loops_[(start + offset) % loops_.size()];
  };
  std::optional<std::size_t> busy_with_room;
  for (std::size_t offset = 0; offset < loops_.size(); ++offset) {
    Loop& candidate = *loops_[(start + offset) % loops_.size()];
    if (room && !candidate.has_room()) continue;
    if (&candidate == &from || !candidate.busy(now, busy)) return chosen(offset);
    if (!busy_with_room) busy_with_room = offset;
  }
  // Every worker with room is busy: one of them, rather than none (the connection would wait
  // in the listen queue for a slot that is free). The accept thread keeps nothing either way.
  if (busy_with_room && (from.accept_only() || (room && !from.has_room()))) return chosen(*busy_with_room);
  return from;
}

void WorkerGroup::closed_one() {
  if (acceptor_ != nullptr) acceptor_->note_close();
}

bool WorkerGroup::any_room() const {
  return std::any_of(loops_.begin(), loops_.end(), [](const Loop* loop) { return loop->has_room(); });
}

Loop::Loop(Kernel& kernel, LoopConfig config, LoopObserver& observer, int worker)
    : kernel_(kernel), config_(config), observer_(observer), worker_(worker) {
  LOOPSIM_ASSERT_OP(config_.accept_batch, >=, 0);
  LOOPSIM_ASSERT_OP(config_.max_events, >, 0);
  LOOPSIM_ASSERT_OP(config_.drain_chunk, >=, 0);
  LOOPSIM_ASSERT_OP(config_.yield_batch, >=, 0);
}

Loop::~Loop() {
  for (std::size_t fd = 0; fd < connections_.size(); ++fd) {
    if (connections_[fd].open) kernel_.close(int(fd));
  }
  std::lock_guard lock(mailbox_);
  for (int fd : handoffs_) kernel_.close(fd);
  if (owns_listener_ && !listener_closed_ && listener_ >= 0) kernel_.close(listener_);
  if (wake_ >= 0) kernel_.close(wake_);
  if (poller_ >= 0) kernel_.close(poller_);
}

int Loop::attach(int listener) {
  LOOPSIM_ASSERT(poller_ < 0);
  poller_ = kernel_.poller_create();
  if (poller_ < 0) return poller_;
  wake_ = kernel_.wake_create();
  if (wake_ < 0) return wake_;
  if (int rc = watch(wake_, io::readable); rc < 0) return rc;
  listener_ = listener;
  // R9: two handles a connection; the table is sized now, once, as the seed's loop did.
  if (config_.handle_policy == HandlePolicy::fixed) handle_capacity_ = std::size_t(config_.max_handles / 2);
  if (config_.handle_policy == HandlePolicy::rlimit) {
    handle_capacity_ = std::size_t(std::max(1, kernel_.descriptor_limit()));
  }
  if (listener_ < 0) {  // no listener: this worker is served by hand-offs alone (R10)
    listener_closed_ = true;
    return 0;
  }
  return watch(listener_, io::readable);
}

int Loop::open(const ListenSpec& spec) {
  int listener = kernel_.listen(spec);
  if (listener < 0) return listener;
  owns_listener_ = true;
  return attach(listener);
}

void Loop::stop() {
  stop_requested_.store(true, std::memory_order_release);
  if (wake_ >= 0) kernel_.wake_signal(wake_);
}

void Loop::shutdown(std::optional<Instant> asked_at) {
  if (asked_at) shutdown_asked_.set_if_none(*asked_at);
  shutdown_requested_.store(true, std::memory_order_release);
  if (wake_ >= 0) kernel_.wake_signal(wake_);
}

void Loop::post(std::function<void()> callback, std::uint64_t what) {
  {
    std::lock_guard lock(mailbox_);
    posts_.push_back(Post{std::move(callback), what});
  }
  kernel_.wake_signal(wake_);
}

std::uint64_t reloadable_key(const LoopConfig& config) {
  std::uint64_t key = 0;
  each_reloadable(config, config, [&key](const auto& field, const auto&) {
    using Field = std::decay_t<decltype(field)>;
    if constexpr (std::is_same_v<Field, std::optional<Duration>>) {
      key = state::fold(key, std::uint64_t(field ? field->count() : -1));
    } else if constexpr (std::is_same_v<Field, Duration>) {
      key = state::fold(key, std::uint64_t(field.count()));
    } else {
      key = state::fold(key, std::uint64_t(std::int64_t(field)));
    }
  });
  return key;
}

bool Loop::reconfigure(const LoopConfig& next) {
  LoopConfig applied = config_;
  take_reloadable(applied, next);
  if (applied == config_) return false;
  LOOPSIM_ASSERT_OP(applied.accept_batch, >=, 0);
  LOOPSIM_ASSERT_OP(applied.drain_chunk, >=, 0);
  LOOPSIM_ASSERT_OP(applied.yield_batch, >=, 0);
  take_reloadable(config_, next);  // field by field: siblings read max_connections meanwhile
  reload_key_ = reloadable_key(config_);
  return true;
}

bool Loop::has_room() const { return load_.load(std::memory_order_acquire) < config_.max_connections; }

void Loop::note_close() {
  // A worker's close and the accept thread's stop each write (the count; the flag), fence, then
  // read the other's: either the worker sees the flag, or the accept thread sees the room.
  if (awaits_close_.load() && awaits_close_.exchange(false)) kernel_.wake_signal(wake_);
}

bool Loop::offer(int fd) {
  bool first = false;
  {
    std::lock_guard lock(mailbox_);
    if (shutting_down_ || handoffs_.size() >= std::size_t(config_.max_connections)) return false;
    first = handoffs_.empty();
    handoffs_.push_back(fd);
    load_.fetch_add(1, std::memory_order_acq_rel);
  }
  // R10: a mailbox that already held hand-offs has its wake-up on the way, or its door owed:
  // the worker looks at the mailbox after it drains the wake-up, and takes it until empty.
  if (first || !config_.handoff_wakes_when_empty) kernel_.wake_signal(wake_);
  return true;
}

std::size_t Loop::handoffs_pending() {
  std::lock_guard lock(mailbox_);
  return handoffs_.size();
}

bool Loop::busy(Instant now, Duration busy) const {
  const std::optional<Instant> started = pass_started_.load();
  return started && now - *started > busy;
}

void Loop::run() {
  LOOPSIM_ASSERT(poller_ >= 0);
  // The flag is read here too: a stop() that came before open() had no wake object to signal.
  while (!stopping_ && !finished_ && !stop_requested_.load(std::memory_order_acquire)) run_pass();
}

void Loop::run_pass_once() {
  LOOPSIM_ASSERT(config_.inverted);
  inverted_accepts_ = 0;
  // R6: anything owed, a door or a connection's turn (R8), keeps the passes coming; no edge
  // would announce either. Each turn serves requests it holds, so the turns run out.
  auto owed = [this] {
    return accept_owed_ || handoff_owed_ || (config_.inverted_owes_turns && !owed_turns_.empty());
  };
  do {
    run_pass();
  } while (config_.inverted_owed_passes && owed() && !finished_ &&
           inverted_accepts_ < std::uint64_t(config_.max_connections));
  // Stopped by the cap with something still owed: the poller must read ready, or the outside
  // scheduler waits for its next tick while connections queue (scenario inverted-cap).
  if (config_.inverted_owed_passes && owed() && !finished_ && wake_ >= 0) kernel_.wake_signal(wake_);
}

std::optional<Duration> Loop::wait_timeout() {
  if (config_.inverted) return Duration(0);  // the outside scheduler waited already
  bool owed = accept_owed_ || handoff_owed_;
  if (owed && config_.nonblocking_wait_when_owed) return Duration(0);
  if (!owed_turns_.empty()) return Duration(0);
  std::optional<Duration> timeout = config_.idle_timeout;
  if (accept_blocked_ && config_.emfile_retry) {
    if (retry_now_) return Duration(0);
    const Duration left = std::max(retry_at_ - kernel_.now(), Duration(0));
    timeout = timeout ? std::min(left, *timeout) : left;
  }
  // R12 and R5: the next deadline, whether a connection's or the drain's.
  std::optional<Instant> next;
  if (!timers_.empty()) next = *connections_[std::size_t(timers_.front())].timer_at;
  if (shutting_down_ && config_.drain_timeout.count() > 0) {
    const Instant drain_end = *drain_until_;
    next = std::min(next.value_or(drain_end), drain_end);
  }
  if (shutting_down_) {  // R5: the next quiet connection's grace to run out
    for (const Connection& c : connections_) {
      if (!quiet(c)) continue;
      const Instant at = quiet_close_at(c);
      if (at > kernel_.now()) next = std::min(next.value_or(at), at);
    }
  }
  if (!next) return timeout;
  const Duration until = std::max(*next - kernel_.now(), Duration(0));
  return timeout ? std::min(*timeout, until) : until;
}

void Loop::run_pass() {
  ++pass_;
  const std::optional<Duration> timeout = wait_timeout();
  observer_.pass_begin(worker_, pass_, timeout);
  // The room is max_events, or the descriptors the interest set can hold if fewer: a wait
  // returns each at most once, so it returns the same events either way.
  const std::size_t room = std::max<std::size_t>(1, std::min(std::size_t(config_.max_events), watch_span_));
  if (events_.size() < room) events_.resize(room);
  int n = kernel_.wait(poller_, std::span(events_.data(), room), timeout);
  LOOPSIM_ASSERT_OP(n, >=, 0);
  pass_started_.store(kernel_.now());
  observer_.events(worker_, pass_, std::span(events_.data(), std::size_t(n)));

  drain_posts(DrainPoint::top);  // R7: at the top of every round
  if (shutdown_requested_.load(std::memory_order_acquire) && !shutting_down_) begin_shutdown();
  listener_ready_ = false;
  int since_drain = 0;
  for (int i = 0; i < n; ++i) {
    dispatch(events_[std::size_t(i)]);
    // R7: every drain_chunk callbacks, but never after the batch's last one.
    bool last = i + 1 == n;
    if (config_.drain_chunk > 0 && ++since_drain >= config_.drain_chunk && !last) {
      since_drain = 0;
      drain_posts(DrainPoint::chunk);
    }
  }
  // R5: asked during the events' handlers: the listener closes before any more of them run.
  if (config_.shutdown_between_handlers && shutdown_requested_.load(std::memory_order_acquire) && !shutting_down_) {
    begin_shutdown();
  }
  serve_owed_turns();
  expire_timers();  // R12: before the batches, so that the slots they free are taken at once
  take_batches();
  check_finished();
  pass_started_.store(std::nullopt);
  observer_.pass_end(worker_, pass_, accept_owed_, handoff_owed_);
}

void Loop::dispatch(const PollEvent& event) {
  if (event.fd == wake_) {
    kernel_.wake_drain(wake_);
    if (stop_requested_.load(std::memory_order_acquire)) stopping_ = true;
    if (handoffs_pending() > 0) handoff_owed_ = true;  // the hand-off door is ready
    // R10: a worker told the accept thread of a close (and cleared the flag): room, so the
    // batch is owed (R9); a descriptor, so the accept is retried now (R4).
    if (accept_only_ && !awaits_close_.load()) {
      if (backpressured_) {
        backpressured_ = false;
        accept_owed_ = !listener_closed_;
      }
      if (accept_blocked_) retry_now_ = true;
    }
    return;
  }
  if (event.fd == listener_ && !listener_closed_) {
    listener_ready_ = true;
    // Sabotage of R1: the batch runs where the listen event falls in the list.
    if (!config_.accept_after_events) take_batch(Door::listener);
    return;
  }
  Connection* c = connection(event.fd);
  if (c == nullptr) return;  // closed earlier in this pass
  // R14: the end of stream this announces must be read now; no later event will.
  if (event.ready & (io::read_hangup | io::hangup | io::error)) c->hangup_told = true;
  if (event.ready & io::writable) flush(event.fd, *c);
  if (connection(event.fd) != nullptr) serve(event.fd);
}

void Loop::drain_posts(DrainPoint point) {
  std::deque<Post> batch;
  {
    std::lock_guard lock(mailbox_);
    batch.swap(posts_);
  }
  if (batch.empty()) return;
  observer_.posts_drained(worker_, point, int(batch.size()));
  for (Post& post : batch) post.run();
}

// R8: each connection owed a turn gets one, in the order they were owed.
void Loop::serve_owed_turns() {
  std::size_t turns = owed_turns_.size();
  for (std::size_t i = 0; i < turns; ++i) {
    int fd = owed_turns_.front();
    owed_turns_.pop_front();
    Connection* c = connection(fd);
    if (c == nullptr || !c->owed_turn) continue;
    c->owed_turn = false;
    if (c->input_full) {  // R13: the kernel holds more of its requests: read them too
      serve(fd);
      continue;
    }
    answer_and_flush(fd, *c);
  }
}

// R1: one batch per door per pass, after the pass's events, whether announced now or owed.
// R4: after EMFILE/ENFILE, a batch when a descriptor was freed or the back-off ran out.
void Loop::take_batches() {
  // R5: a sibling may have closed the listener since this pass began.
  bool requested = shutdown_requested_.load(std::memory_order_acquire);
  if (config_.shutdown_before_batches && requested && !shutting_down_) {
    begin_shutdown();
    listener_ready_ = false;
  }
  bool listener_due = listener_ready_ || accept_owed_ || retry_due();
  if (config_.accept_after_events && listener_due) take_batch(Door::listener);
  if (!config_.accept_after_events && !listener_ready_ && (accept_owed_ || retry_due())) {
    take_batch(Door::listener);
  }
  if (handoff_owed_) take_batch(Door::handoff);
}

// R5: admit what siblings handed over and what the listener has queued, close the listener,
// clear the owed flags, then answer what was admitted and finish.
void Loop::begin_shutdown() {
  {
    std::lock_guard lock(mailbox_);  // offer() reads it from siblings' threads
    shutting_down_ = true;
  }
  // R5: the drain's time runs from the asking, when its time is known: handlers that ran
  // before the loop could begin do not lengthen it.
  // (Each read of the clock is a kernel call that the thread learns from: as many as before.)
  const std::optional<Instant> asked = shutdown_asked_.load();
  const bool from_asking = config_.shutdown_between_handlers && asked;
  drain_until_ = (from_asking ? *asked : kernel_.now()) + config_.drain_timeout;
  Duration grace = config_.drain_closes_gracefully ? config_.drain_idle_grace : Duration(0);
  if (config_.drain_timeout.count() > 0) grace = std::min(grace, std::max(Duration(0), *drain_until_ - kernel_.now()));
  drain_began_ = kernel_.now();
  idle_close_at_ = *drain_began_ + grace;
  observer_.shutdown_begin(worker_);
  // Queued connections have sent their requests and believe they are connected: the close
  // would reset them. Taken whole, past accept_batch and max_connections; only descriptors
  // (EMFILE) stop it.
  deferring_ = config_.shutdown_serves_after_close;
  if (config_.shutdown_drains_backlog && owns_listener_ && !listener_closed_) {
    draining_ = true;
    take_batch(Door::listener);
    draining_ = false;
  }
  if (config_.shutdown_admits_handoffs) {
    // A batch that takes nothing (held back by capacity) ends it: retrying would never end.
    admitting_handoffs_ = true;
    while (handoffs_pending() > 0 && take_batch(Door::handoff) > 0) {
    }
    admitting_handoffs_ = false;
  } else {
    std::lock_guard lock(mailbox_);
    for (int fd : handoffs_) kernel_.close(fd);
    load_.fetch_sub(std::int64_t(handoffs_.size()), std::memory_order_acq_rel);
    handoffs_.clear();
  }
  if (listener_ >= 0 && !listener_closed_) kernel_.unwatch(poller_, listener_);
  if (owns_listener_ && !listener_closed_) kernel_.close(listener_);
  listener_closed_ = true;
  // Its event in this pass, if any, was for the closed descriptor.
  if (config_.shutdown_drops_listener_event) listener_ready_ = false;
  observer_.listener_closed(worker_);
  if (config_.shutdown_clears_owed) {
    accept_owed_ = handoff_owed_ = false;
    accept_blocked_ = retry_now_ = false;
  }
  // The eager reads of what was admitted above (scenario shutdown-handoff-slow).
  deferring_ = false;
  for (int fd : std::exchange(deferred_, {})) {
    if (connection(fd) != nullptr) serve(fd);
  }
}

// R5: when the drain closes `c`, quiet: once it has been idle for drain_idle_grace, and not
// within the grace's first run from the drain's start.
Instant Loop::quiet_close_at(const Connection& c) const {
  LOOPSIM_ASSERT(idle_close_at_ && drain_began_);  // asked only during the drain
  Instant since = kernel_.now();
  if (c.idle_until) {
    since = *c.idle_until - config_.keepalive_timeout;  // its last answer
  } else if (c.head_until && c.input.empty()) {
    since = *c.head_until - config_.head_timeout;  // admitted, nothing sent yet
  }
  const Duration grace = *idle_close_at_ - *drain_began_;
  return std::max(*idle_close_at_, since + grace);
}

// During shutdown a connection with nothing in flight is closed; the loop is done when none is
// left and nothing is owed. A request the kernel has already received is in flight too (its
// readable edge may still be on its way to this pass): the connection is read once more, and
// what came is answered, before the close; a close with it unread would reset the client.
void Loop::check_finished() {
  if (!shutting_down_) return;
  expire_drain();
  for (std::size_t fd = 0; fd < connections_.size(); ++fd) {
    if (!quiet(connections_[fd])) continue;
    serve(int(fd));
    const Connection* c = connection(int(fd));
    // R5: a quiet connection stays open until it has been idle for the grace, for a request on
    // its way (a keep-alive client's next one comes an RTT after its answer).
    if (c != nullptr && quiet(*c) && kernel_.now() >= quiet_close_at(*c)) close_connection(int(fd));
  }
  if (connection_count_ == 0 && !accept_owed_ && !handoff_owed_ && handoffs_pending() == 0) {
    finished_ = true;
    // What the drain had to reset counts as left open: the shutdown did not finish them.
    observer_.loop_exit(worker_, int(connection_count_) + drain_resets_);
  }
}

}  // namespace loopsim
