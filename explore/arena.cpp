#include "explore/arena.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "base/assert.hpp"
#include "base/stack_watch.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define LOOPSIM_ARENA_ASAN 1
#endif

namespace loopsim::explore {

namespace {

thread_local Arena* in_use = nullptr;

// Every arena's range, for operator delete to tell arena memory from the heap's on any thread.
constexpr int ranges_max = 16;
std::atomic<const char*> range_low[ranges_max];
std::atomic<const char*> range_high[ranges_max];
std::atomic<int> arenas_live{0};  // ranges held: 0 spares every delete the search of them

bool owned_by_an_arena(const void* p);

constexpr std::size_t small_max = 1024;  // sizes up to this come in steps of 16
constexpr std::size_t small_classes = small_max / 16 + 1;
constexpr std::size_t large_classes = 48;  // powers of two above small_max
constexpr std::size_t stacks_max = 64;
constexpr std::size_t prefix = 16;  // before each block: its size (0: an aligned block's padding)
// What of a stack below the depth a switch noted may still be in use: the frames of the
// switch itself.
constexpr std::size_t switch_frames = 4096;

std::size_t log2_ceil(std::size_t n) {
  std::size_t bits = 0;
  while ((std::size_t{1} << bits) < n) ++bits;
  return bits;
}

}  // namespace

// At the arena's start, inside it: saved and restored with everything else.
struct Arena::Header {
  std::size_t top = 0;  // offset of the first byte never handed out
  void* small[small_classes] = {};
  void* large[large_classes] = {};
  struct Stack {
    char* low;
    char* high;
    char* mark;  // the lowest address that may be in use
  };
  Stack stacks[stacks_max] = {};
  std::size_t stack_count = 0;
};

class Arena::Watch final : public base::StackWatch {
 public:
  explicit Watch(Arena& arena) : arena_(arena) {}
  void allocated(void* low, std::size_t bytes) override {
    if (!arena_.owns(low)) return;
    Header& h = arena_.header();
    LOOPSIM_ASSERT_OP(h.stack_count, <, stacks_max);
    // Nothing is in use yet but what the fiber's start puts at its top.
    char* l = static_cast<char*>(low);
    char* fresh = bytes > 2 * switch_frames ? l + bytes - 2 * switch_frames : l;
    h.stacks[h.stack_count++] = Header::Stack{l, l + bytes, fresh};
  }
  void freed(void* low) override {
    if (!arena_.owns(low)) return;
    Header& h = arena_.header();
    for (std::size_t i = 0; i < h.stack_count; ++i) {
      if (h.stacks[i].low != low) continue;
      h.stacks[i] = h.stacks[--h.stack_count];
      return;
    }
  }
  void depth(const void* sp) override {
    if (!arena_.owns(sp)) return;
    Header& h = arena_.header();
    const char* at = static_cast<const char*>(sp);
    for (std::size_t i = 0; i < h.stack_count; ++i) {
      Header::Stack& s = h.stacks[i];
      if (at < s.low || at >= s.high) continue;
      std::uintptr_t mark = (reinterpret_cast<std::uintptr_t>(at) - switch_frames) & ~std::uintptr_t(63);
      s.mark = std::max(s.low, reinterpret_cast<char*>(mark));
      return;
    }
  }

 private:
  Arena& arena_;
};

Arena::Arena(std::size_t reserve) : reserve_(reserve) {
  // Only a program that routes operator new here (explore/arena_hook.cpp) can fill an arena.
  LOOPSIM_ASSERT(arena_routing_installed());
  void* p = ::mmap(nullptr, reserve, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  base_ = static_cast<char*>(p);
  Header* h = new (base_) Header;
  h->top = (sizeof(Header) + 63) & ~std::size_t(63);
  int slot = 0;
  for (; slot < ranges_max; ++slot) {
    const char* expected = nullptr;
    if (range_low[slot].compare_exchange_strong(expected, base_)) break;
  }
  LOOPSIM_ASSERT_OP(slot, <, ranges_max);
  range_high[slot].store(base_ + reserve_);
  arenas_live.fetch_add(1, std::memory_order_acq_rel);
  watch_ = new Watch(*this);
}

Arena::~Arena() {
#ifdef LOOPSIM_ARENA_ASAN
  // The addresses may be mapped again, for another arena: no sanitizer marks of this one's
  // frames must be left on them.
  __asan_unpoison_memory_region(base_, high_water_);
#endif
  for (int slot = 0; slot < ranges_max; ++slot) {
    if (range_low[slot].load() != base_) continue;
    range_high[slot].store(nullptr);
    range_low[slot].store(nullptr);
    arenas_live.fetch_sub(1, std::memory_order_acq_rel);
  }
  delete watch_;
  ::munmap(base_, reserve_);
}

Arena::Header& Arena::header() const { return *reinterpret_cast<Header*>(base_); }

std::size_t Arena::used() const { return header().top; }

void* Arena::allocate(std::size_t bytes, std::size_t align) {
  if (align > 16) {
    // Padding before the aligned block says where the real one starts.
    char* raw = static_cast<char*>(allocate(bytes + align));
    auto aligned = reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(raw) + align - 1) & ~(align - 1));
    if (aligned == raw) return raw;
    auto* pad = reinterpret_cast<std::uint64_t*>(aligned - prefix);
    pad[0] = 0;
    pad[1] = reinterpret_cast<std::uintptr_t>(raw);
    return aligned;
  }
  Header& h = header();
  std::size_t size = std::max<std::size_t>(bytes, 1);
  void** list;
  if (size <= small_max) {
    size = (size + 15) & ~std::size_t(15);
    list = &h.small[size / 16];
  } else {
    std::size_t bits = log2_ceil(size);
    if (bits >= large_classes) throw std::bad_alloc();
    size = std::size_t{1} << bits;
    list = &h.large[bits];
  }
  if (*list != nullptr) {
    void* block = *list;
    std::memcpy(list, block, sizeof(void*));
    return block;
  }
  if (h.top + prefix + size > reserve_) throw std::bad_alloc();
  char* at = base_ + h.top;
  h.top += prefix + size;
  high_water_ = std::max(high_water_, h.top);
  reinterpret_cast<std::uint64_t*>(at)[0] = size;
  return at + prefix;
}

