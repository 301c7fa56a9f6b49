// A target's children (fork, vfork, posix_spawn, system, popen): run to their end as the call
// returns in the parent, in no virtual time.
//
// The simulation lives in the target's own process, so a child's copy of it is frozen at the
// fork: only the parent's goes on. The seam therefore takes, of all the schedules Linux allows,
// the one where the child runs first and to its end: the parent is held inside fork (in
// wall-clock time, target.spin_limit at most) until the child has exited, what the child wrote
// to simulated pipes is delivered to them, and SIGCHLD comes. That is exactly right for a child
// that execs a helper whose output the parent reads (lighttpd's include_shell, system, popen).
// A child that serves a connection it holds (busybox's httpd forks one per connection) has its
// reads, writes and shutdowns on it made by the parent, which waits in fork meanwhile and
// answers over the child's report channel (child_forward, serve_child_call). It is refused by
// name for a child that would need the parent to run meanwhile: one that accepts, polls or
// waits in the simulation, or execs a program that keeps a simulated socket (nginx's workers,
// a daemon's child).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <string_view>
#include <vector>

#include "base/assert.hpp"
#include "posix/seam.hpp"

namespace loopsim::posix {

namespace {

// The child's reports to its parent, one a message (SOCK_SEQPACKET).
enum Report : char {
  pipe_buffer = 'P',  // a simulated pipe's write end, as a real buffer (the message's descriptor)
  refused = 'R',      // the child did something the seam does not serve: the text says what
  spawn_error = 'E',  // the child's posix_spawn failed with this error
  call = 'C',         // a call on a connection, which the parent makes and answers (Forward)
};

// A call a child makes on a connection, as it travels to its parent: the bytes of a write
// follow it; the answer is the result, and the bytes of a read after it.
struct Forward {
  char op;  // 'r' read, 'p' read that peeks, 'w' write, 's' shutdown
  bool nonblocking;
  int sim;  // the SimKernel descriptor: the parent's own descriptor for it is found by it
  int how;  // shutdown's
  std::uint64_t size;
};
// What one message carries of a read's or a write's bytes: a shorter read or write, as a
// socket's may be (the caller asks again for the rest).
constexpr std::size_t forward_bytes = 60 << 10;

void send_report(int socket, char type, const void* body, std::size_t size, int fd = -1) {
  char bytes[8192];
  size = std::min(size, sizeof bytes - 1);
  bytes[0] = type;
  std::memcpy(bytes + 1, body, size);
  iovec part{bytes, size + 1};
  msghdr message{};
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  if (fd >= 0) {
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(header), &fd, sizeof fd);
  }
  LOOPSIM_REAL(sendmsg)(socket, &message, MSG_NOSIGNAL);
}

std::string read_all(int fd) {
  std::string bytes;
  char chunk[65536];
  for (off_t at = 0;;) {
    const ssize_t n = ::pread(fd, chunk, sizeof chunk, at);
    if (n <= 0) return bytes;
    bytes.append(chunk, std::size_t(n));
    at += n;
  }
}


}  // namespace

