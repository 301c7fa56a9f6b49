// A system call by number: syscall(), and those the trap catches (posix/interpose_trap.cpp),
// each routed to the interposer of its libc name, so that both reach the Seam by one path.
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
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
#include <cstdint>
#include <cstring>

#include "posix/interpose.hpp"
#include "posix/seam.hpp"

using loopsim::posix::current;

namespace {

using namespace loopsim::posix::calls;

// A child the seam cannot hold until it ends (posix/processes.cpp): only libc's fork, vfork,
// posix_spawn, system and popen are served.
const char* const one_process =
    "the target starts a process the seam cannot run to its end (it serves fork, vfork, posix_spawn, system and "
    "popen; docs/targets.md)";

void refuse_process(const char* call) {
  if (making()) current->refuse(call, -1, one_process);
}

// clone(2)'s flags: without CLONE_THREAD it makes a process, not a thread.
bool makes_process(unsigned long flags) { return (flags & CLONE_THREAD) == 0; }

}  // namespace

namespace loopsim::posix::calls {

template <typename T>
T* pointer(long value) {
  return reinterpret_cast<T*>(value);
}

// A signal set as the kernel takes it (`size` bytes, 8 on x86-64), as libc's: false where it
// cannot be read.
bool kernel_set(const void* given, size_t size, sigset_t& set) {
  sigemptyset(&set);
  if (size != sizeof(std::uint64_t)) return false;
  std::uint64_t bits = 0;
  if (given == nullptr || !copy_in(&bits, given, sizeof bits)) return false;
  std::memcpy(&set, &bits, sizeof bits);
  return true;
}

long system_call(long number, const long* a, bool own) noexcept {
  if (current == nullptr || !current->active()) return LOOPSIM_REAL(syscall)(number, a[0], a[1], a[2], a[3], a[4], a[5]);
  const int fd = int(a[0]);
  switch (number) {
    case SYS_io_uring_setup:
    case SYS_io_uring_enter:
    case SYS_io_uring_register:
      errno = ENOSYS;  // the probe of libuv >= 1.45 falls back to epoll
      return -1;
    // Descriptors and their bytes. A real file takes a simulated number too, as libc's opens do.
    case SYS_open: return ::open(pointer<const char>(a[0]), int(a[1]), mode_t(a[2]));
    case SYS_openat: return ::openat(fd, pointer<const char>(a[1]), int(a[2]), mode_t(a[3]));
    case SYS_close: return ::close(fd);
    case SYS_read: return ::read(fd, pointer<void>(a[1]), size_t(a[2]));
    case SYS_write: return ::write(fd, pointer<const void>(a[1]), size_t(a[2]));
    case SYS_readv: return ::readv(fd, pointer<const iovec>(a[1]), int(a[2]));
    case SYS_writev: return ::writev(fd, pointer<const iovec>(a[1]), int(a[2]));
    case SYS_dup: return ::dup(fd);
    case SYS_dup2: return ::dup2(fd, int(a[1]));
    case SYS_dup3: return ::dup3(fd, int(a[1]), int(a[2]));
    case SYS_fcntl: return ::fcntl(fd, int(a[1]), a[2]);
    case SYS_ioctl: return ::ioctl(fd, static_cast<unsigned long>(a[1]), a[2]);
    case SYS_pipe: return ::pipe(pointer<int>(a[0]));
    case SYS_pipe2: return ::pipe2(pointer<int>(a[0]), int(a[1]));
    case SYS_eventfd: return ::eventfd(unsigned(a[0]), 0);
    case SYS_eventfd2: return ::eventfd(unsigned(a[0]), int(a[1]));
    case SYS_sendfile: return ::sendfile(fd, int(a[1]), pointer<off_t>(a[2]), size_t(a[3]));
    // Sockets.
    case SYS_socket: return ::socket(fd, int(a[1]), int(a[2]));
    case SYS_socketpair: return ::socketpair(fd, int(a[1]), int(a[2]), pointer<int>(a[3]));
    case SYS_bind: return ::bind(fd, pointer<const sockaddr>(a[1]), socklen_t(a[2]));
    case SYS_listen: return ::listen(fd, int(a[1]));
    case SYS_accept: return ::accept(fd, pointer<sockaddr>(a[1]), pointer<socklen_t>(a[2]));
    case SYS_accept4: return ::accept4(fd, pointer<sockaddr>(a[1]), pointer<socklen_t>(a[2]), int(a[3]));
    case SYS_connect: return ::connect(fd, pointer<const sockaddr>(a[1]), socklen_t(a[2]));
    case SYS_setsockopt: return ::setsockopt(fd, int(a[1]), int(a[2]), pointer<const void>(a[3]), socklen_t(a[4]));
    case SYS_getsockopt: return ::getsockopt(fd, int(a[1]), int(a[2]), pointer<void>(a[3]), pointer<socklen_t>(a[4]));
    case SYS_getsockname: return ::getsockname(fd, pointer<sockaddr>(a[1]), pointer<socklen_t>(a[2]));
    case SYS_getpeername: return ::getpeername(fd, pointer<sockaddr>(a[1]), pointer<socklen_t>(a[2]));
    case SYS_shutdown: return ::shutdown(fd, int(a[1]));
    case SYS_recvfrom:
      return ::recvfrom(fd, pointer<void>(a[1]), size_t(a[2]), int(a[3]), pointer<sockaddr>(a[4]), pointer<socklen_t>(a[5]));
    case SYS_sendto:
      return ::sendto(fd, pointer<const void>(a[1]), size_t(a[2]), int(a[3]), pointer<const sockaddr>(a[4]), socklen_t(a[5]));
    case SYS_recvmsg: return ::recvmsg(fd, pointer<msghdr>(a[1]), int(a[2]));
    case SYS_sendmsg: return ::sendmsg(fd, pointer<const msghdr>(a[1]), int(a[2]));
    // Readiness.
    case SYS_epoll_create: return ::epoll_create(fd);
    case SYS_epoll_create1: return ::epoll_create1(fd);
    case SYS_epoll_ctl: return ::epoll_ctl(fd, int(a[1]), int(a[2]), pointer<epoll_event>(a[3]));
    case SYS_epoll_wait: return ::epoll_wait(fd, pointer<epoll_event>(a[1]), int(a[2]), int(a[3]));
    case SYS_epoll_pwait: return ::epoll_pwait(fd, pointer<epoll_event>(a[1]), int(a[2]), int(a[3]), pointer<const sigset_t>(a[4]));
    case SYS_poll: return ::poll(pointer<pollfd>(a[0]), nfds_t(a[1]), int(a[2]));
    case SYS_ppoll: return ::ppoll(pointer<pollfd>(a[0]), nfds_t(a[1]), pointer<const timespec>(a[2]), pointer<const sigset_t>(a[3]));
    case SYS_select:
      return ::select(fd, pointer<fd_set>(a[1]), pointer<fd_set>(a[2]), pointer<fd_set>(a[3]), pointer<timeval>(a[4]));
    // Time: the virtual clocks. clock_nanosleep's error is its result, as the system call's is.
    case SYS_clock_gettime: return ::clock_gettime(clockid_t(a[0]), pointer<timespec>(a[1]));
    case SYS_gettimeofday: return ::gettimeofday(pointer<timeval>(a[0]), pointer<void>(a[1]));
    case SYS_time: return ::time(pointer<time_t>(a[0]));
    case SYS_nanosleep: return ::nanosleep(pointer<const timespec>(a[0]), pointer<timespec>(a[1]));
    case SYS_clock_nanosleep: {
      const int error = ::clock_nanosleep(clockid_t(a[0]), int(a[1]), pointer<const timespec>(a[2]), pointer<timespec>(a[3]));
      if (error == 0) return 0;
      errno = error;
      return -1;
    }
    case SYS_futex:
      if (making()) return futex_call(a);
      break;
    case SYS_getrandom:
      if (making()) return random_into(pointer<void>(a[0]), size_t(a[1]));
      break;
    case SYS_exit_group: ::_exit(fd);
    // What libc's functions of the same names serve, made bare (a statically linked program's
    // libc makes them so). The kernel's signal sets are 8 bytes, not libc's 128.
    case SYS_fstat: return ::fstat(fd, pointer<struct stat>(a[1]));
    case SYS_newfstatat: return ::fstatat(fd, pointer<const char>(a[1]), pointer<struct stat>(a[2]), int(a[3]));
    case SYS_lseek: return ::lseek(fd, off_t(a[1]), int(a[2]));
    case SYS_splice:
      return ::splice(fd, pointer<loff_t>(a[1]), int(a[2]), pointer<loff_t>(a[3]), size_t(a[4]), unsigned(a[5]));
    case SYS_tee: return ::tee(fd, int(a[1]), size_t(a[2]), unsigned(a[3]));
    case SYS_pselect6: {
      struct Mask {
        const void* set;
        size_t size;
      } given{};
      sigset_t mask;
      const bool masked = a[5] != 0 && copy_in(&given, pointer<const void>(a[5]), sizeof given) && given.set != nullptr;
      if (masked && !kernel_set(given.set, given.size, mask)) return result(-EFAULT);
      return ::pselect(fd, pointer<fd_set>(a[1]), pointer<fd_set>(a[2]), pointer<fd_set>(a[3]),
                       pointer<const timespec>(a[4]), masked ? &mask : nullptr);
    }
    case SYS_alarm: return long(::alarm(unsigned(a[0])));
    case SYS_setitimer: return ::setitimer(__itimer_which_t(a[0]), pointer<const itimerval>(a[1]), pointer<itimerval>(a[2]));
    case SYS_getitimer: return ::getitimer(__itimer_which_t(a[0]), pointer<itimerval>(a[1]));
    case SYS_pause: return ::pause();
    case SYS_rt_sigsuspend: {
      sigset_t mask;
      if (!kernel_set(pointer<const void>(a[0]), size_t(a[1]), mask)) return result(-EFAULT);
      return ::sigsuspend(&mask);
    }
    case SYS_rt_sigtimedwait: {
      sigset_t set;
      if (!kernel_set(pointer<const void>(a[0]), size_t(a[3]), set)) return result(-EFAULT);
      return ::sigtimedwait(&set, pointer<siginfo_t>(a[1]), pointer<const timespec>(a[2]));
    }
    case SYS_rt_sigpending: {
      sigset_t set;
      if (size_t(a[1]) != sizeof(std::uint64_t)) return result(-EINVAL);
      if (::sigpending(&set) != 0) return -1;
      return copy_out(pointer<void>(a[0]), &set, sizeof(std::uint64_t)) ? 0 : result(-EFAULT);
    }
    case SYS_signalfd:
    case SYS_signalfd4: {
      sigset_t mask;
      if (!kernel_set(pointer<const void>(a[1]), size_t(a[2]), mask)) return result(-EFAULT);
      return ::signalfd(fd, &mask, number == SYS_signalfd4 ? int(a[3]) : 0);
    }
    case SYS_kill: return ::kill(pid_t(a[0]), int(a[1]));
    case SYS_tgkill: return ::tgkill(pid_t(a[0]), pid_t(a[1]), int(a[2]));  // raise(3) as static glibc makes it, too
    case SYS_getrlimit: return ::getrlimit(__rlimit_resource_t(a[0]), pointer<rlimit>(a[1]));
    case SYS_setrlimit: return ::setrlimit(__rlimit_resource_t(a[0]), pointer<const rlimit>(a[1]));
    case SYS_prlimit64:  // the calling process's, as getrlimit and setrlimit: the old value, then the new
      if (a[0] == 0 || a[0] == ::getpid()) {
        const auto resource = __rlimit_resource_t(a[1]);
        if (a[3] != 0 && ::getrlimit(resource, pointer<rlimit>(a[3])) != 0) return -1;
        if (a[2] != 0) return ::setrlimit(resource, pointer<const rlimit>(a[2]));
        return 0;
      }
      break;
    case SYS_sched_yield: return ::sched_yield();
    case SYS_execve: return ::execve(pointer<const char>(a[0]), pointer<char* const>(a[1]), pointer<char* const>(a[2]));
    case SYS_wait4: return ::wait4(pid_t(a[0]), pointer<int>(a[1]), int(a[2]), pointer<struct rusage>(a[3]));
    // Processes: those libc's calls make are served; a bare system call that makes one is not.
    case SYS_fork: refuse_process(own ? "fork (its own system call)" : "syscall(SYS_fork)"); break;
    case SYS_vfork: refuse_process(own ? "vfork (its own system call)" : "syscall(SYS_vfork)"); break;
    case SYS_clone:
      if (makes_process(static_cast<unsigned long>(a[0]))) refuse_process(own ? "clone (its own system call)" : "syscall(SYS_clone)");
      break;
    case SYS_clone3: {
      // struct clone_args begins with its flags (a __u64). Arguments that cannot be read go to
      // the kernel, which fails them EFAULT, as Linux does.
      std::uint64_t flags = 0;
      if (a[0] != 0 && copy_in(&flags, pointer<const void>(a[0]), sizeof flags) && makes_process(flags)) {
        refuse_process(own ? "clone3 (its own system call)" : "syscall(SYS_clone3)");
      }
      break;
    }
    default: break;
  }
  return LOOPSIM_REAL(syscall)(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

}  // namespace loopsim::posix::calls
