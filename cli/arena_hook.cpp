// The replaceable allocation functions, routed to the arena in use on this thread
// (explore/arena.hpp): what lets the explorer save and restore a world byte for byte. The
// loopsim program and its tests link this file; the library does not install it for anyone.
#include <cstddef>
#include <new>

#include "explore/arena.hpp"

namespace loopsim::explore {
bool arena_routing_installed() { return true; }
}  // namespace loopsim::explore

using loopsim::explore::arena_allocate;
using loopsim::explore::arena_release;

void* operator new(std::size_t n) { return arena_allocate(n, 16); }
void* operator new[](std::size_t n) { return arena_allocate(n, 16); }
void* operator new(std::size_t n, std::align_val_t a) { return arena_allocate(n, std::size_t(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return arena_allocate(n, std::size_t(a)); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return arena_allocate(n, 16);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return arena_allocate(n, 16);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept { arena_release(p); }
void operator delete[](void* p) noexcept { arena_release(p); }
void operator delete(void* p, std::size_t) noexcept { arena_release(p); }
void operator delete[](void* p, std::size_t) noexcept { arena_release(p); }
void operator delete(void* p, std::align_val_t) noexcept { arena_release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { arena_release(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { arena_release(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { arena_release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { arena_release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { arena_release(p); }
