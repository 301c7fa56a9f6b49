// The interposers: libc's names, defined in the preloaded seam, each routing its call to the
// Seam or to libc (the rules are in seam.hpp). Only these are exported from the library.
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "posix/interpose.hpp"
#include "posix/seam.hpp"


// libc declares some pointers nonnull; a program may still pass null, and the seam checks.
#pragma GCC diagnostic ignored "-Wnonnull-compare"

using loopsim::Duration;
using loopsim::posix::current;
using loopsim::posix::real;
using namespace loopsim::posix::calls;

// Here, among the interposers, and not in the seam's engine: a sanitizer's runtime calls libc
// before it has set itself up (getrlimit), which lands in an interposer and asks for libc's, in
// code that must not be instrumented yet.
void* loopsim::posix::real_symbol(const char* name) {
  void* symbol = ::dlsym(RTLD_NEXT, name);
  if (symbol == nullptr) {  // only if libc lacks what it has always had
    static const char text[] = "loopsim seam: a libc symbol is missing\n";
    ::syscall(SYS_write, 2, text, sizeof text - 1);
    ::syscall(SYS_exit_group, 2);
  }
  return symbol;
}

namespace {

long read_socket(const char* call, int fd, void* buffer, size_t size, int flags) {
  return served(call, [&] {
    return long(current->read(fd, buffer, size, (flags & MSG_DONTWAIT) != 0, (flags & MSG_PEEK) != 0));
  });
}

// Linux signals a writer with SIGPIPE whenever a write fails EPIPE (a pipe without a reader, a
// socket shut for writing or whose peer is gone: sk_stream_error, pipe_write, unix_stream_sendmsg),
// unless the call passed MSG_NOSIGNAL; the signal is the calling thread's. A scenario never
// sends SIGPIPE, so its disposition and the thread's mask are the real ones, and the real kernel
// is asked to raise it: ignored, it is dropped; caught, the handler runs before the call returns;
// blocked, it waits pending. Only the default action is the seam's to carry out: the process
// ends, and the run records how (Seam::exited). errno is EPIPE after a handler, as libc sets it
// after the kernel's return, where the handler ran.
long broken_pipe(long rc, int flags) {
  if (rc >= 0 || errno != EPIPE || (flags & MSG_NOSIGNAL) != 0 || !making()) return rc;
  struct sigaction action{};
  LOOPSIM_REAL(sigaction)(SIGPIPE, nullptr, &action);
  sigset_t blocked;
  sigemptyset(&blocked);
  LOOPSIM_REAL(pthread_sigmask)(SIG_BLOCK, nullptr, &blocked);
  if (action.sa_handler == SIG_DFL && sigismember(&blocked, SIGPIPE) == 0) {
    current->on_engine([] { current->exited(128 + SIGPIPE, SIGPIPE); });
  }
  LOOPSIM_REAL(tgkill)(::getpid(), ::gettid(), SIGPIPE);
  errno = EPIPE;
  return rc;
}

long write_socket(const char* call, int fd, const void* buffer, size_t size, int flags, bool addressed = false) {
  return broken_pipe(
      served(call, [&] { return long(current->write(fd, buffer, size, (flags & MSG_DONTWAIT) != 0, addressed)); }), flags);
}

std::size_t total(const iovec* iov, int count) {
  std::size_t n = 0;
  for (int i = 0; i < count; ++i) n += iov[i].iov_len;
  return n;
}



bool any_owned(const pollfd* fds, nfds_t n) {
  for (nfds_t i = 0; i < n; ++i)
    if (owned(fds[i].fd)) return true;
  return false;
}

}  // namespace

// ---- descriptors that are made ----

SEAM_EXPORT int socket(int domain, int type, int protocol) noexcept {
  if (making()) return int(served(__func__, [&] { return long(current->socket(domain, type)); }));
  return LOOPSIM_REAL(socket)(domain, type, protocol);
}

SEAM_EXPORT int socketpair(int domain, int type, int protocol, int fds[2]) noexcept {
  if (making()) {
    if (fds == nullptr) return int(result(-EFAULT));
    return int(served(__func__, [&] { return current->socketpair(domain, type, fds); }));
  }
  return LOOPSIM_REAL(socketpair)(domain, type, protocol, fds);
}

SEAM_EXPORT int epoll_create(int size) noexcept {
  if (making()) return size <= 0 ? int(result(-EINVAL)) : int(served(__func__, [&] { return long(current->poller_create(0)); }));
  return LOOPSIM_REAL(epoll_create)(size);
}

SEAM_EXPORT int epoll_create1(int flags) noexcept {
  if (making()) return int(served(__func__, [&] { return long(current->poller_create(flags)); }));
  return LOOPSIM_REAL(epoll_create1)(flags);
}

SEAM_EXPORT int eventfd(unsigned int count, int flags) noexcept {
  if (making()) return int(served(__func__, [&] { return long(current->eventfd(count, flags)); }));
  return LOOPSIM_REAL(eventfd)(count, flags);
}

