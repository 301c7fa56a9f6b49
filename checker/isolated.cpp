#include "checker/isolated.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>

namespace loopsim::checker {

namespace {

// Held from making a pipe until the parent has closed its write end, so that no other
// thread's child inherits that end and keeps the pipe open after this child is gone.
std::mutex forking;

void write_all(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += std::size_t(n);
  }
}

std::string describe(int status) {
  if (WIFSIGNALED(status))
    return "died of signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  if (WIFEXITED(status)) return "exited " + std::to_string(WEXITSTATUS(status)) + " without a result";
  return "ended without a result";
}

}  // namespace

std::variant<std::string, Crashed> run_isolated(const std::function<std::string()>& work) {
  int fds[2];
  std::unique_lock lock(forking);
  if (::pipe2(fds, O_CLOEXEC) != 0) return Crashed{std::string("cannot make a pipe: ") + std::strerror(errno)};
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return Crashed{std::string("cannot fork: ") + std::strerror(errno)};
  }
  if (pid == 0) {
    ::close(fds[0]);
    for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, SIG_DFL);
    std::string result;
    try {
      result = work();
    } catch (...) {
      ::_exit(2);  // `work` reports its own errors; anything escaping it is a crash of a kind
    }
    write_all(fds[1], result);
    ::_exit(0);  // no destructors, no atexit: the parent's state is not the child's to tear down
  }
  ::close(fds[1]);
  lock.unlock();
  std::string bytes;
  char buffer[65536];
  for (;;) {
    ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    bytes.append(buffer, std::size_t(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return bytes;
  return Crashed{describe(status)};
}

}  // namespace loopsim::checker