void Arena::release(void* p) noexcept {
  auto* pad = reinterpret_cast<std::uint64_t*>(static_cast<char*>(p) - prefix);
  if (pad[0] == 0) {  // an aligned block's padding
    release(reinterpret_cast<void*>(pad[1]));
    return;
  }
  Header& h = header();
  std::size_t size = pad[0];
  void** list = size <= small_max ? &h.small[size / 16] : &h.large[log2_ceil(size)];
  std::memcpy(p, list, sizeof(void*));
  *list = p;
}

void Arena::unpoison_stacks() const {
#ifdef LOOPSIM_ARENA_ASAN
  // The sanitizer marks the guards around live frames' locals; a snapshot copies the frames
  // whole, and a restore writes them back over whatever lies there since.
  const Header& h = header();
  for (std::size_t i = 0; i < h.stack_count; ++i) {
    __asan_unpoison_memory_region(h.stacks[i].low, std::size_t(h.stacks[i].high - h.stacks[i].low));
  }
#endif
}

void Arena::save(Image& into) const {
  unpoison_stacks();
  const Header& h = header();
  std::vector<std::pair<const char*, const char*>> holes;
  for (std::size_t i = 0; i < h.stack_count; ++i) holes.emplace_back(h.stacks[i].low, h.stacks[i].mark);
  std::sort(holes.begin(), holes.end());
  into.segments_.clear();
  std::size_t from = 0, total = 0;
  for (auto [low, high] : holes) {
    std::size_t hole_at = std::size_t(low - base_), hole_end = std::size_t(high - base_);
    if (hole_at > from) into.segments_.emplace_back(from, hole_at - from);
    from = std::max(from, hole_end);
  }
  if (h.top > from) into.segments_.emplace_back(from, h.top - from);
  for (auto [offset, length] : into.segments_) total += length;
  if (into.capacity_ < total) {
    into.capacity_ = total + total / 4;
    into.data_.reset(new char[into.capacity_]);
  }
  into.size_ = total;
  std::size_t at = 0;
  for (auto [offset, length] : into.segments_) {
#ifdef LOOPSIM_ARENA_ASAN
    // A block that was a fiber's stack before it was freed and handed out again may still
    // carry the sanitizer's marks of frames long gone: they mark nothing now.
    __asan_unpoison_memory_region(base_ + offset, length);
#endif
    std::memcpy(into.data_.get() + at, base_ + offset, length);
    at += length;
  }
}

void Arena::restore(const Image& from) {
#ifdef LOOPSIM_ARENA_ASAN
  // What was a fiber's stack since the snapshot may be a heap block again after it: the
  // sanitizer's marks on the frames that were there go too.
  __asan_unpoison_memory_region(base_, high_water_);
#endif
  std::size_t at = 0;
  for (auto [offset, length] : from.segments_) {
    std::memcpy(base_ + offset, from.data_.get() + at, length);
    at += length;
  }
  unpoison_stacks();  // the restored stacks' (those it had then)
}

Arena::Use::Use(Arena& arena) : previous_(in_use) { in_use = &arena; }

Arena::Use::~Use() { in_use = previous_; }

base::StackWatch* Arena::watch() const { return watch_; }

Arena::Pause::Pause() : previous_(in_use) { in_use = nullptr; }
Arena::Pause::~Pause() { in_use = previous_; }

Arena* Arena::active() { return in_use; }

namespace {

bool owned_by_an_arena(const void* p) {
  // No arena lives (the live server, a run, a check): nothing is arena memory.
  if (arenas_live.load(std::memory_order_acquire) == 0) return false;
  const char* at = static_cast<const char*>(p);
  for (int slot = 0; slot < ranges_max; ++slot) {
    const char* low = range_low[slot].load(std::memory_order_acquire);
    if (low == nullptr || at < low) continue;
    const char* high = range_high[slot].load(std::memory_order_acquire);
    if (high != nullptr && at < high) return true;
  }
  return false;
}

}  // namespace

void* arena_allocate(std::size_t bytes, std::size_t align) {
  if (in_use != nullptr) return in_use->allocate(bytes, align);
  void* p = align > 16 ? std::aligned_alloc(align, (std::max<std::size_t>(bytes, 1) + align - 1) & ~(align - 1))
                       : std::malloc(std::max<std::size_t>(bytes, 1));
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void arena_release(void* p) noexcept {
  if (p == nullptr) return;
  if (!owned_by_an_arena(p)) {
    std::free(p);
    return;
  }
  // Arena memory is released into the arena in use; one freed from elsewhere is abandoned with
  // its arena.
  if (in_use != nullptr && in_use->owns(p)) in_use->release(p);
}

// Without explore/arena_hook (a program that links the library alone), nothing routes
// allocations: no arena may hold a world, and the explorer replays its branches.
__attribute__((weak)) bool arena_routing_installed() { return false; }

}  // namespace loopsim::explore