SEAM_EXPORT int pipe2(int fds[2], int flags) noexcept {
  if (making()) return int(served(__func__, [&] { return long(current->pipe(fds, flags)); }));
  return LOOPSIM_REAL(pipe2)(fds, flags);
}

SEAM_EXPORT int pipe(int fds[2]) noexcept {
  if (making()) return int(served(__func__, [&] { return long(current->pipe(fds, 0)); }));
  return LOOPSIM_REAL(pipe)(fds);
}

// Real files pass through, and take a simulated number too, so that the descriptor limit
// counts them as Linux's does (libuv's reserve descriptor is /dev/null).
namespace {
template <typename Open>
int opened(Open open) {
  if (!making()) return open();
  long slot = current->file_slot();
  if (slot < 0) return int(result(slot));
  int fd = open();
  if (fd < 0) {
    int error = errno;
    current->file_failed(int(slot));
    errno = error;
    return fd;
  }
  current->file_opened(fd, int(slot));
  return fd;
}
mode_t mode_of(int flags, va_list ap) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? mode_t(va_arg(ap, int)) : 0;
}
}  // namespace

SEAM_EXPORT int open(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_of(flags, ap);
  va_end(ap);
  return opened([&] { return LOOPSIM_REAL(open)(path, flags, mode); });
}
SEAM_EXPORT int open64(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_of(flags, ap);
  va_end(ap);
  return opened([&] { return LOOPSIM_REAL(open64)(path, flags, mode); });
}
SEAM_EXPORT int openat(int dir, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_of(flags, ap);
  va_end(ap);
  return opened([&] { return LOOPSIM_REAL(openat)(dir, path, flags, mode); });
}
SEAM_EXPORT int openat64(int dir, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_of(flags, ap);
  va_end(ap);
  return opened([&] { return LOOPSIM_REAL(openat64)(dir, path, flags, mode); });
}
SEAM_EXPORT int __open_2(const char* path, int flags) {
  return opened([&] { return LOOPSIM_REAL(__open_2)(path, flags); });
}
SEAM_EXPORT int __open64_2(const char* path, int flags) {
  return opened([&] { return LOOPSIM_REAL(__open64_2)(path, flags); });
}
SEAM_EXPORT int __openat_2(int dir, const char* path, int flags) {
  return opened([&] { return LOOPSIM_REAL(__openat_2)(dir, path, flags); });
}
SEAM_EXPORT int __openat64_2(int dir, const char* path, int flags) {
  return opened([&] { return LOOPSIM_REAL(__openat64_2)(dir, path, flags); });
}

// ---- sockets ----

SEAM_EXPORT int bind(int fd, const sockaddr* address, socklen_t length) noexcept {
  if (owned(fd)) return int(served(__func__, [&] { return long(current->bind(fd, address, length)); }));
  return LOOPSIM_REAL(bind)(fd, address, length);
}

SEAM_EXPORT int listen(int fd, int backlog) noexcept {
  if (owned(fd)) return int(served(__func__, [&] { return long(current->listen(fd, backlog)); }));
  return LOOPSIM_REAL(listen)(fd, backlog);
}

SEAM_EXPORT int accept4(int fd, sockaddr* address, socklen_t* length, int flags) {
  if (owned(fd)) return int(served(__func__, [&] { return long(current->accept(fd, address, length, flags)); }));
  return LOOPSIM_REAL(accept4)(fd, address, length, flags);
}

SEAM_EXPORT int accept(int fd, sockaddr* address, socklen_t* length) {
  if (owned(fd)) return int(served(__func__, [&] { return long(current->accept(fd, address, length, 0)); }));
  return LOOPSIM_REAL(accept)(fd, address, length);
}

SEAM_EXPORT int connect(int fd, const sockaddr* address, socklen_t length) {
  if (owned(fd)) return int(served(__func__, [&] { return current->connect(fd, address, length); }));
  return LOOPSIM_REAL(connect)(fd, address, length);
}

SEAM_EXPORT int setsockopt(int fd, int level, int name, const void* value, socklen_t length) noexcept {
  if (owned(fd)) return int(served(__func__, [&] { return long(current->setsockopt(fd, level, name, value, length)); }));
  return LOOPSIM_REAL(setsockopt)(fd, level, name, value, length);
}

SEAM_EXPORT int getsockopt(int fd, int level, int name, void* value, socklen_t* length) noexcept {
  if (owned(fd)) return int(served(__func__, [&] { return long(current->getsockopt(fd, level, name, value, length)); }));
  return LOOPSIM_REAL(getsockopt)(fd, level, name, value, length);
}

SEAM_EXPORT int getsockname(int fd, sockaddr* address, socklen_t* length) noexcept {
  if (owned(fd)) return int(served(__func__, [&] { return long(current->sockname(fd, address, length, false)); }));
  return LOOPSIM_REAL(getsockname)(fd, address, length);
}

SEAM_EXPORT int getpeername(int fd, sockaddr* address, socklen_t* length) noexcept {
  if (owned(fd)) return int(served(__func__, [&] { return long(current->sockname(fd, address, length, true)); }));
  return LOOPSIM_REAL(getpeername)(fd, address, length);
}

