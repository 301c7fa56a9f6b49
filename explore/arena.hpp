// An arena: one region of memory that holds a whole simulated world, its objects and the stacks
// of its fibers, so that the world's state can be saved and restored byte for byte. A search
// resumes a branch by restoring the state it branched from (as SimGrid's model checker restores
// its snapshots of the application's memory), instead of replaying the branch from time 0.
//
// While an arena is in use on a thread (Arena::Use), every operator new on that thread takes
// its memory from the arena, so that whatever the world allocates lands there. A snapshot
// (Image) copies the arena from its start to its top, less the unused part of each fiber stack
// (base/stack_watch.hpp says how deep each is). Restoring one puts every byte back, the
// allocator's own lists included: objects allocated after the snapshot are simply gone, and no
// destructor runs.
//
// What lives in an arena may point outside it only at what does not change while the arena is
// in use (a scenario, a vtable, a chooser that keeps no state of its own); nothing outside may
// keep pointers into it but the code that restores it. Code outside must not free (or allocate
// into) an arena it does not run in: Arena::Pause stops routing allocations for a while.
//
// Routing is the program's choice, not the library's: `cli/arena_hook.cpp` replaces the global
// allocation functions with arena_allocate and arena_release, and only a program that links it
// (the `loopsim` program and the test binary) routes. A program that links loopsim::explore
// without it keeps its own allocator: arena_routing_installed() is false, no Arena may be made,
// and the explorer resumes branches by replaying them (ExploreResult says it took no snapshots).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace loopsim::base {
class StackWatch;
}

namespace loopsim::explore {

// The allocation functions a program installs to route operator new and delete (see above):
// from the arena in use on this thread, else from malloc; a block is released into the arena
// that holds it, or to free.
void* arena_allocate(std::size_t bytes, std::size_t align);
void arena_release(void* p) noexcept;
// Whether this program routes them (cli/arena_hook.cpp defines it true).
bool arena_routing_installed();

class Arena {
 public:
  // Reserves `reserve` bytes of address space (not memory: pages are taken as they are used).
  explicit Arena(std::size_t reserve = std::size_t(16) << 30);
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  ~Arena();

  // 16-byte aligned. Throws std::bad_alloc when the reservation is full.
  void* allocate(std::size_t bytes, std::size_t align = 16);
  void release(void* p) noexcept;
  bool owns(const void* p) const { return p >= base_ && p < base_ + reserve_; }
  // Bytes from the start to the top: what a snapshot copies at most.
  std::size_t used() const;

  // A saved state of an arena.
  // Its buffer is kept when an image is saved again: one image reused costs no allocation.
  class Image {
   public:
    std::size_t bytes() const { return size_; }

   private:
    friend class Arena;
    std::unique_ptr<char[]> data_;  // not zeroed: every byte is copied in
    std::size_t size_ = 0;
    std::size_t capacity_ = 0;
    std::vector<std::pair<std::size_t, std::size_t>> segments_;  // offset, length
  };
  void save(Image& into) const;
  void restore(const Image& from);

  // Makes this arena the one operator new allocates from on this thread, for the object's
  // lifetime.
  class Use {
   public:
    explicit Use(Arena& arena);
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;
    ~Use();

   private:
    Arena* previous_;
  };
  // Allocations on this thread go to the ordinary heap for the object's lifetime.
  class Pause {
   public:
    Pause();
    Pause(const Pause&) = delete;
    Pause& operator=(const Pause&) = delete;
    ~Pause();

   private:
    Arena* previous_;
  };
  // The arena in use on this thread, or null.
  static Arena* active();
  // What a fiber stack allocated in this arena must be reported to (base/stack_watch.hpp), so
  // that a snapshot copies only its used part.
  base::StackWatch* watch() const;

 private:
  struct Header;
  class Watch;
  Header& header() const;
  void unpoison_stacks() const;

  char* base_ = nullptr;
  std::size_t reserve_ = 0;
  std::size_t high_water_ = 0;  // the highest top reached, restores or not
  Watch* watch_ = nullptr;
};

}  // namespace loopsim::explore
