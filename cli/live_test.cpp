// End to end: `loopsim live` in a child process, spoken to over real loopback sockets.
// Nothing here can hang: every read polls with a deadline, and the child is killed with
// SIGKILL if it outlives the test.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#ifndef LOOPSIM_BINARY
#error "LOOPSIM_BINARY must name the loopsim executable"
#endif

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto read_deadline = std::chrono::seconds(5);
constexpr auto exit_deadline = std::chrono::seconds(5);

// The child process; killed and reaped if the test ends while it still runs.
struct Child {
  pid_t pid = -1;
  int stdout_fd = -1;
  ~Child() {
    if (stdout_fd >= 0) ::close(stdout_fd);
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
};

void spawn(Child& child, const char* const* argv) {
  int pipe_fds[2];
  REQUIRE(::pipe2(pipe_fds, O_CLOEXEC) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(pipe_fds[1], STDOUT_FILENO);  // dup2 clears O_CLOEXEC on the copy
    ::execv(argv[0], const_cast<char* const*>(argv));
    _exit(127);
  }
  ::close(pipe_fds[1]);
  child.pid = pid;
  child.stdout_fd = pipe_fds[0];
}

// Waits until fd is readable or the deadline passes; false on timeout.
bool readable_before(int fd, Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() < 0) return false;
  pollfd p{fd, POLLIN, 0};
  int n = ::poll(&p, 1, int(left.count()) + 1);
  return n > 0;
}

// Reads one chunk; returns bytes read, 0 at end of stream, -1 on timeout or error.
ssize_t read_some(int fd, std::string& into, Clock::time_point deadline) {
  if (!readable_before(fd, deadline)) return -1;
  char buffer[4096];
  ssize_t n = ::read(fd, buffer, sizeof buffer);
  if (n > 0) into.append(buffer, std::size_t(n));
  return n;
}

std::string read_line(int fd) {
  std::string text;
  auto deadline = Clock::now() + read_deadline;
  while (text.find('\n') == std::string::npos) {
    if (read_some(fd, text, deadline) <= 0) break;
  }
  return text.substr(0, text.find('\n'));
}

// A client socket, closed when the test leaves its scope.
struct Socket {
  int fd = -1;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  explicit Socket(int f) : fd(f) {}
  ~Socket() { ::close(fd); }
};

int connect_to(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(std::uint16_t(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address);
  if (rc != 0) ::close(fd);
  REQUIRE(rc == 0);
  return fd;
}

struct Answer {
  std::string head;  // up to and including the blank line
  std::string body;
  bool closed = false;  // the server closed the connection after it
};

std::size_t content_length(const std::string& head) {
  auto at = head.find("Content-Length: ");
  if (at == std::string::npos) return 0;
  return std::stoul(head.substr(at + std::strlen("Content-Length: ")));
}

// Reads one response; with `until_close`, also waits for the server to close.
Answer exchange(int fd, const std::string& request, bool until_close) {
  REQUIRE(::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == ssize_t(request.size()));
  std::string text;
  auto deadline = Clock::now() + read_deadline;
  Answer answer;
  for (;;) {
    auto head_end = text.find("\r\n\r\n");
    bool complete = head_end != std::string::npos &&
                    text.size() >= head_end + 4 + content_length(text.substr(0, head_end + 4));
    if (complete && !until_close) break;
    ssize_t n = read_some(fd, text, deadline);
    REQUIRE(n >= 0);  // a timeout or an error fails the test
    if (n == 0) {
      answer.closed = true;
      break;
    }
  }
  auto head_end = text.find("\r\n\r\n");
  REQUIRE(head_end != std::string::npos);
  answer.head = text.substr(0, head_end + 4);
  answer.body = text.substr(head_end + 4);
  return answer;
}

// Status of the exited child, or -1 if it is still running at the deadline.
int exit_status_before(pid_t pid, Clock::time_point deadline) {
  while (Clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

}  // namespace

TEST_CASE("live serves /fast and /slow over real loopback sockets and stops cleanly on SIGTERM") {
  const char* argv[] = {LOOPSIM_BINARY, "live", "--listen", "127.0.0.1:0", nullptr};
  Child child;
  spawn(child, argv);
  std::string line = read_line(child.stdout_fd);
  const std::string prefix = "listening on 127.0.0.1:";
  INFO("first line on the stdout of " LOOPSIM_BINARY ": '" << line << "'");
  REQUIRE(line.rfind(prefix, 0) == 0);
  int port = std::stoi(line.substr(prefix.size()));
  REQUIRE(port > 0);

  Socket fast{connect_to(port)};
  Answer a = exchange(fast.fd, "GET /fast HTTP/1.1\r\nHost: x\r\n\r\n", false);
  CHECK(a.head.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(a.body == "fast\n");

  Socket slow{connect_to(port)};
  Answer b = exchange(slow.fd, "GET /slow?ms=5 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                      true);
  CHECK(b.head.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(b.body == "slow\n");
  CHECK(b.closed);

  Socket bad{connect_to(port)};
  Answer c = exchange(bad.fd, "NOT A REQUEST\r\n\r\n", true);
  CHECK(c.head.rfind("HTTP/1.1 400", 0) == 0);
  CHECK(c.closed);

  REQUIRE(::kill(child.pid, SIGTERM) == 0);
  int status = exit_status_before(child.pid, Clock::now() + exit_deadline);
  if (status == -1) FAIL("loopsim live did not exit within 5 s of SIGTERM; killed");
  child.pid = -1;  // reaped
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