SEAM_EXPORT int shutdown(int fd, int how) noexcept {
  if (owned(fd)) return int(served(__func__, [&] { return long(current->shutdown(fd, how)); }));
  return LOOPSIM_REAL(shutdown)(fd, how);
}

// ---- reading and writing ----

SEAM_EXPORT ssize_t read(int fd, void* buffer, size_t size) {
  if (owned(fd)) return served(__func__, [&] { return long(current->read(fd, buffer, size, false)); });
  return LOOPSIM_REAL(read)(fd, buffer, size);
}
// _FORTIFY_SOURCE's variants check what glibc's do before they read: a size past the buffer's
// is glibc's __chk_fail (the message, then SIGABRT), as it is without the seam.
extern "C" [[noreturn]] void __chk_fail() noexcept;
SEAM_EXPORT ssize_t __read_chk(int fd, void* buffer, size_t size, size_t buffer_size) {
  if (size > buffer_size) __chk_fail();
  return read(fd, buffer, size);
}

SEAM_EXPORT ssize_t write(int fd, const void* buffer, size_t size) {
  if (owned(fd)) return broken_pipe(served(__func__, [&] { return long(current->write(fd, buffer, size, false)); }), 0);
  return LOOPSIM_REAL(write)(fd, buffer, size);
}

SEAM_EXPORT ssize_t recv(int fd, void* buffer, size_t size, int flags) {
  if (owned(fd)) return read_socket(__func__, fd, buffer, size, flags);
  return LOOPSIM_REAL(recv)(fd, buffer, size, flags);
}
SEAM_EXPORT ssize_t __recv_chk(int fd, void* buffer, size_t size, size_t buffer_size, int flags) {
  if (size > buffer_size) __chk_fail();
  return recv(fd, buffer, size, flags);
}

SEAM_EXPORT ssize_t recvfrom(int fd, void* buffer, size_t size, int flags, sockaddr* address, socklen_t* length) {
  if (owned(fd)) {
    ssize_t n = read_socket(__func__, fd, buffer, size, flags);
    if (n >= 0 && address != nullptr) current->sockname(fd, address, length, true);
    return n;
  }
  return LOOPSIM_REAL(recvfrom)(fd, buffer, size, flags, address, length);
}
SEAM_EXPORT ssize_t __recvfrom_chk(int fd, void* buffer, size_t size, size_t buffer_size, int flags,
                                   sockaddr* address, socklen_t* length) {
  if (size > buffer_size) __chk_fail();
  return recvfrom(fd, buffer, size, flags, address, length);
}

SEAM_EXPORT ssize_t send(int fd, const void* buffer, size_t size, int flags) {
  if (owned(fd)) return write_socket(__func__, fd, buffer, size, flags);
  return LOOPSIM_REAL(send)(fd, buffer, size, flags);
}

SEAM_EXPORT ssize_t sendto(int fd, const void* buffer, size_t size, int flags, const sockaddr* address,
                           socklen_t length) {
  if (owned(fd)) return write_socket(__func__, fd, buffer, size, flags, address != nullptr);
  return LOOPSIM_REAL(sendto)(fd, buffer, size, flags, address, length);
}

namespace {

// A read into `count` buffers, as readv and recvmsg make it: one read of their total size.
long read_scattered(const char* call, int fd, const iovec* iov, std::size_t count, bool nonblocking, bool peek = false) {
  std::vector<char> buffer(total(iov, int(count)));
  long n = served(call, [&] { return current->read(fd, buffer.data(), buffer.size(), nonblocking, peek); });
  if (n < 0) return n;
  std::size_t at = 0;
  for (std::size_t i = 0; i < count && at < std::size_t(n); ++i) {
    std::size_t part = std::min(iov[i].iov_len, std::size_t(n) - at);
    std::memcpy(iov[i].iov_base, buffer.data() + at, part);
    at += part;
  }
  return n;
}

// A write of `count` buffers, as writev and sendmsg make it: one write of them all.
long write_gathered(const char* call, int fd, const iovec* iov, std::size_t count, bool nonblocking, bool addressed = false) {
  std::vector<char> buffer;
  buffer.reserve(total(iov, int(count)));
  for (std::size_t i = 0; i < count; ++i) {
    const char* base = static_cast<const char*>(iov[i].iov_base);
    buffer.insert(buffer.end(), base, base + iov[i].iov_len);
  }
  return served(call, [&] { return current->write(fd, buffer.data(), buffer.size(), nonblocking, addressed); });
}

}  // namespace

SEAM_EXPORT ssize_t readv(int fd, const iovec* iov, int count) {
  if (owned(fd)) return count < 0 ? result(-EINVAL) : read_scattered(__func__, fd, iov, std::size_t(count), false);
  return LOOPSIM_REAL(readv)(fd, iov, count);
}

