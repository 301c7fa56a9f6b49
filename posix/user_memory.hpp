#pragma once
// The program's memory as the kernel reaches it: a copy that fails (Linux's EFAULT) where the
// memory cannot be read or written, instead of a fault inside the seam. The copy is the kernel's
// own, by process_vm_readv or process_vm_writev on this process; where those calls are not
// allowed (a seccomp filter of the program's), a plain copy.

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

namespace loopsim::posix {

// Copies `size` bytes between the seam's memory at `ours` and the program's at `theirs`: into
// the program's when `out`, else from it.
inline bool copy_user(void* ours, void* theirs, std::size_t size, bool out) {
  if (size == 0) return true;
  iovec local{ours, size}, remote{theirs, size};
  const ssize_t n = out ? ::process_vm_writev(::getpid(), &local, 1, &remote, 1, 0)
                        : ::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0);
  if (n == ssize_t(size)) return true;
  if (n < 0 && (errno == ENOSYS || errno == EPERM)) {
    out ? std::memcpy(theirs, ours, size) : std::memcpy(ours, theirs, size);
    return true;
  }
  return false;
}

// Reads `size` bytes of the program's memory at `from` into `to`.
inline bool copy_in(void* to, const void* from, std::size_t size) {
  return copy_user(to, const_cast<void*>(from), size, false);
}

// Writes `size` bytes from `from` into the program's memory at `to`.
inline bool copy_out(void* to, const void* from, std::size_t size) {
  return copy_user(const_cast<void*>(from), to, size, true);
}

// Writes a thread id (or a cleared word) where clone's CLONE_*_SETTID or CLONE_CHILD_CLEARTID
// pointer says, as Linux's put_user does there: an address that cannot be written is let be,
// and the call goes on.
inline void put_thread_word(int* where, int value) {
  if (where != nullptr) copy_out(where, &value, sizeof value);
}

}  // namespace loopsim::posix
