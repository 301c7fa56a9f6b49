// The live build on real threads: several workers handing connections over (R10), a handler
// pool answering by posts (R11), and the drain after a signal (R5). CI also builds these with
// ThreadSanitizer (LOOPSIM_TSAN), which is what they are for: the loop's cross-thread state
// (the mailbox, the shutdown flag, the round robin) is exercised while clients come and go.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <string>
#include <optional>
#include <thread>
#include <vector>

#include "realloop/live/serve.hpp"
#include "realloop/live/loopback_for_tests.hpp"
#include "realloop/live/server_for_tests.hpp"
#include "tests/eventually_for_tests.hpp"

using namespace loopsim;

namespace {

using Clock = std::chrono::steady_clock;

// A fresh connection with one request sent on it (`Connection: close`), or -1. Once it
// returns, the request is in the server's socket: a drain that begins later still answers it.
int ask(int port, const std::string& path) {
  int fd = loopsim::testing::loopback_connect(port);
  if (fd < 0) return -1;
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != ssize_t(request.size())) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// The answer on `fd` (from ask), read until the server closes; the status line's code, or -1.
// Closes `fd`.
int answer(int fd, std::string* body = nullptr) {
  if (fd < 0) return -1;
  std::string text;
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  char buffer[4096];
  while (Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    text.append(buffer, std::size_t(n));
  }
  ::close(fd);
  if (text.rfind("HTTP/1.1 ", 0) != 0 || text.size() < 12) return -1;
  if (body != nullptr) *body = text.substr(text.find("\r\n\r\n") + 4);
  return std::stoi(text.substr(9, 3));
}

// One request and its answer over a fresh connection; the status line's code, or -1.
int fetch(int port, const std::string& path, std::string* body = nullptr) { return answer(ask(port, path), body); }

using Server = loopsim::testing::LiveServer;

// Clients on `threads` threads, each fetching `each` paths in turn; the count answered 200.
int crowd(int port, int threads, int each, const std::vector<std::string>& paths) {
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < threads; ++t) {
    clients.emplace_back([&, t] {
      for (int i = 0; i < each; ++i) {
        if (fetch(port, paths[std::size_t(t + i) % paths.size()]) == 200) ok.fetch_add(1);
      }
    });
  }
  for (auto& client : clients) client.join();
  return ok.load();
}

}  // namespace

TEST_CASE("threads: three workers share accepts by hand-offs and drain on SIGTERM", "[threads]") {
  live::LiveOptions options;
  options.workers = 3;
  Server server(options);
  CHECK(crowd(server.port, 6, 20, {"/fast", "/hello", "/slow?us=200"}) == 120);
  live::LiveResult result = server.stop();
  CHECK(result.error == 0);
  CHECK(result.unfinished == 0);
  CHECK_FALSE(result.forced);
}

TEST_CASE("threads: workers with listeners of their own (SO_REUSEPORT)", "[threads]") {
  live::LiveOptions options;
  options.workers = 2;
  options.reuse_port = true;
  Server server(options);
  CHECK(crowd(server.port, 4, 20, {"/fast", "/hello"}) == 80);
  CHECK(server.stop().unfinished == 0);
}

TEST_CASE("threads: pool mode answers by posts from the pool's threads, with several workers", "[threads]") {
  live::LiveOptions options;
  options.workers = 2;
  options.loop.mode = HandlerMode::pool;
  options.loop.pool_threads = 3;
  Server server(options);
  CHECK(crowd(server.port, 6, 10, {"/slow?ms=2", "/fast", "/bytes?n=100000"}) == 60);
  // A drain with a handler still in the pool: its answer comes back before the exit. The
  // request is in the server's socket before the signal: the drain admits it if the loop has not.
  const int slow = ask(server.port, "/slow?ms=300");
  REQUIRE(slow >= 0);
  live::LiveResult result = server.stop();
  CHECK(answer(slow) == 200);
  CHECK(result.unfinished == 0);
}