SEAM_EXPORT ssize_t writev(int fd, const iovec* iov, int count) {
  if (owned(fd)) return count < 0 ? result(-EINVAL) : broken_pipe(write_gathered(__func__, fd, iov, std::size_t(count), false), 0);
  return LOOPSIM_REAL(writev)(fd, iov, count);
}

// Without ancillary data: none ever arrives, and one sent (SCM_RIGHTS, credentials) is refused.
SEAM_EXPORT ssize_t recvmsg(int fd, msghdr* message, int flags) {
  if (owned(fd)) {
    if (message == nullptr) return result(-EFAULT);
    long n = read_scattered(__func__, fd, message->msg_iov, message->msg_iovlen, (flags & MSG_DONTWAIT) != 0,
                            (flags & MSG_PEEK) != 0);
    if (n < 0) return n;
    message->msg_controllen = 0;
    message->msg_flags = 0;
    if (message->msg_name != nullptr) {  // the peer's address; an unnamed one (a socketpair's) has none
      socklen_t length = message->msg_namelen;
      const int saved = errno;
      if (current->sockname(fd, static_cast<sockaddr*>(message->msg_name), &length, true) < 0 ||
          static_cast<sockaddr*>(message->msg_name)->sa_family == AF_UNIX) {
        length = 0;
      }
      errno = saved;
      message->msg_namelen = length;
    }
    return n;
  }
  return LOOPSIM_REAL(recvmsg)(fd, message, flags);
}
SEAM_EXPORT ssize_t sendmsg(int fd, const msghdr* message, int flags) {
  if (owned(fd)) {
    if (message == nullptr) return result(-EFAULT);
    if (message->msg_control != nullptr && message->msg_controllen > 0) {
      current->refuse("sendmsg with ancillary data", fd, "the seam passes no descriptors or credentials");
    }
    return broken_pipe(write_gathered(__func__, fd, message->msg_iov, message->msg_iovlen, (flags & MSG_DONTWAIT) != 0,
                                      message->msg_name != nullptr),
                       flags);
  }
  return LOOPSIM_REAL(sendmsg)(fd, message, flags);
}
namespace {

// sendfile onto a simulated socket or pipe, from a real file: what the file holds at the offset
// (or its position), read for real, then written as write() would (blocking or not, as the
// descriptor is). What the write did not take is not consumed: the offset (or the position)
// moves by what was sent. From a simulated descriptor Linux's sendfile fails EINVAL (its
// input must be a file), as here.
long send_file(const char* call, int out, int in, off64_t* offset, size_t count) {
  if (owned(in)) return result(-EINVAL);
  std::vector<char> buffer(std::min<size_t>(count, 1 << 16));
  const ssize_t got = offset != nullptr ? LOOPSIM_REAL(pread64)(in, buffer.data(), buffer.size(), *offset)
                                        : LOOPSIM_REAL(read)(in, buffer.data(), buffer.size());
  if (got <= 0) return got;  // the end of the file, or the read's own error in errno
  const long sent = broken_pipe(served(call, [&] { return current->write(out, buffer.data(), size_t(got), false); }), 0);
  const off64_t moved = sent > 0 ? sent : 0;
  if (offset != nullptr) *offset += moved;
  else LOOPSIM_REAL(lseek64)(in, moved - got, SEEK_CUR);
  return sent;
}

}  // namespace

SEAM_EXPORT ssize_t sendfile(int out, int in, off_t* offset, size_t count) noexcept {
  if (owned(out)) {
    if (offset == nullptr) return send_file(__func__, out, in, nullptr, count);
    off64_t at = *offset;
    const long sent = send_file(__func__, out, in, &at, count);
    *offset = off_t(at);
    return sent;
  }
  if (owned(in)) return result(-EINVAL);
  return LOOPSIM_REAL(sendfile)(out, in, offset, count);
}
SEAM_EXPORT ssize_t sendfile64(int out, int in, off64_t* offset, size_t count) noexcept {
  if (owned(out)) return send_file(__func__, out, in, offset, count);
  if (owned(in)) return result(-EINVAL);
  return LOOPSIM_REAL(sendfile64)(out, in, offset, count);
}
// splice and tee move pages between a pipe and another descriptor; on a simulated one they fail
// EINVAL, as Linux's do where an end cannot splice, and programs (lighttpd) copy instead.
SEAM_EXPORT ssize_t splice(int in, loff_t* in_offset, int out, loff_t* out_offset, size_t length, unsigned int flags) noexcept {
  if (owned(in) || owned(out)) return result(-EINVAL);
  return LOOPSIM_REAL(splice)(in, in_offset, out, out_offset, length, flags);
}
SEAM_EXPORT ssize_t tee(int in, int out, size_t length, unsigned int flags) noexcept {
  if (owned(in) || owned(out)) return result(-EINVAL);
  return LOOPSIM_REAL(tee)(in, out, length, flags);
}
SEAM_EXPORT off_t lseek(int fd, off_t offset, int whence) noexcept {
  if (owned(fd)) return result(-ESPIPE);
  return LOOPSIM_REAL(lseek)(fd, offset, whence);
}
SEAM_EXPORT int fstat(int fd, struct stat* st) noexcept {
  if (owned(fd)) return st == nullptr ? int(result(-EFAULT)) : int(served(__func__, [&] { return current->stat(fd, st); }));
  return LOOPSIM_REAL(fstat)(fd, st);
}
static_assert(sizeof(struct stat) == sizeof(struct stat64), "fstat64 fills the same structure on this ABI");
SEAM_EXPORT int fstat64(int fd, struct stat64* st) noexcept {
  if (owned(fd)) {
    if (st == nullptr) return int(result(-EFAULT));
    return int(served(__func__, [&] { return current->stat(fd, reinterpret_cast<struct stat*>(st)); }));
  }
  return LOOPSIM_REAL(fstat64)(fd, st);
}
// fstatat(fd, "", st, AT_EMPTY_PATH) is fstat; a path relative to a simulated descriptor is not.
SEAM_EXPORT int fstatat(int dir, const char* path, struct stat* st, int flags) noexcept {
  if (owned(dir)) {
    if (path == nullptr || path[0] != '\0' || !(flags & AT_EMPTY_PATH)) return int(result(-ENOTDIR));
    return fstat(dir, st);
  }
  return LOOPSIM_REAL(fstatat)(dir, path, st, flags);
}
SEAM_EXPORT int fstatat64(int dir, const char* path, struct stat64* st, int flags) noexcept {
  if (owned(dir)) {
    if (path == nullptr || path[0] != '\0' || !(flags & AT_EMPTY_PATH)) return int(result(-ENOTDIR));
    return fstat64(dir, st);
  }
  return LOOPSIM_REAL(fstatat64)(dir, path, st, flags);
}

