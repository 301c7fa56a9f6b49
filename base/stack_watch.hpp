// Where the simulation's fiber stacks are and how deep each is used, for a memory snapshot that
// copies only the used part of each (explore/arena.hpp). The scheduler reports every stack it
// allocates and frees, and the depth of a stack it is about to switch away from; nothing
// listens unless a snapshotting search installed a watch on this thread.
#pragma once

#include <cstddef>

namespace loopsim::base {

class StackWatch {
 public:
  virtual void allocated(void* low, std::size_t bytes) = 0;
  virtual void freed(void* low) = 0;
  // The running stack is in use from `sp` up (give the address of a local of the function that
  // switches away: what lies below it is what the switch itself pushes).
  virtual void depth(const void* sp) = 0;

 protected:
  ~StackWatch() = default;
};

inline thread_local StackWatch* stack_watch = nullptr;

inline void note_stack_depth(const void* sp) {
  if (stack_watch != nullptr) stack_watch->depth(sp);
}

}  // namespace loopsim::base