TEST_CASE("threads: past drain_timeout the pool's queued handlers are dropped and counted, and none is waited for", "[threads]") {
  // One pool thread and four 1 s handlers: one runs, three wait. The drain resets the four
  // clients at its deadline; before, serve_live then waited for the pool to run all four, for
  // nobody (4 s).
  live::LiveOptions options;
  options.loop.mode = HandlerMode::pool;
  options.loop.pool_threads = 1;
  options.loop.drain_timeout = std::chrono::milliseconds(200);
  Server server(options);
  std::vector<int> asked;
  for (int i = 0; i < 4; ++i) asked.push_back(ask(server.port, "/slow?ms=1000"));
  for (int fd : asked) REQUIRE(fd >= 0);
  const auto signalled = Clock::now();
  live::LiveResult result = server.stop();
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - signalled);
  for (int fd : asked) CHECK(answer(fd) == -1);  // reset, unanswered
  CHECK(result.unfinished == 4);
  CHECK_FALSE(result.forced);
  CHECK(result.handlers_dropped >= 3);  // at most one had begun
  CHECK(result.handlers_dropped <= 4);
  CHECK(took.count() < 200 + 1000 + 700);  // the timeout, one handler, and room for a loaded machine
}

TEST_CASE("threads: a second signal stops a pool-mode drain at once, dropping what is queued", "[threads]") {
  // No drain bound: three 2 s handlers on one pool thread would take 6 s. The second signal
  // comes once the first has closed the listener (two sent together may arrive as one).
  live::LiveOptions options;
  options.loop.mode = HandlerMode::pool;
  options.loop.pool_threads = 1;
  options.loop.drain_timeout = std::chrono::nanoseconds(0);
  Server server(options);
  std::vector<int> asked;
  for (int i = 0; i < 3; ++i) asked.push_back(ask(server.port, "/slow?ms=2000"));
  for (int fd : asked) REQUIRE(fd >= 0);
  server.signal();
  const int port = server.port;
  REQUIRE(loopsim::testing::eventually([port] {
    const int fd = loopsim::testing::loopback_connect(port);
    if (fd >= 0) ::close(fd);
    return fd == -ECONNREFUSED;
  }));
  const auto second = Clock::now();
  server.signal();
  live::LiveResult result = server.join();
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - second);
  CHECK(result.forced);
  CHECK(took.count() < 1500);  // not the running handler's 2 s
  // The signal ends the handlers' spending: a queued one may still run and be answered before
  // the loop sees the stop. Each request is answered or counted, never lost unsaid.
  int answered = 0;
  for (int fd : asked) answered += answer(fd) == 200 ? 1 : 0;
  CHECK(answered + result.unfinished >= 3);
  // The pool's one thread may not have begun any (a loaded machine): all three dropped. None is
  // both dropped and answered.
  CHECK(result.handlers_dropped <= 3);
  CHECK(answered + result.handlers_dropped <= 3);
}

TEST_CASE("threads: a SIGHUP reload reaches every worker while they serve", "[threads]") {
  live::LiveOptions options;
  options.workers = 2;
  std::atomic<int> reloads{0};
  options.reload = [] {
    LoopConfig next;
    next.head_timeout = std::chrono::milliseconds(200);
    return std::optional<LoopConfig>(next);
  };
  options.on_reloaded = [&reloads](bool changed) {
    if (changed) reloads.fetch_add(1);
  };
  Server server(options);
  std::thread load([&server] { crowd(server.port, 2, 40, {"/fast", "/hello"}); });
  ::kill(::getpid(), SIGHUP);  // whichever thread takes it, the handler only writes to a pipe
  REQUIRE(loopsim::testing::eventually([&reloads] { return reloads.load() == 1; }));
  load.join();
  // A head that never ends is now timed out at 200 ms, whichever worker it is handed to.
  for (int i = 0; i < 2; ++i) {
    int fd = loopsim::testing::loopback_connect(server.port);
    REQUIRE(fd >= 0);
    const std::string head = "GET /fast HTTP/1.1\r\nHost: x\r\n";
    REQUIRE(::send(fd, head.data(), head.size(), MSG_NOSIGNAL) == ssize_t(head.size()));
    const auto began = Clock::now();
    CHECK(answer(fd) == 408);
    CHECK(Clock::now() - began < std::chrono::seconds(3));
  }
  CHECK(server.stop().unfinished == 0);
}