// ---- closing, duplicating, flags ----

namespace {
// In a forked child, before its exec, the descriptor calls act on its own table.
bool in_child() { return current != nullptr && current->forked(); }
}  // namespace

SEAM_EXPORT int close(int fd) {
  if (in_child() && owned(fd)) return int(result(current->child_close(fd)));
  if (owned(fd)) return int(served(__func__, [&] { return long(current->close(fd)); }));
  if (current != nullptr && !in_child() && current->holds_file(fd)) current->file_closed(fd);
  return LOOPSIM_REAL(close)(fd);
}

// A duplicate of a simulated descriptor opens the same simulated file (Seam::duplicate); one made
// onto a simulated number closes it first. In a forked child, on its own table.
SEAM_EXPORT int dup(int fd) noexcept {
  if (in_child() && owned(fd)) return int(result(current->child_dup(fd, 0, false, true)));
  if (owned(fd)) return int(served(__func__, [&] { return current->duplicate(fd, 0, false, true); }));
  return LOOPSIM_REAL(dup)(fd);
}
SEAM_EXPORT int dup2(int fd, int to) noexcept {
  if (in_child() && (owned(fd) || owned(to))) return int(result(current->child_dup(fd, to, false, false)));
  if (owned(fd) || owned(to)) return int(served(__func__, [&] { return current->duplicate(fd, to, false, false); }));
  return LOOPSIM_REAL(dup2)(fd, to);
}
SEAM_EXPORT int dup3(int fd, int to, int flags) noexcept {
  if ((owned(fd) || owned(to)) && (fd == to || (flags & ~O_CLOEXEC) != 0)) return int(result(-EINVAL));
  if (in_child() && (owned(fd) || owned(to))) return int(result(current->child_dup(fd, to, (flags & O_CLOEXEC) != 0, false)));
  if (owned(fd) || owned(to)) {
    return int(served(__func__, [&] { return current->duplicate(fd, to, (flags & O_CLOEXEC) != 0, false); }));
  }
  return LOOPSIM_REAL(dup3)(fd, to, flags);
}

namespace {
long fcntl_arg(va_list ap) { return va_arg(ap, long); }
}  // namespace

SEAM_EXPORT int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  long arg = fcntl_arg(ap);
  va_end(ap);
  if (in_child() && owned(fd)) return int(result(current->child_fcntl(fd, cmd, arg)));
  if (owned(fd)) return int(served(__func__, [&] { return long(current->fcntl(fd, cmd, arg)); }));
  return LOOPSIM_REAL(fcntl)(fd, cmd, arg);
}
SEAM_EXPORT int fcntl64(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  long arg = fcntl_arg(ap);
  va_end(ap);
  if (in_child() && owned(fd)) return int(result(current->child_fcntl(fd, cmd, arg)));
  if (owned(fd)) return int(served(__func__, [&] { return long(current->fcntl(fd, cmd, arg)); }));
  return LOOPSIM_REAL(fcntl64)(fd, cmd, arg);
}

SEAM_EXPORT int ioctl(int fd, unsigned long request, ...) noexcept {
  va_list ap;
  va_start(ap, request);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  if (owned(fd)) return int(served(__func__, [&] { return long(current->ioctl(fd, request, arg)); }));
  return LOOPSIM_REAL(ioctl)(fd, request, arg);
}

// ---- pollers ----

