// R15's registration after the eager read, against a kernel that holds one connection's bytes
// and counts the calls made on it: a request that came with its connection is answered without
// a registration when it closes, and with one, made after the read, when it is kept.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "realloop/loop.hpp"

using namespace loopsim;

namespace {

constexpr int connection_fd = 10;
constexpr int wake_fd = 6;

// A connection whose bytes are all there at once; the loop's wake object, reported readable
// after a signal; every call on the connection counted.
class OneConnectionKernel final : public Kernel {
 public:
  std::string incoming;  // what the connection holds, taken by reads
  std::string written;
  int watches = 0, rewatches = 0, reads = 0;
  std::uint32_t watched_for = 0;
  bool closed = false;

  Instant now() override { return Instant(Duration(0)); }
  void spend(Duration) override {}
  int listen(const ListenSpec&) override { return -1; }
  int local_port(int) override { return -1; }
  int accept(int) override { return -EAGAIN; }
  std::int64_t read(int fd, std::span<char> into) override {
    if (fd != connection_fd) return -EBADF;
    ++reads;
    if (incoming.empty()) return -EAGAIN;
    const std::size_t n = std::min(into.size(), incoming.size());
    std::memcpy(into.data(), incoming.data(), n);
    incoming.erase(0, n);
    return std::int64_t(n);
  }
  std::int64_t write(int fd, std::span<const char> bytes) override {
    if (fd != connection_fd) return -EBADF;
    written.append(bytes.data(), bytes.size());
    return std::int64_t(bytes.size());
  }
  int close(int fd) override {
    closed = closed || fd == connection_fd;
    return 0;
  }
  int abort(int fd) override { return close(fd); }
  int descriptor_limit() override { return 1024; }
  int poller_create() override { return 5; }
  int watch(int, int fd, std::uint32_t interest, Trigger) override {
    if (fd == connection_fd) {
      ++watches;
      watched_for = interest;
    }
    return 0;
  }
  int rewatch(int, int fd, std::uint32_t, Trigger) override {
    if (fd == connection_fd) ++rewatches;
    return 0;
  }
  int unwatch(int, int) override { return 0; }
  int wait(int, std::span<PollEvent> events, std::optional<Duration>) override {
    if (!woken_) return 0;
    woken_ = false;
    events[0] = PollEvent{wake_fd, io::readable};
    return 1;
  }
  int wake_create() override { return wake_fd; }
  void wake_signal(int) override { woken_ = true; }
  void wake_drain(int) override {}
  int pipe(int[2]) override { return -1; }
  int shutdown_write(int) override { return -1; }
  PollerFlavour flavour() const override { return PollerFlavour::epoll; }

 private:
  bool woken_ = false;
};

// The connection handed to a worker with `request` already in it, and one pass run.
OneConnectionKernel served(const std::string& request, const LoopConfig& config) {
  OneConnectionKernel kernel;
  kernel.incoming = request;
  LoopObserver quiet;
  Loop worker(kernel, config, quiet, 1);
  REQUIRE(worker.attach(-1) == 0);  // served by hand-offs alone
  REQUIRE(worker.offer(connection_fd));
  worker.run_pass();
  OneConnectionKernel after_the_pass = kernel;  // the worker closes what it holds when it goes
  return after_the_pass;
}

const std::string kept = "GET /fast HTTP/1.1\r\nHost: x\r\n\r\n";
const std::string closing = "GET /fast HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

}  // namespace

TEST_CASE("R15 a connection is registered after its eager read: none for one that closes, one for one kept") {
  const LoopConfig config;
  const auto closed = served(closing, config);
  CHECK(closed.written.starts_with("HTTP/1.1 200 OK\r\n"));
  CHECK(closed.closed);
  CHECK(closed.watches == 0);  // answered and closed unregistered
  CHECK(closed.reads == 1);    // R14: the short read ends the reading
  const auto open = served(kept, config);
  CHECK(open.written.starts_with("HTTP/1.1 200 OK\r\n"));
  CHECK_FALSE(open.closed);
  CHECK(open.watches == 1);
  CHECK(open.watched_for == (io::readable | io::read_hangup));
  CHECK(open.rewatches == 0);
  // The loop before: registered at admission, whatever came.
  LoopConfig before;
  before.watch_after_eager_read = false;
  CHECK(served(closing, before).watches == 1);
  CHECK(served(kept, before).watches == 1);
  // The sabotage: a connection whose read found a request is left unregistered, kept or not.
  LoopConfig sabotaged;
  sabotaged.watch_served_connections = false;
  const auto stranded = served(kept, sabotaged);
  CHECK_FALSE(stranded.closed);
  CHECK(stranded.watches == 0);
  // A connection that sent nothing yet is registered whatever the sabotage.
  CHECK(served("", sabotaged).watches == 1);
}
