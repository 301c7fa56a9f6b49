// LinuxKernel against real loopback sockets. Every wait is bounded (at most 1 s), so a broken
// kernel fails a test instead of hanging it.
#include "realloop/live/linux_kernel.hpp"
#include "realloop/live/loopback_for_tests.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <catch2/catch.hpp>
#include <cerrno>
#include <span>
#include <string>
#include <utility>

using namespace std::chrono_literals;
using loopsim::Instant;
using loopsim::Duration;
using loopsim::PollEvent;
using loopsim::Trigger;
namespace io = loopsim::io;

namespace {

constexpr Duration wait_max = 1s;
constexpr Duration quiet_wait = 20ms;  // long enough for loopback to deliver anything in flight

// Owns a descriptor so that a failed REQUIRE does not leak it.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { if (fd >= 0) ::close(fd); }
  int release() { return std::exchange(fd, -1); }
};

// A blocking client connected to 127.0.0.1:port.
int connect_client(int port) {
  int fd = loopsim::testing::loopback_connect(port);
  REQUIRE(fd >= 0);
  return fd;
}

// For a listener, TCP_INFO's tcpi_unacked is the accept queue's depth (what ss shows).
int queued(int listener) {
  tcp_info info{};
  socklen_t length = sizeof info;
  REQUIRE(::getsockopt(listener, IPPROTO_TCP, TCP_INFO, &info, &length) == 0);
  return int(info.tcpi_unacked);
}

// Waits, at most 1 s, until the listener's accept queue holds `depth` connections.
void await_queued(loopsim::live::LinuxKernel& kernel, int listener, int depth) {
  Instant deadline = kernel.now() + wait_max;
  while (queued(listener) < depth && kernel.now() < deadline) kernel.spend(1ms);
  REQUIRE(queued(listener) == depth);
}

struct Listening {
  loopsim::live::LinuxKernel kernel;
  Fd listener{kernel.listen(loopsim::ListenSpec{"127.0.0.1", 0, 16})};
  Fd poller{kernel.poller_create()};
  int port = kernel.local_port(listener.fd);

  Listening() {
    REQUIRE(listener.fd >= 0);
    REQUIRE(poller.fd >= 0);
    REQUIRE(port > 0);
  }

  // An accepted server-side connection with its client end.
  std::pair<int, int> connected_pair() {
    int client = connect_client(port);
    await_queued(kernel, listener.fd, 1);
    int server = kernel.accept(listener.fd);
    REQUIRE(server >= 0);
    return {server, client};
  }

  int wait(std::span<PollEvent> into, Duration timeout) {
    return kernel.wait(poller.fd, into, timeout);
  }
};

}  // namespace

TEST_CASE("a listener on port 0 gets a free port, accepts a connection and then says EAGAIN") {
  Listening l;
  Fd client{connect_client(l.port)};
  await_queued(l.kernel, l.listener.fd, 1);
  Fd server{l.kernel.accept(l.listener.fd)};
  REQUIRE(server.fd >= 0);
  CHECK(l.kernel.accept(l.listener.fd) == -EAGAIN);
  CHECK(l.kernel.flavour() == loopsim::PollerFlavour::epoll);
}

TEST_CASE("listen returns errors as values: a bad address and a port already listened on") {
  Listening l;
  loopsim::live::LinuxKernel& kernel = l.kernel;
  CHECK(kernel.listen(loopsim::ListenSpec{"not-an-address", 0, 16}) == -EINVAL);
  CHECK(kernel.listen(loopsim::ListenSpec{"127.0.0.1", std::uint16_t(l.port), 16}) == -EADDRINUSE);
  CHECK(kernel.local_port(-1) == -EBADF);
}

TEST_CASE("an edge-triggered listener reports two queued connections once, and a partial drain "
          "gets no new event until another arrives") {
  Listening l;
  REQUIRE(l.kernel.watch(l.poller.fd, l.listener.fd, io::readable, Trigger::edge) == 0);
  Fd a{connect_client(l.port)};
  Fd b{connect_client(l.port)};
  await_queued(l.kernel, l.listener.fd, 2);

  std::array<PollEvent, 8> events;
  REQUIRE(l.wait(events, wait_max) == 1);
  CHECK(events[0].fd == l.listener.fd);
  CHECK(events[0].ready == io::readable);
  CHECK(events[0].data == -1);
  CHECK(l.wait(events, 0ns) == 0);

  Fd first{l.kernel.accept(l.listener.fd)};  // one of two: the drain stops before EAGAIN
  REQUIRE(first.fd >= 0);
  CHECK(l.wait(events, quiet_wait) == 0);  // the second connection is stranded

  Fd c{connect_client(l.port)};
  REQUIRE(l.wait(events, wait_max) == 1);
  CHECK(events[0].fd == l.listener.fd);
  Fd second{l.kernel.accept(l.listener.fd)};
  Fd third{l.kernel.accept(l.listener.fd)};
  CHECK(second.fd >= 0);
  CHECK(third.fd >= 0);
  CHECK(l.kernel.accept(l.listener.fd) == -EAGAIN);
}