SEAM_EXPORT int epoll_ctl(int poller, int op, int fd, epoll_event* event) noexcept {
  if (owned(poller)) return int(served(__func__, [&] { return long(current->poller_control(poller, op, fd, event)); }));
  if (owned(fd)) current->refuse("epoll_ctl", fd, "a real poller cannot watch a simulated descriptor");
  return LOOPSIM_REAL(epoll_ctl)(poller, op, fd, event);
}

SEAM_EXPORT int epoll_wait(int poller, epoll_event* events, int max, int timeout) {
  if (owned(poller)) return int(served(__func__, [&] { return long(current->poller_wait(poller, events, max, timeout)); }));
  return LOOPSIM_REAL(epoll_wait)(poller, events, max, timeout);
}

SEAM_EXPORT int epoll_pwait(int poller, epoll_event* events, int max, int timeout, const sigset_t* mask) {
  // The mask matters for signals, which the simulation does not deliver.
  if (owned(poller)) return int(served(__func__, [&] { return long(current->poller_wait(poller, events, max, timeout)); }));
  return LOOPSIM_REAL(epoll_pwait)(poller, events, max, timeout, mask);
}

namespace {

// Linux refuses a timeout below zero, or a timespec whose nanoseconds are out of [0, 10^9),
// with EINVAL before it looks at any descriptor (poll_select_set_timeout). A timeval's
// microseconds past a second are carried into its seconds.
bool invalid(const timespec* t) { return t != nullptr && (t->tv_sec < 0 || t->tv_nsec < 0 || t->tv_nsec >= 1'000'000'000); }
bool invalid(const timeval* t) { return t != nullptr && (t->tv_sec < 0 || t->tv_usec < 0); }

// A wait's timeout; none waits until something is ready.
std::optional<Duration> poll_timeout(int ms) {
  if (ms < 0) return std::nullopt;
  return Duration(std::int64_t(ms) * 1'000'000);
}
std::optional<Duration> poll_timeout(const timespec* t) {
  if (t == nullptr) return std::nullopt;
  return from_timespec(*t);
}
std::optional<Duration> poll_timeout(const timeval* t) {
  if (t == nullptr) return std::nullopt;
  return Duration(std::int64_t(t->tv_sec) * 1'000'000'000 + std::int64_t(t->tv_usec) * 1000);
}

// select(2) as poll(2) over the descriptors its sets name; the sets are rewritten with what is
// ready. Linux's mapping: readable (and hung up, or in error) counts as readable, writable (or
// in error) as writable, and nothing is exceptional on a stream socket.
long select_as_poll(const char* call, int n, fd_set* r, fd_set* w, fd_set* e, std::optional<Duration> timeout) {
  if (n < 0 || n > FD_SETSIZE) return result(-EINVAL);
  std::vector<pollfd> entries;
  for (int fd = 0; fd < n; ++fd) {
    short events = 0;
    if (r != nullptr && FD_ISSET(fd, r)) events |= POLLIN;
    if (w != nullptr && FD_ISSET(fd, w)) events |= POLLOUT;
    if (e != nullptr && FD_ISSET(fd, e)) events |= POLLPRI;
    if (events != 0) entries.push_back(pollfd{fd, events, 0});
  }
  long rc = served(call, [&] { return current->poll(entries.data(), entries.size(), timeout); });
  if (rc < 0) return rc;
  if (r != nullptr) FD_ZERO(r);
  if (w != nullptr) FD_ZERO(w);
  if (e != nullptr) FD_ZERO(e);
  long count = 0;
  for (const pollfd& p : entries) {
    if (r != nullptr && (p.events & POLLIN) && (p.revents & (POLLIN | POLLHUP | POLLERR))) {
      FD_SET(p.fd, r);
      ++count;
    }
    if (w != nullptr && (p.events & POLLOUT) && (p.revents & (POLLOUT | POLLERR))) {
      FD_SET(p.fd, w);
      ++count;
    }
  }
  return count;
}

bool any_named_owned(int n, const fd_set* r, const fd_set* w, const fd_set* e) {
  for (int fd = 0; current != nullptr && fd < n && fd < FD_SETSIZE; ++fd) {
    bool named = (r && FD_ISSET(fd, r)) || (w && FD_ISSET(fd, w)) || (e && FD_ISSET(fd, e));
    if (named && owned(fd)) return true;
  }
  return false;
}

// A poll or select that names no descriptor at all is a sleep (a common idiom): on the
// target's thread, one in virtual time, as nanosleep is.
bool names_none(const pollfd* fds, nfds_t n) {
  for (nfds_t i = 0; i < n; ++i)
    if (fds[i].fd >= 0) return false;
  return true;
}
bool names_none(int n, const fd_set* r, const fd_set* w, const fd_set* e) {
  for (int fd = 0; fd < n && fd < FD_SETSIZE; ++fd) {
    if ((r && FD_ISSET(fd, r)) || (w && FD_ISSET(fd, w)) || (e && FD_ISSET(fd, e))) return false;
  }
  return true;
}

}  // namespace

SEAM_EXPORT int poll(pollfd* fds, nfds_t n, int timeout) {
  if (any_owned(fds, n) || (making() && names_none(fds, n))) return int(served(__func__, [&] { return current->poll(fds, n, poll_timeout(timeout)); }));
  return LOOPSIM_REAL(poll)(fds, n, timeout);
}
SEAM_EXPORT int __poll_chk(pollfd* fds, nfds_t n, int timeout, size_t fds_size) {
  if (fds_size / sizeof(*fds) < n) __chk_fail();
  return poll(fds, n, timeout);
}
// The signal mask matters for signals, which the simulation does not deliver yet.
SEAM_EXPORT int ppoll(pollfd* fds, nfds_t n, const timespec* timeout, const sigset_t* mask) {
  if (any_owned(fds, n) || (making() && names_none(fds, n))) {
    if (invalid(timeout)) return int(result(-EINVAL));
    return int(served(__func__, [&] { return current->poll(fds, n, poll_timeout(timeout)); }));
  }
  return LOOPSIM_REAL(ppoll)(fds, n, timeout, mask);
}
SEAM_EXPORT int __ppoll_chk(pollfd* fds, nfds_t n, const timespec* timeout, const sigset_t* mask, size_t fds_size) {
  if (fds_size / sizeof(*fds) < n) __chk_fail();
  return ppoll(fds, n, timeout, mask);
}
SEAM_EXPORT int select(int n, fd_set* r, fd_set* w, fd_set* e, timeval* timeout) {
  if (any_named_owned(n, r, w, e) || (making() && names_none(n, r, w, e))) {
    if (invalid(timeout)) return int(result(-EINVAL));
    return int(select_as_poll(__func__, n, r, w, e, poll_timeout(timeout)));
  }
  return LOOPSIM_REAL(select)(n, r, w, e, timeout);
}
SEAM_EXPORT int pselect(int n, fd_set* r, fd_set* w, fd_set* e, const timespec* timeout, const sigset_t* mask) {
  if (any_named_owned(n, r, w, e) || (making() && names_none(n, r, w, e))) {
    if (invalid(timeout)) return int(result(-EINVAL));
    return int(select_as_poll(__func__, n, r, w, e, poll_timeout(timeout)));
  }
  return LOOPSIM_REAL(pselect)(n, r, w, e, timeout, mask);
}

// ---- syscall(): libuv closes with it; io_uring is refused; a target thread's futex waits ----

SEAM_EXPORT long syscall(long number, ...) noexcept {
  va_list ap;
  va_start(ap, number);
  long a[6];
  for (long& v : a) v = va_arg(ap, long);
  va_end(ap);
  return loopsim::posix::calls::system_call(number, a, false);
}

// ---- randomness: the scenario's seed, not the machine's entropy ----

SEAM_EXPORT ssize_t getrandom(void* buffer, size_t size, unsigned int flags) noexcept {
  if (making()) return random_into(buffer, size);
  return LOOPSIM_REAL(getrandom)(buffer, size, flags);
}

SEAM_EXPORT int getentropy(void* buffer, size_t size) noexcept {
  if (making()) {
    if (size > 256) return int(result(-EIO));  // glibc's, as its man page says
    return random_into(buffer, size) < 0 ? -1 : 0;
  }
  return LOOPSIM_REAL(getentropy)(buffer, size);
}

// ---- clocks and sleeps ----

SEAM_EXPORT int clock_gettime(clockid_t clock, timespec* t) noexcept {
  if (virtual_clocks() && t != nullptr) {
    *t = to_timespec(virtual_ns(clock));
    return 0;
  }
  return loopsim::posix::real_clock(clock, t);
}

SEAM_EXPORT int gettimeofday(timeval* tv, void* tz) noexcept {
  if (virtual_clocks()) {
    if (tv != nullptr) {
      std::int64_t ns = virtual_ns(CLOCK_REALTIME);
      tv->tv_sec = time_t(ns / 1'000'000'000);
      tv->tv_usec = suseconds_t(ns % 1'000'000'000 / 1000);
    }
    return 0;
  }
  return LOOPSIM_REAL(gettimeofday)(tv, tz);
}

SEAM_EXPORT time_t time(time_t* out) noexcept {
  if (virtual_clocks()) {
    time_t now = time_t(virtual_ns(CLOCK_REALTIME) / 1'000'000'000);
    if (out != nullptr) *out = now;
    return now;
  }
  return LOOPSIM_REAL(time)(out);
}

namespace {

// A sleep of `wanted` on the seam: 0, or -EINTR with what was left in `left` (Seam::sleep).
long sleep_for(const char* call, Duration wanted, Duration& left) {
  return served(call, [&] {
    left = current->sleep(wanted);
    return left > Duration(0) ? long(-EINTR) : 0L;
  });
}

// Linux's checks of a timespec a sleep is given: readable (EFAULT), nanoseconds within
// [0, 10^9) and seconds not below zero (EINVAL). 0, or -errno.
long sleep_request(const timespec* request, timespec& into) {
  if (!copy_in(&into, request, sizeof into)) return -EFAULT;
  if (into.tv_nsec < 0 || into.tv_nsec >= 1'000'000'000 || into.tv_sec < 0) return -EINVAL;
  return 0;
}

}  // namespace

SEAM_EXPORT int nanosleep(const timespec* request, timespec* remaining) {
  if (making()) {
    timespec wanted{};
    if (const long bad = sleep_request(request, wanted); bad < 0) return int(result(bad));
    Duration left{0};
    const long rc = sleep_for(__func__, from_timespec(wanted), left);
    if (rc < 0 && remaining != nullptr) *remaining = to_timespec(left.count());
    return int(rc);
  }
  return LOOPSIM_REAL(nanosleep)(request, remaining);
}

// clock_nanosleep returns its error instead of setting errno; an absolute one leaves
// `remaining` alone.
SEAM_EXPORT int clock_nanosleep(clockid_t clock, int flags, const timespec* request, timespec* remaining) {
  if (making()) {
    timespec asked{};
    if (const long bad = sleep_request(request, asked); bad < 0) return int(-bad);
    Duration wanted = from_timespec(asked);
    if (flags & TIMER_ABSTIME) wanted = Duration(wanted.count() - virtual_ns(clock));  // until then
    Duration left{0};
    const int saved = errno;
    const long rc = sleep_for(__func__, wanted, left);
    errno = saved;
    if (rc < 0 && remaining != nullptr && (flags & TIMER_ABSTIME) == 0) *remaining = to_timespec(left.count());
    return rc < 0 ? EINTR : 0;
  }
  return LOOPSIM_REAL(clock_nanosleep)(clock, flags, request, remaining);
}

SEAM_EXPORT int usleep(useconds_t us) {
  if (making()) {
    Duration left{0};
    return int(sleep_for(__func__, Duration(std::int64_t(us) * 1000), left));
  }
  return LOOPSIM_REAL(usleep)(us);
}

// sleep(3) returns the seconds it did not sleep, as glibc's does: the whole seconds nanosleep
// left (0.98 s left is 0, as posix/signals_test.cpp shows Linux's to be).
SEAM_EXPORT unsigned int sleep(unsigned int seconds) {
  if (making()) {
    Duration left{0};
    const int saved = errno;
    sleep_for(__func__, Duration(std::int64_t(seconds) * 1'000'000'000), left);
    errno = saved;
    return unsigned(to_timespec(left.count()).tv_sec);
  }
  return LOOPSIM_REAL(sleep)(seconds);
}

// ---- limits ----

SEAM_EXPORT int getrlimit(int resource, rlimit* limit) noexcept {
  if (making() && resource == RLIMIT_NOFILE && limit != nullptr) {
    limit->rlim_cur = rlim_t(current->descriptor_limit());
    limit->rlim_max = rlim_t(current->descriptor_hard_limit());
    return 0;
  }
  return LOOPSIM_REAL(getrlimit)(resource, limit);
}
SEAM_EXPORT int getrlimit64(int resource, rlimit64* limit) noexcept {
  if (making() && resource == RLIMIT_NOFILE && limit != nullptr) {
    limit->rlim_cur = rlim64_t(current->descriptor_limit());
    limit->rlim_max = rlim64_t(current->descriptor_hard_limit());
    return 0;
  }
  return LOOPSIM_REAL(getrlimit64)(resource, limit);
}
// The scenario sets the descriptor limit (kernel.rlimit_nofile, soft and hard, and its faults);
// the program may move the soft one within the hard one, and lower the hard one.
SEAM_EXPORT int setrlimit(int resource, const rlimit* limit) noexcept {
  if (making() && resource == RLIMIT_NOFILE) {
    if (limit == nullptr) return int(result(-EFAULT));
    return int(served(__func__, [&] { return current->set_descriptor_limits(limit->rlim_cur, limit->rlim_max); }));
  }
  return LOOPSIM_REAL(setrlimit)(resource, limit);
}
SEAM_EXPORT int setrlimit64(int resource, const rlimit64* limit) noexcept {
  if (making() && resource == RLIMIT_NOFILE) {
    if (limit == nullptr) return int(result(-EFAULT));
    return int(served(__func__, [&] { return current->set_descriptor_limits(limit->rlim_cur, limit->rlim_max); }));
  }
  return LOOPSIM_REAL(setrlimit64)(resource, limit);
}

// ---- threads, processes, exits ----

SEAM_EXPORT void exit(int status) noexcept {
  if (making()) current->on_engine([&] { current->exited(status); });
  LOOPSIM_REAL(exit)(status);
  __builtin_unreachable();
}

SEAM_EXPORT void _exit(int status) {
  if (making()) current->on_engine([&] { current->exited(status); });
  LOOPSIM_REAL(_exit)(status);
  __builtin_unreachable();
}

SEAM_EXPORT void _Exit(int status) noexcept {
  if (making()) current->on_engine([&] { current->exited(status); });
  LOOPSIM_REAL(_Exit)(status);
  __builtin_unreachable();
}
