// Doors and batches: R1-R4 (batch, owed flags, errors), R9 (the handle table), R10 (sharing).
#include <cerrno>

#include "realloop/assert.hpp"
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
  return fd;
}

void Loop::take_batch(Door door) {
  if (door == Door::listener && accept_blocked_) {  // R4: this batch is the retry
    accept_blocked_ = retry_now_ = false;
  }
  int accepted = 0;
  BatchStop why = BatchStop::again;
  for (;;) {
    if (config_.accept_batch > 0 && accepted == config_.accept_batch) {
      why = BatchStop::count;
      break;
    }
    if (connection_count_ >= std::size_t(config_.max_connections)) {
      why = BatchStop::max_connections;
      break;
    }
    if (table_full() && config_.on_full == OnFull::backpressure) {
      why = BatchStop::handles_full;
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
    ++inverted_accepts_;
    if (door == Door::handoff) observer_.accepted(worker_, door, fd);
    if (door == Door::listener) {
      place(fd);
    } else {
      admit(fd);
    }
  }
  // R2/R3: owed only when the count stopped the drain; R9: or back-pressure held it.
  bool owed = why == BatchStop::count && config_.owe_unfinished_batch;
  if (why == BatchStop::emfile || why == BatchStop::enfile) note_accept_error(why);
  if (why == BatchStop::emfile || why == BatchStop::enfile) owed = config_.owe_after_emfile;
  if (why == BatchStop::handles_full) {
    backpressured_ = true;
    observer_.backpressured(worker_, int(connection_count_));
  }
  (door == Door::listener ? accept_owed_ : handoff_owed_) = owed;
  observer_.batch_end(worker_, door, accepted, why, owed);
}

// R4: the backlog is still queued and an edge-triggered listener will not announce it again.
void Loop::note_accept_error(BatchStop) {
  if (!config_.emfile_retry) return;
  accept_blocked_ = true;
  retry_now_ = false;
  retry_at_ = kernel_.now() + config_.emfile_backoff;
}

// R9 and R10: refuse when the table is full; otherwise keep the connection or hand it over.
void Loop::place(int fd) {
  if (table_full()) {  // only with on_full = refuse: back-pressure stopped the batch before
    observer_.refused(worker_, fd);
    kernel_.abort(fd);
    return;
  }
  if (group_ != nullptr && config_.accept_share && !shutting_down_) {
    Loop& to = group_->pick(*this, kernel_.now(), config_.share_busy);
    if (&to != this && to.offer(fd)) {  // a failed hand-off keeps it here
      observer_.handed_off(worker_, to.worker(), fd);
      return;
    }
  }
  admit(fd);
}

}  // namespace loopsim