long Seam::fork_process() {
  int report[2];
  if (LOOPSIM_REAL(socketpair)(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, report) != 0) return -errno;
  const pid_t pid = LOOPSIM_REAL(fork)();
  if (pid < 0) {
    const int error = errno;
    LOOPSIM_REAL(close)(report[0]);
    LOOPSIM_REAL(close)(report[1]);
    return -error;
  }
  if (pid == 0) {
    LOOPSIM_REAL(close)(report[0]);
    report_ = report[1];
    main_watch = nullptr;  // loopsim's page is the parent's main()'s, not this process's
    // The dispositions the seam kept are the child's own, as Linux copies them at fork: from
    // here on the real kernel delivers its signals.
    for (const auto& [signal, action] : actions_) LOOPSIM_REAL(sigaction)(signal, &action, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // it dies with the target, as the target with loopsim
    buffer_pipes();
    return 0;
  }
  LOOPSIM_REAL(close)(report[1]);
  child_report_ = report[0];
  return pid;
}

// In the parent, waiting in fork: a call the child makes on a connection, made on the parent's
// own descriptor for it, and answered.
void Seam::serve_child_call(int report, const char* bytes, std::size_t size) {
  Forward asked{};
  std::memcpy(&asked, bytes, std::min(size, sizeof asked));
  const char* data = bytes + sizeof asked;
  int fd = -1;
  for (int at = 0; at < int(fds_.size()) && fd < 0; ++at) {
    if (kind_of(at) == Kind::socket && fds_[std::size_t(at)].sim == asked.sim) fd = at;
  }
  std::vector<char> answer(2 * sizeof(std::int64_t));
  std::int64_t rc = -EBADF;
  if (fd >= 0) {
    const std::size_t length = std::min<std::size_t>(asked.size, forward_bytes);
    if (asked.op == 'r' || asked.op == 'p') {
      answer.resize(2 * sizeof rc + length);
      rc = read(fd, answer.data() + 2 * sizeof rc, length, asked.nonblocking, asked.op == 'p');
      answer.resize(2 * sizeof rc + std::size_t(std::max<std::int64_t>(rc, 0)));
    } else if (asked.op == 'w') {
      rc = write(fd, data, std::min(length, size - sizeof asked), asked.nonblocking);
    } else if (asked.op == 's') {
      rc = shutdown(fd, asked.how);
    }
  }
  // The result, the parent's virtual time (the child's clocks read it), then a read's bytes.
  const std::int64_t at = since_start(now()).count();
  std::memcpy(answer.data(), &rc, sizeof rc);
  std::memcpy(answer.data() + sizeof rc, &at, sizeof at);
  LOOPSIM_REAL(send)(report, answer.data(), answer.size(), MSG_NOSIGNAL);
}

long Seam::await_child(pid_t pid, const char* call) {
  Inside inside(*this);
  const int report = child_report_;
  LOOPSIM_ASSERT(pid > 0 && report >= 0);  // fork_process made the child and its report channel
  child_report_ = -1;
  int status = 0;
  const auto real_now = [] {
    timespec t{};
    real_clock(CLOCK_MONOTONIC, &t);
    return std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec);
  };
  auto began = real_now();
  const Duration limit = scenario_.target->spin_limit;
  std::vector<std::pair<int, int>> buffers;  // simulated pipe end, real buffer
  int spawn_failure = 0;
  // Each report as it comes: a call on a connection is made and answered at once (the child
  // waits for it), the rest is kept for the child's end. False once none is left. One buffer
  // serves the whole wait: the loop below asks about once a millisecond.
  std::vector<char> bytes(1 + sizeof(Forward) + forward_bytes);
  const auto take_report = [&]() {
    iovec part{bytes.data(), bytes.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msghdr message{};
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    const ssize_t n = LOOPSIM_REAL(recvmsg)(report, &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n <= 0) return false;
    int fd = -1;
    if (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr && header->cmsg_type == SCM_RIGHTS) {
      std::memcpy(&fd, CMSG_DATA(header), sizeof fd);
    }
    if (bytes[0] == Report::call) {
      serve_child_call(report, bytes.data() + 1, std::size_t(n - 1));
      began = real_now();  // the child is waiting on the simulation, not spinning
    }
    if (bytes[0] == Report::refused) {
      LOOPSIM_REAL(close)(report);
      stop_run(std::string(bytes.data() + 1, std::size_t(n - 1)));
    }
    if (bytes[0] == Report::spawn_error && n >= 1 + ssize_t(sizeof(int))) std::memcpy(&spawn_failure, bytes.data() + 1, sizeof(int));
    if (bytes[0] == Report::pipe_buffer && n >= 1 + ssize_t(sizeof(int)) && fd >= 0) {
      int sim = -1;
      std::memcpy(&sim, bytes.data() + 1, sizeof sim);
      buffers.emplace_back(sim, fd);
    }
    return true;
  };
  for (;;) {
    while (take_report()) {
    }
    const pid_t ended = LOOPSIM_REAL(waitpid)(pid, &status, WNOHANG);
    if (ended == pid) break;
    if (ended < 0 && errno != EINTR) refuse(call, -1, std::string("the seam lost its child: ") + std::strerror(errno));
    if (real_now() - began > limit) {
      ::kill(pid, SIGKILL);
      LOOPSIM_REAL(waitpid)(pid, &status, 0);
      refuse(call, -1,
             "its child ran for longer than target.spin_limit (" + std::to_string(limit.count() / 1'000'000) +
                 " ms of wall-clock time) without ending; the seam runs a child to its end before fork returns "
                 "(docs/targets.md)");
    }
    pollfd waiting{report, POLLIN, 0};
    LOOPSIM_REAL(poll)(&waiting, 1, 1);  // a report, or a millisecond
  }
  LOOPSIM_ASSERT(WIFEXITED(status) || WIFSIGNALED(status));  // waitpid reported its end, not a stop
  // The child has ended: what it reported is all there, its descriptors in flight kept open.
  while (take_report()) {
  }
  LOOPSIM_REAL(close)(report);
  for (const auto& [sim, fd] : buffers) {
    const std::string written = read_all(fd);
    LOOPSIM_REAL(close)(fd);
    if (written.empty()) continue;
    const std::int64_t taken = kernel_->write(sim, written);
    // A pipe whose reader is gone takes nothing (the child had EPIPE): that is as Linux has it.
    if (taken == -EPIPE) continue;
    if (taken < std::int64_t(written.size())) {
      refuse(call, process_fd(sim),
             "its child wrote " + std::to_string(written.size()) + " bytes to a simulated pipe that had room for " +
                 std::to_string(std::max<std::int64_t>(taken, 0)) +
                 "; the seam runs a child to its end before fork returns, so what it writes must fit the pipe's "
                 "buffer (F_SETPIPE_SZ raises it to 1 MiB)");
    }
  }
  // No child, as far as the program knows; but one ran and ended (glibc's posix_spawn clones,
  // and the clone's exec failed), and Linux signals its end as any other's.
  if (spawn_failure != 0) {
    post_signal(SIGCHLD);
    return -spawn_failure;
  }
  // SIG_IGN or SA_NOCLDWAIT: Linux reaps the child itself, and a wait finds none (ECHILD).
  const auto action = actions_.find(SIGCHLD);
  const bool reaped = action != actions_.end() &&
                      (action->second.sa_handler == SIG_IGN || (action->second.sa_flags & SA_NOCLDWAIT) != 0);
  if (!reaped) children_.emplace_back(pid, status);
  const int signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  trace_->events.push_back(
      sim::ev::Child{now(), worker(), signal != 0 ? 128 + signal : WEXITSTATUS(status), signal, call});
  post_signal(SIGCHLD);
  return pid;
}

// A wrapper's helpers (its children, run to their end) leave the simulation as it was; their
// trace events go with the wrapper, as the new program starts the run again.
bool Seam::pristine() const {
  if (now() != Instant{} || !threads_.empty()) return false;
  for (const sim::TraceEvent& event : trace_->events) {
    if (!std::holds_alternative<sim::ev::Child>(event)) return false;
  }
  for (const Fd& f : files_) {
    if (f.kind != Kind::none && f.kind != Kind::file) return false;
  }
  return true;
}

long Seam::reap(pid_t pid, int& status, bool keep) {
  for (auto it = children_.begin(); it != children_.end(); ++it) {
    if (pid > 0 && it->first != pid) continue;
    const pid_t found = it->first;
    status = it->second;
    if (!keep) children_.erase(it);
    return found;
  }
  return -ECHILD;
}

// ---- in the child, before its exec ----

void Seam::tell_parent_refused(const std::string& message) {
  send_report(report_, Report::refused, message.data(), message.size());
  LOOPSIM_REAL(_exit)(2);
  __builtin_unreachable();
}

long Seam::child_close(int fd) {
  forget(fd);
  return 0;
}

long Seam::child_dup(int fd, int to, bool cloexec, bool lowest) {
  // The number is taken in the real table too, as a copy of the placeholder (or of the real
  // descriptor `fd`).
  if (!owns(fd) && LOOPSIM_REAL(fcntl)(fd, F_GETFD) < 0) return -EBADF;
  int made;
  if (lowest) {
    made = LOOPSIM_REAL(fcntl)(fd, cloexec ? F_DUPFD_CLOEXEC : F_DUPFD, to);
  } else {
    if (fd == to) return to;
    if (owns(to)) forget(to);
    made = LOOPSIM_REAL(dup3)(fd, to, cloexec ? O_CLOEXEC : 0);
  }
  if (made < 0) return -errno;
  // The copy opens the same file, as the parent's dup does (a poller's is listed as one).
  if (owns(fd)) share(made, fds_[std::size_t(fd)].sim, cloexec);
  return made;
}

long Seam::child_fcntl(int fd, int cmd, long arg) {
  Fd& f = file_of(fd);
  switch (cmd) {
    case F_DUPFD: return child_dup(fd, int(arg), false, true);
    case F_DUPFD_CLOEXEC: return child_dup(fd, int(arg), true, true);
    case F_GETFD: return fds_[std::size_t(fd)].cloexec ? FD_CLOEXEC : 0;
    case F_SETFD:
      fds_[std::size_t(fd)].cloexec = (arg & FD_CLOEXEC) != 0;
      return 0;
    case F_GETFL: return (f.nonblocking ? O_NONBLOCK : 0) | (f.kind == Kind::pipe_read ? O_RDONLY : f.kind == Kind::pipe_write ? O_WRONLY : O_RDWR);
    case F_SETFL:
      f.nonblocking = (arg & O_NONBLOCK) != 0;
      return 0;
    default: refuse("fcntl (command " + std::to_string(cmd) + ")", fd, "a child is served only as far as its exec");
  }
}

bool Seam::forwarded(const char* call) {
  static constexpr std::string_view calls[] = {"read", "__read_chk", "recv", "__recv_chk", "recvfrom", "__recvfrom_chk",
                                               "readv", "recvmsg", "write", "send", "sendto", "writev", "sendmsg",
                                               "sendfile", "sendfile64", "shutdown"};
  return std::find(std::begin(calls), std::end(calls), std::string_view(call)) != std::end(calls);
}

long Seam::child_forward(char op, int fd, void* buffer, std::size_t size, int how, bool nonblocking) {
  Fd* entry = simulated(fd);
  if (entry == nullptr) return -EBADF;
  if (entry->kind != Kind::socket) {
    refuse(op == 'w' ? "write" : op == 's' ? "shutdown" : "read", fd,
           "a child is served only as far as its exec, and on the connections it holds: not on a simulated "
           "listener, pipe, poller or datagram socket (docs/targets.md)");
  }
  Forward asked{op, entry->nonblocking || nonblocking, entry->sim, how, std::min<std::uint64_t>(size, forward_bytes)};
  std::vector<char> message(1 + sizeof asked);
  message[0] = Report::call;
  std::memcpy(message.data() + 1, &asked, sizeof asked);
  if (op == 'w') message.insert(message.end(), static_cast<const char*>(buffer), static_cast<const char*>(buffer) + asked.size);
  if (LOOPSIM_REAL(send)(report_, message.data(), message.size(), MSG_NOSIGNAL) < 0) LOOPSIM_REAL(_exit)(2);
  std::vector<char> answer(2 * sizeof(std::int64_t) + forward_bytes);
  const ssize_t n = LOOPSIM_REAL(recv)(report_, answer.data(), answer.size(), 0);
  if (n < ssize_t(2 * sizeof(std::int64_t))) LOOPSIM_REAL(_exit)(2);  // the parent is gone
  std::int64_t rc = 0, at = 0;
  std::memcpy(&rc, answer.data(), sizeof rc);
  std::memcpy(&at, answer.data() + sizeof rc, sizeof at);
  child_now_ = Instant{} + Duration(at);
  if ((op == 'r' || op == 'p') && rc > 0) std::memcpy(buffer, answer.data() + 2 * sizeof rc, std::size_t(rc));
  return long(rc);
}

void Seam::spawn_failed(int error) {
  send_report(report_, Report::spawn_error, &error, sizeof error);
  LOOPSIM_REAL(_exit)(127);
  __builtin_unreachable();
}

// The child's pipes' write ends become real buffers at once, whatever writes to them (a
// subshell's builtins write through stdio, which no interposer sees), close-on-exec as they were.
void Seam::buffer_pipes() {
  std::map<int, int> buffers;  // simulated pipe end -> the real buffer standing for it
  for (int fd = 0; fd < int(fds_.size()); ++fd) {
    if (kind_of(fd) != Kind::pipe_write) continue;
    const Fd& f = file_of(fd);
    auto [it, made] = buffers.try_emplace(f.sim, -1);
    if (made) {
      it->second = ::memfd_create("loopsim-child-pipe", MFD_CLOEXEC);
      if (it->second < 0) refuse("fork", fd, std::string("the seam could not make a buffer for the pipe: ") + std::strerror(errno));
      send_report(report_, Report::pipe_buffer, &f.sim, sizeof f.sim, it->second);
    }
    // Should the exec fail, the child writes there too, as to the pipe (its error, before _exit).
    LOOPSIM_REAL(dup3)(it->second, fd, fds_[std::size_t(fd)].cloexec ? O_CLOEXEC : 0);
    forget(fd, false);  // the number is the buffer's now
  }
  for (const auto& [sim, buffer] : buffers) LOOPSIM_REAL(close)(buffer);
}

void Seam::before_exec(const char* call) {
  for (int fd = 0; fd < int(fds_.size()); ++fd) {
    const Kind kind = kind_of(fd);
    if (kind == Kind::none || kind == Kind::file || fds_[std::size_t(fd)].cloexec) continue;  // its placeholder closes at exec
    {
      // One left open by oversight (a listener made without SOCK_CLOEXEC) keeps its number in the
      // new program, as a placeholder that fails any call with EBADF. One handed over as stdin,
      // stdout or stderr is meant for the new program, which would use it unsimulated.
      if (fd > STDERR_FILENO) {
        LOOPSIM_REAL(fcntl)(fd, F_SETFD, 0);
        continue;
      }
      refuse(call, fd,
             "the child execs with a simulated descriptor as its stdin, stdout or stderr; the new program would "
             "use it outside the simulation (the seam hands a child's exec pipes' write ends only)");
    }
  }
}

}  // namespace loopsim::posix
