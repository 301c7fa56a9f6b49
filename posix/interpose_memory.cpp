// Shared memory under the target's memory cap (docs/targets.md). RLIMIT_DATA, which loopsim
// sets on the target's process, bounds its heap and private mappings but not a MAP_SHARED one,
// anonymous or of a file in memory (tmpfs: shm_open, memfd_create), whose pages are as real.
// RLIMIT_AS would count them, but it counts address space reserved and never used as well:
// V8 (node) reserves far more than 4 GiB it never touches, and would not start. So the seam
// counts what the program maps shared in memory, and refuses past target_data_max (ENOMEM,
// as Linux says of a limit). glibc's own mappings (malloc's) are private, and its calls are
// never interposed: only the program's are counted.
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/vfs.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <iterator>
#include <map>

#include "base/assert.hpp"
#include "posix/interpose.hpp"
#include "target/target.hpp"


using loopsim::posix::real;

namespace {

// The program's shared mappings in memory, by start address: their lengths, and their sum.
// Made at first use: a library's constructor may map memory before this one's globals are.
// An allocator calls munmap while it holds its own lock (jemalloc does), so a munmap touches
// none of this, and allocates nothing, until the program has mapped shared memory; and the
// lock is a spin lock, not a mutex, which the seam would serve as a simulated thread's wait.
struct Shared {
  std::map<std::uintptr_t, std::size_t> regions;
  std::size_t bytes = 0;
};

std::atomic<bool> any_shared{false};
std::atomic_flag shared_busy = ATOMIC_FLAG_INIT;

struct Locked {
  Locked() {
    while (shared_busy.test_and_set(std::memory_order_acquire)) {
    }
  }
  ~Locked() { shared_busy.clear(std::memory_order_release); }
};

Shared& shared() {
  static Shared* made = new Shared;  // never destroyed: mappings outlive static destructors
  return *made;
}

bool in_memory(int flags, int fd) {
  if ((flags & MAP_SHARED) == 0) return false;
  if ((flags & MAP_ANONYMOUS) != 0) return true;
  struct statfs fs {};
  return ::fstatfs(fd, &fs) == 0 && (fs.f_type == TMPFS_MAGIC || fs.f_type == HUGETLBFS_MAGIC);
}

std::size_t page_rounded(std::size_t length) {
  const std::size_t page = 4096;
  return (length + page - 1) / page * page;
}

// Forgets [start, start + length) of the shared regions, keeping what lies either side.
void forget(std::uintptr_t start, std::size_t length) {
  auto& shared_regions = shared().regions;
  std::size_t& shared_bytes = shared().bytes;
  const std::uintptr_t end = start + page_rounded(length);
  auto it = shared_regions.upper_bound(start);
  if (it != shared_regions.begin()) --it;
  while (it != shared_regions.end() && it->first < end) {
    const std::uintptr_t from = it->first, to = from + it->second;
    if (to <= start) {
      ++it;
      continue;
    }
    it = shared_regions.erase(it);
    LOOPSIM_ASSERT(shared_bytes >= to - from);  // the count is the regions' sum
    shared_bytes -= to - from;
    if (from < start) {
      shared_regions[from] = start - from;
      shared_bytes += start - from;
    }
    if (to > end) {
      shared_regions[end] = to - end;
      shared_bytes += to - end;
    }
  }
}

void* map_counted(void* address, std::size_t length, int prot, int flags, int fd, off_t offset) {
  if (!in_memory(flags, fd)) return LOOPSIM_REAL(mmap)(address, length, prot, flags, fd, offset);
  Locked locked;
  Shared& s = shared();
  if (s.bytes + page_rounded(length) > std::size_t(loopsim::sim::target_data_max)) {
    errno = ENOMEM;
    return MAP_FAILED;
  }
  void* made = LOOPSIM_REAL(mmap)(address, length, prot, flags, fd, offset);
  if (made == MAP_FAILED) return made;
  forget(std::uintptr_t(made), length);  // MAP_FIXED may have replaced one
  s.regions[std::uintptr_t(made)] = page_rounded(length);
  s.bytes += page_rounded(length);
  LOOPSIM_ASSERT(s.bytes <= std::size_t(loopsim::sim::target_data_max));  // checked before the mapping
  any_shared.store(true, std::memory_order_release);
  return made;
}

}  // namespace

SEAM_EXPORT void* mmap(void* address, size_t length, int prot, int flags, int fd, off_t offset) noexcept {
  return map_counted(address, length, prot, flags, fd, offset);
}

SEAM_EXPORT void* mmap64(void* address, size_t length, int prot, int flags, int fd, off64_t offset) noexcept {
  return map_counted(address, length, prot, flags, fd, off_t(offset));
}

SEAM_EXPORT int munmap(void* address, size_t length) noexcept {
  int rc = LOOPSIM_REAL(munmap)(address, length);
  if (rc == 0 && any_shared.load(std::memory_order_acquire)) {
    Locked locked;
    forget(std::uintptr_t(address), length);
  }
  return rc;
}

SEAM_EXPORT void* mremap(void* old, size_t old_length, size_t length, int flags, ...) noexcept {
  va_list ap;
  va_start(ap, flags);
  void* wanted = (flags & MREMAP_FIXED) != 0 ? va_arg(ap, void*) : nullptr;
  va_end(ap);
  if (!any_shared.load(std::memory_order_acquire)) return LOOPSIM_REAL(mremap)(old, old_length, length, flags, wanted);
  Locked locked;
  Shared& s = shared();
  auto it = s.regions.upper_bound(std::uintptr_t(old));
  const bool counted = it != s.regions.begin() && std::prev(it)->first + std::prev(it)->second > std::uintptr_t(old);
  const std::size_t grown = page_rounded(length) - std::min(page_rounded(length), page_rounded(old_length));
  if (counted && s.bytes + grown > std::size_t(loopsim::sim::target_data_max)) {
    errno = ENOMEM;
    return MAP_FAILED;
  }
  void* made = LOOPSIM_REAL(mremap)(old, old_length, length, flags, wanted);
  if (made == MAP_FAILED || !counted) return made;
  forget(std::uintptr_t(old), old_length);
  forget(std::uintptr_t(made), length);
  s.regions[std::uintptr_t(made)] = page_rounded(length);
  s.bytes += page_rounded(length);
  return made;
}
