// What the loop reports about itself. The simulation records these as trace events; the live
// build may log them. Observers watch; they never change what the loop does.
#pragma once

#include <cstdint>
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
  error,            // any other error
};

const char* door_name(Door door);
const char* batch_stop_name(BatchStop stop);

class LoopObserver {
 public:
  virtual ~LoopObserver() = default;
  // A pass starts with its wait; `timeout` is the wait's (0: non-blocking, wait_forever).
  virtual void pass_begin(int /*worker*/, std::uint64_t /*pass*/, Nanos /*timeout*/) {}
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
};

}  // namespace loopsim
