// The loop's knobs. Every rule has one that turns it off, so that each rule can be sabotaged
// and each checker shown to catch the sabotage.
#pragma once

#include <cstdint>

#include "realloop/kernel.hpp"

namespace loopsim {

struct LoopConfig {
  // R1: at most this many accepts per door per pass; 0 drains until EAGAIN (bounded only by
  // max_connections).
  int accept_batch = 16;
  // R1: take the batch after the pass's other events; false takes it at the listen event's
  // position in the list the wait returned.
  bool accept_after_events = true;
  // R2: a batch stopped by its count leaves the door owed; false owes nothing.
  bool owe_unfinished_batch = true;
  // R2: the wait does not block while a door is owed; false blocks for idle_timeout.
  bool nonblocking_wait_when_owed = true;
  // The wait's timeout when nothing is owed.
  Nanos idle_timeout = std::chrono::seconds(1);
  // Events taken from one wait.
  int max_events = 1024;
  // Connections held at once; also bounds a drain with accept_batch = 0.
  int max_connections = 1024;
  // Largest request head accepted (431 beyond it).
  int max_request_head = 8192;
};

}  // namespace loopsim