TEST_CASE("read says EAGAIN when nothing is buffered, returns the data sent, then 0 at end of "
          "stream with a read hangup") {
  Listening l;
  auto [server_fd, client_fd] = l.connected_pair();
  Fd server{server_fd}, client{client_fd};
  REQUIRE(l.kernel.watch(l.poller.fd, server.fd, io::readable, Trigger::edge) == 0);
  std::array<char, 64> buffer;
  CHECK(l.kernel.read(server.fd, buffer) == -EAGAIN);

  REQUIRE(::send(client.fd, "hello", 5, MSG_NOSIGNAL) == 5);
  std::array<PollEvent, 8> events;
  REQUIRE(l.wait(events, wait_max) == 1);
  CHECK(events[0].fd == server.fd);
  CHECK(events[0].ready == io::readable);
  REQUIRE(l.kernel.read(server.fd, buffer) == 5);
  CHECK(std::string(buffer.data(), 5) == "hello");
  CHECK(l.kernel.read(server.fd, buffer) == -EAGAIN);

  ::close(client.release());
  REQUIRE(l.wait(events, wait_max) == 1);
  CHECK(events[0].ready == (io::readable | io::read_hangup));
  CHECK(l.kernel.read(server.fd, buffer) == 0);
}

TEST_CASE("a reset peer shows as an error event, ECONNRESET on read and EPIPE on write") {
  Listening l;
  auto [server_fd, client_fd] = l.connected_pair();
  Fd server{server_fd}, client{client_fd};
  REQUIRE(l.kernel.watch(l.poller.fd, server.fd, io::readable, Trigger::level) == 0);
  linger abort_on_close{1, 0};  // close sends RST
  REQUIRE(::setsockopt(client.fd, SOL_SOCKET, SO_LINGER, &abort_on_close,
                       sizeof abort_on_close) == 0);
  ::close(client.release());

  std::array<PollEvent, 8> events;
  REQUIRE(l.wait(events, wait_max) == 1);
  CHECK((events[0].ready & io::error) != 0);
  CHECK((events[0].ready & io::hangup) != 0);
  std::array<char, 64> buffer;
  CHECK(l.kernel.read(server.fd, buffer) == -ECONNRESET);
  CHECK(l.kernel.write(server.fd, std::span<const char>("x", 1)) == -EPIPE);  // no SIGPIPE
}

TEST_CASE("a one-shot item reports once and again only after it is re-armed") {
  Listening l;
  auto [server_fd, client_fd] = l.connected_pair();
  Fd server{server_fd}, client{client_fd};
  // A fresh connection is writable at once: registering it queues it.
  REQUIRE(l.kernel.watch(l.poller.fd, server.fd, io::writable, Trigger::oneshot) == 0);
  std::array<PollEvent, 8> events;
  REQUIRE(l.wait(events, wait_max) == 1);
  CHECK(events[0].ready == io::writable);
  CHECK(l.wait(events, quiet_wait) == 0);
  REQUIRE(l.kernel.rewatch(l.poller.fd, server.fd, io::writable, Trigger::oneshot) == 0);
  CHECK(l.wait(events, wait_max) == 1);
  REQUIRE(l.kernel.unwatch(l.poller.fd, server.fd) == 0);
  CHECK(l.kernel.unwatch(l.poller.fd, server.fd) == -ENOENT);
}

TEST_CASE("a wake object is readable after a signal and not after a drain") {
  Listening l;
  Fd wake{l.kernel.wake_create()};
  REQUIRE(wake.fd >= 0);
  REQUIRE(l.kernel.watch(l.poller.fd, wake.fd, io::readable, Trigger::level) == 0);
  std::array<PollEvent, 8> events;
  CHECK(l.wait(events, 0ns) == 0);

  errno = EINTR;
  l.kernel.wake_signal(wake.fd);
  l.kernel.wake_signal(wake.fd);
  CHECK(errno == EINTR);  // left as found: callable from a signal handler
  REQUIRE(l.wait(events, wait_max) == 1);
  CHECK(events[0].fd == wake.fd);
  CHECK(events[0].ready == io::readable);

  l.kernel.wake_drain(wake.fd);
  CHECK(l.wait(events, 0ns) == 0);
  l.kernel.wake_drain(wake.fd);  // draining a clear wake object is harmless
  CHECK(l.wait(events, 0ns) == 0);
}

TEST_CASE("close removes a descriptor from the poller's interest set") {
  Listening l;
  auto [server_fd, client_fd] = l.connected_pair();
  Fd server{server_fd}, client{client_fd};
  REQUIRE(l.kernel.watch(l.poller.fd, server.fd, io::readable, Trigger::level) == 0);
  REQUIRE(::send(client.fd, "x", 1, MSG_NOSIGNAL) == 1);
  std::array<PollEvent, 8> events;
  REQUIRE(l.wait(events, wait_max) == 1);  // level: still readable, reported while it stays so

  REQUIRE(l.kernel.close(server.release()) == 0);
  CHECK(l.wait(events, quiet_wait) == 0);
  CHECK(l.kernel.close(server_fd) == -EBADF);
}

TEST_CASE("a wait rounds its timeout up to whole milliseconds and spend sleeps its duration") {
  Listening l;
  std::array<PollEvent, 8> events;
  Instant before = l.kernel.now();
  CHECK(l.wait(events, 100us) == 0);  // rounded down, this would not block at all
  Duration waited = l.kernel.now() - before;
  CHECK(waited >= 100us);

  before = l.kernel.now();
  l.kernel.spend(2ms);
  CHECK(l.kernel.now() - before >= 2ms);
  CHECK(l.kernel.now().time_since_epoch() >= Duration(0));
}
