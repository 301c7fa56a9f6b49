// Doors and batches: R1-R4 (batch, owed flags, errors), R9 (the handle table), R10 (sharing).
#include <cerrno>

#include "base/assert.hpp"
#include "realloop/loop.hpp"

namespace loopsim {

namespace {

BatchStop stop_for(int error) {
  switch (error) {
    case -EAGAIN: return BatchStop::again;
    case -EMFILE: return BatchStop::emfile;
    case -ENFILE: return BatchStop::enfile;
    case -ENOBUFS: return BatchStop::enobufs;
    default: return BatchStop::error;
  }
}

}  // namespace

bool Loop::sharing() const { return group_ != nullptr && config_.accept_share && !shutting_down_; }

bool Loop::table_full() const {
  return handle_capacity_ != 0 && connection_count_ >= handle_capacity_;
}

bool Loop::retry_due() {
  if (!accept_blocked_ || !config_.emfile_retry) return false;
  return retry_now_ || kernel_.now() >= retry_at_;
}

// One accept from a door: a descriptor, or -errno (-EAGAIN when the hand-off channel is empty).
int Loop::accept_one(Door door) {
  if (door == Door::listener) return kernel_.accept(listener_);
  std::lock_guard lock(mailbox_);
  if (handoffs_.empty()) return -EAGAIN;
  int fd = handoffs_.front();
  handoffs_.pop_front();
  load_.fetch_sub(1, std::memory_order_acq_rel);  // admit() counts it again as held
  return fd;
}

int Loop::take_batch(Door door) {
  if (door == Door::listener && accept_blocked_) {  // R4: this batch is the retry
    accept_blocked_ = retry_now_ = false;
  }
  // R5: shutdown admits every hand-off, whatever the loop holds.
  bool admitting = (door == Door::handoff && admitting_handoffs_ && config_.shutdown_admits_past_capacity) ||
                   draining_;  // R5: and the listener's whole queue, once, before the close
  int accepted = 0;
  BatchStop why = BatchStop::again;
  for (;;) {
    if (!draining_ && config_.accept_batch > 0 && accepted == config_.accept_batch) {
      why = BatchStop::count;
      break;
    }
    // R10: the listener's batch serves every worker it hands over to: it stops when none has room.
    const bool for_all = door == Door::listener && sharing() && config_.share_counts_siblings;
    if (!admitting && (for_all ? !group_->any_room() : connection_count_ >= std::size_t(config_.max_connections))) {
      why = BatchStop::max_connections;
      break;
    }
    if (!admitting && table_full() && config_.on_full == OnFull::backpressure) {
      why = BatchStop::handles_full;
      break;
    }
    // R5: a handler served within this batch may have outlasted a sibling's close of the
    // listener; the shutdown begins at the next pass.
    if (door == Door::listener && config_.shutdown_before_batches && !shutting_down_ &&
        shutdown_requested_.load(std::memory_order_acquire)) {
      why = BatchStop::closed;
      break;
    }
    int fd = accept_one(door);
    if (door == Door::listener) observer_.accepted(worker_, door, fd);
    if (fd == -ECONNABORTED) continue;  // that connection is gone; the next may not be
    if (fd < 0) {
      why = stop_for(fd);
      break;
    }
    ++accepted;
    if (config_.inverted) ++inverted_accepts_;  // R6's cap; elsewhere a count of history
    // R1: the count stopped the batch before this accept, unless the shutdown drains.
    LOOPSIM_ASSERT(draining_ || config_.accept_batch <= 0 || accepted <= config_.accept_batch);
    if (door == Door::handoff) observer_.accepted(worker_, door, fd);
    if (door == Door::listener) {
      place(fd);
    } else {
      admit(fd);
    }
    // The bound checked before the accept holds after it (R5's admission may pass it).
    LOOPSIM_ASSERT(admitting || for_all || connection_count_ <= std::size_t(config_.max_connections));
  }
  // R2/R3: owed only when the count stopped the drain; R9: or back-pressure held it.
  // A batch the shutdown cut short is unfinished too; R5's shutdown then clears what it owes.
  bool unfinished = why == BatchStop::count || why == BatchStop::closed;
  bool owed = unfinished && config_.owe_unfinished_batch;
  bool descriptors = why == BatchStop::emfile || why == BatchStop::enfile;
  if (descriptors || (why == BatchStop::enobufs && config_.enobufs_retry)) note_accept_error();
  if (descriptors) owed = config_.owe_after_emfile;
  if (why == BatchStop::handles_full) {
    backpressured_ = true;
    observer_.backpressured(worker_, int(connection_count_));
  }
  // Held back by max_connections: the next close owes the doors their batch, as back-pressure.
  if (why == BatchStop::max_connections && config_.owe_when_room) {
    backpressured_ = true;
    // R10: the accept thread frees no room itself: the worker that does tells it. The flag is
    // raised before the count is read again, so that a close in between is not missed.
    if (accept_only_ && group_ != nullptr) {
      awaits_close_.store(true);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      if (group_->any_room()) note_close();  // the next pass's wake owes the batch
    }
  }
  // R1: a batch takes at most accept_batch, but for the shutdown's drain (R5), which takes the
  // whole queue. R2: only a batch that was stopped before the queue ran dry may be owed.
  LOOPSIM_ASSERT(draining_ || config_.accept_batch <= 0 || accepted <= config_.accept_batch);
  LOOPSIM_ASSERT(!owed || unfinished || descriptors);
  LOOPSIM_ASSERT(!owed || why != BatchStop::again);
  (door == Door::listener ? accept_owed_ : handoff_owed_) = owed;
  observer_.batch_end(worker_, door, accepted, why, owed);
  return accepted;
}

// R4: the backlog is still queued and an edge-triggered listener will not announce it again
// (after EMFILE, ENFILE, and ENOBUFS too).
void Loop::note_accept_error() {
  if (!config_.emfile_retry) return;
  accept_blocked_ = true;
  retry_now_ = false;
  retry_at_ = kernel_.now() + config_.emfile_backoff;
  // R10: the accept thread frees no descriptor itself; a worker's close tells it of one. A
  // close just before the flag is raised is missed, and the back-off covers it.
  if (accept_only_) awaits_close_.store(true);
}

// R9 and R10: refuse when the table is full; otherwise keep the connection or hand it over.
void Loop::place(int fd) {
  if (table_full() && !draining_) {  // only with on_full = refuse: back-pressure stopped the batch before
    observer_.refused(worker_, fd);
    kernel_.abort(fd);
    return;
  }
  if (sharing()) {
    Loop& to = group_->pick(*this, kernel_.now(), config_.share_busy, config_.share_counts_siblings);
    if (&to != this && to.offer(fd)) {  // a failed hand-off keeps it here
      observer_.handed_off(worker_, to.worker(), fd);
      return;
    }
    // The accept thread tries every worker before it keeps one; kept, it is served here
    // rather than dropped (only a full mailbox or a shutting-down sibling refuses).
    for (std::size_t i = 0; accept_only_ && i < group_->size(); ++i) {
      Loop& sibling = group_->at(i);
      if (&sibling != &to && sibling.offer(fd)) {
        observer_.handed_off(worker_, sibling.worker(), fd);
        return;
      }
    }
  }
  admit(fd);
}

}  // namespace loopsim
