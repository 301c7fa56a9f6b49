#include "checker/isolated.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>
#include <vector>
#include <algorithm>

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

// A child that runs `work` and writes what it returns to `fd`, then exits; never returns.
[[noreturn]] void be_child(int fd, const std::function<std::string()>& work) {
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, SIG_DFL);
  std::string result;
  try {
    result = work();
  } catch (...) {
    ::_exit(2);  // `work` reports its own errors; anything escaping it is a crash of a kind
  }
  write_all(fd, result);
  ::_exit(0);  // no destructors, no atexit: the parent's state is not the child's to tear down
}

std::variant<std::string, Crashed> ended(pid_t pid, std::string bytes) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return bytes;
  return Crashed{describe(status)};
}

}  // namespace

void run_isolated_all(std::size_t count, std::size_t parallel, const std::function<std::string(std::size_t)>& work,
                      const std::function<void(std::size_t, std::variant<std::string, Crashed>)>& done) {
  struct Child {
    pid_t pid;
    int fd;
    std::size_t index;
    std::string bytes;
  };
  std::vector<Child> running;
  std::size_t next = 0;
  parallel = std::max<std::size_t>(1, parallel);
  while (next < count || !running.empty()) {
    while (next < count && running.size() < parallel) {
      const std::size_t i = next++;
      int fds[2];
      if (::pipe2(fds, O_CLOEXEC) != 0) {
        done(i, Crashed{std::string("cannot make a pipe: ") + std::strerror(errno)});
        continue;
      }
      const pid_t pid = ::fork();
      if (pid < 0) {
        ::close(fds[0]);
        ::close(fds[1]);
        done(i, Crashed{std::string("cannot fork: ") + std::strerror(errno)});
        continue;
      }
      if (pid == 0) {
        ::close(fds[0]);
        be_child(fds[1], [&work, i] { return work(i); });
      }
      ::close(fds[1]);
      running.push_back({pid, fds[0], i, {}});
    }
    if (running.empty()) continue;
    std::vector<pollfd> watched;
    for (const Child& c : running) watched.push_back({c.fd, POLLIN, 0});
    if (::poll(watched.data(), watched.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;  // cannot wait: the children are reaped below
    }
    for (std::size_t k = running.size(); k-- > 0;) {
      if (watched[k].revents == 0) continue;
      char buffer[65536];
      ssize_t n = ::read(running[k].fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        running[k].bytes.append(buffer, std::size_t(n));
        continue;
      }
      Child c = std::move(running[k]);
      running.erase(running.begin() + std::ptrdiff_t(k));
      ::close(c.fd);
      done(c.index, ended(c.pid, std::move(c.bytes)));
    }
  }
  for (Child& c : running) {  // only after poll failed
    ::close(c.fd);
    done(c.index, ended(c.pid, std::move(c.bytes)));
  }
}

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
    be_child(fds[1], work);
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
  return ended(pid, std::move(bytes));
}

}  // namespace loopsim::checker
