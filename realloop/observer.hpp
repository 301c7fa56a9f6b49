// What the loop reports about itself. The simulation records these as trace events; the live
// build may log them. Observers watch; they never change what the loop does.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "realloop/kernel.hpp"

namespace loopsim {

// A door is where connections come in: the listener, or the hand-off channel on which a sibling
// worker passes connections (R1).
enum class Door : std::uint8_t { listener, handoff };

// Why an accept batch ended.
enum class BatchStop : std::uint8_t {
  count,            // the batch reached accept_batch (R2: the door is owed)
  again,            // EAGAIN: the queue is empty
  emfile,           // out of descriptors in this process
  enfile,           // out of descriptors system-wide
  enobufs,          // out of kernel memory
  max_connections,  // the loop holds its maximum
  handles_full,     // R9: the handle table has no room (back-pressure: the door is owed)
  closed,           // R5: the listener is closed; nothing more is accepted
  error,            // any other error
};

// Where posts were drained (R7).
enum class DrainPoint : std::uint8_t {
  top,    // at the top of a round
  chunk,  // between callbacks, every drain_chunk of them
};

const char* door_name(Door door);
const char* batch_stop_name(BatchStop stop);
const char* drain_point_name(DrainPoint point);

class LoopObserver {
 public:
  virtual ~LoopObserver() = default;
  // A pass starts with its wait; `timeout` is the wait's (0: non-blocking; none: until ready).
  virtual void pass_begin(int /*worker*/, std::uint64_t /*pass*/, std::optional<Duration> /*timeout*/) {}
  // The wait returned these events.
  virtual void events(int /*worker*/, std::uint64_t /*pass*/, std::span<const PollEvent>) {}
  // One accept call: `result` is the new descriptor or -errno.
  virtual void accepted(int /*worker*/, Door, int /*result*/) {}
  virtual void batch_end(int /*worker*/, Door, int /*accepted*/, BatchStop, bool /*owed*/) {}
  virtual void request_begin(int /*worker*/, int /*fd*/, std::string_view /*path*/) {}
  virtual void request_end(int /*worker*/, int /*fd*/, int /*status*/) {}
  virtual void closed(int /*worker*/, int /*fd*/) {}
  virtual void pass_end(int /*worker*/, std::uint64_t /*pass*/, bool /*accept_owed*/,
                        bool /*handoff_owed*/) {}
  // R7: `count` posts from other threads were taken off the queue and run.
  virtual void posts_drained(int /*worker*/, DrainPoint, int /*count*/) {}
  // R9: the handle table was full. refused: the connection was accepted and reset;
  // backpressured: accepting stopped with `held` connections, the rest stay queued.
  virtual void refused(int /*worker*/, int /*fd*/) {}
  virtual void backpressured(int /*worker*/, int /*held*/) {}
  // R5: shutdown began; the listener was closed; the loop returned.
  virtual void shutdown_begin(int /*worker*/) {}
  virtual void listener_closed(int /*worker*/) {}
  virtual void loop_exit(int /*worker*/, int /*open_connections*/) {}
  // R10: an accepted connection was handed to sibling `to` (before it closes here).
  virtual void handed_off(int /*worker*/, int /*to*/, int /*fd*/) {}
};

}  // namespace loopsim
