#include "realloop/live/linux_kernel.hpp"

#include <algorithm>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <vector>

#include "base/assert.hpp"

namespace loopsim::live {
namespace {

constexpr std::int64_t ns_per_ms = 1'000'000;
constexpr std::int64_t ns_per_s = 1'000'000'000;

std::int64_t to_ns(const timespec& t) { return std::int64_t(t.tv_sec) * ns_per_s + t.tv_nsec; }

timespec monotonic() {
  timespec t{};
  int rc = ::clock_gettime(CLOCK_MONOTONIC, &t);
  LOOPSIM_ASSERT_OP(rc, ==, 0);
  return t;
}

std::uint32_t to_epoll(std::uint32_t interest, Trigger trigger) {
  std::uint32_t bits = EPOLLRDHUP;
  if (interest & io::readable) bits |= EPOLLIN;
  if (interest & io::exclusive) bits |= EPOLLEXCLUSIVE;  // only valid with EPOLL_CTL_ADD
  if (interest & io::writable) bits |= EPOLLOUT;
  switch (trigger) {
    case Trigger::edge: return bits | EPOLLET;
    case Trigger::level: return bits;
    case Trigger::oneshot: return bits | EPOLLONESHOT;
  }
  LOOPSIM_ASSERT(false);
}

std::uint32_t from_epoll(std::uint32_t bits) {
  std::uint32_t ready = 0;
  if (bits & EPOLLIN) ready |= io::readable;
  if (bits & EPOLLOUT) ready |= io::writable;
  if (bits & EPOLLHUP) ready |= io::hangup;
  if (bits & EPOLLRDHUP) ready |= io::read_hangup;
  if (bits & EPOLLERR) ready |= io::error;
  return ready;
}

int control(int poller, int op, int fd, std::uint32_t interest, Trigger trigger) {
  epoll_event event{};
  event.events = to_epoll(interest, trigger);
  event.data.fd = fd;
  return ::epoll_ctl(poller, op, fd, &event) == 0 ? 0 : -errno;
}

// epoll_wait's timeout: -1 waits until something is ready.
int timeout_ms(std::optional<Duration> timeout) {
  if (!timeout) return -1;
  LOOPSIM_ASSERT_OP(timeout->count(), >=, 0);
  std::int64_t ms = (timeout->count() + ns_per_ms - 1) / ns_per_ms;
  return ms > INT_MAX ? INT_MAX : int(ms);
}

// accept(2): "Linux accept() passes already-pending network errors on the new socket as an
// error code from accept()". Each one used up a queued connection.
bool pending_network_error(int error) {
  switch (error) {
    case ENETDOWN: case EPROTO: case ENOPROTOOPT: case EHOSTDOWN: case ENONET:
    case EHOSTUNREACH: case EOPNOTSUPP: case ENETUNREACH:
      return true;
    default:
      return false;
  }
}

// Closes `fd` and returns the errno of the call that failed before it.
int fail_and_close(int fd) {
  int error = errno;
  ::close(fd);
  return -error;
}

}  // namespace

LinuxKernel::LinuxKernel() : origin_(monotonic()) {}

Instant LinuxKernel::now() { return Instant(Duration(to_ns(monotonic()) - to_ns(origin_))); }

std::optional<std::int64_t> LinuxKernel::calendar_seconds() {
  timespec t{};
  if (::clock_gettime(CLOCK_REALTIME_COARSE, &t) != 0) return std::nullopt;
  return std::int64_t(t.tv_sec);
}

void LinuxKernel::spend(Duration duration) {
  // In slices, so that a stop that will not wait (cancel_spending) ends it within one.
  constexpr Duration slice = std::chrono::milliseconds(10);
  const Instant end = now() + duration;
  for (Duration left = duration; left > Duration(0) && !cancelled_.load(std::memory_order_acquire); left = end - now()) {
    Duration step = std::min(left, slice);
    timespec rest{time_t(step.count() / ns_per_s), long(step.count() % ns_per_s)};
    while (::nanosleep(&rest, &rest) != 0) {
      LOOPSIM_ASSERT_OP(errno, ==, EINTR);
    }
  }
}

void LinuxKernel::cancel_spending() { cancelled_.store(true, std::memory_order_release); }

int LinuxKernel::listen(const ListenSpec& spec) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(spec.port);
  if (::inet_pton(AF_INET, spec.address.c_str(), &address.sin_addr) != 1) return -EINVAL;

  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  int on = 1;
  if (::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0) return fail_and_close(fd);
  if (spec.reuse_port && ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) != 0)
    return fail_and_close(fd);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
    return fail_and_close(fd);
  if (::listen(fd, spec.backlog) != 0) return fail_and_close(fd);
  return fd;
}

int LinuxKernel::local_port(int listener) {
  sockaddr_in address{};
  socklen_t length = sizeof address;
  if (::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0) return -errno;
  if (address.sin_family != AF_INET) return -EAFNOSUPPORT;
  return ntohs(address.sin_port);
}

int LinuxKernel::accept(int listener) {
  int fd = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd >= 0) return fd;
  return pending_network_error(errno) ? -ECONNABORTED : -errno;
}

std::int64_t LinuxKernel::read(int fd, std::span<char> into) {
  LOOPSIM_ASSERT(!into.empty());  // a 0-byte read would look like end of stream
  ssize_t n = ::recv(fd, into.data(), into.size(), 0);
  if (n < 0 && errno == ENOTSOCK) n = ::read(fd, into.data(), into.size());  // a pipe's end
  return n >= 0 ? std::int64_t(n) : -errno;
}

std::int64_t LinuxKernel::write(int fd, std::span<const char> from) {
  ssize_t n = ::send(fd, from.data(), from.size(), MSG_NOSIGNAL);
  if (n < 0 && errno == ENOTSOCK) n = ::write(fd, from.data(), from.size());  // a pipe's end
  return n >= 0 ? std::int64_t(n) : -errno;
}

// Linux releases the descriptor even when close fails (EINTR included): never retry.
int LinuxKernel::close(int fd) { return ::close(fd) == 0 ? 0 : -errno; }

int LinuxKernel::abort(int fd) {
  linger hard{1, 0};  // SO_LINGER 0: close sends an RST
  if (::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard) != 0) return -errno;
  return close(fd);
}

int LinuxKernel::descriptor_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return -errno;
  return limit.rlim_cur > rlim_t(INT_MAX) ? INT_MAX : int(limit.rlim_cur);
}

int LinuxKernel::pipe(int ends[2]) {
  return ::pipe2(ends, O_NONBLOCK | O_CLOEXEC) == 0 ? 0 : -errno;
}

int LinuxKernel::shutdown_write(int fd) { return ::shutdown(fd, SHUT_WR) == 0 ? 0 : -errno; }

int LinuxKernel::poller_create() {
  int fd = ::epoll_create1(EPOLL_CLOEXEC);
  return fd >= 0 ? fd : -errno;
}

int LinuxKernel::watch(int poller, int fd, std::uint32_t interest, Trigger trigger) {
  return control(poller, EPOLL_CTL_ADD, fd, interest, trigger);
}

int LinuxKernel::rewatch(int poller, int fd, std::uint32_t interest, Trigger trigger) {
  return control(poller, EPOLL_CTL_MOD, fd, interest, trigger);
}

int LinuxKernel::unwatch(int poller, int fd) {
  return ::epoll_ctl(poller, EPOLL_CTL_DEL, fd, nullptr) == 0 ? 0 : -errno;
}

int LinuxKernel::wait(int poller, std::span<PollEvent> into, std::optional<Duration> timeout) {
  LOOPSIM_ASSERT(!into.empty());
  LOOPSIM_ASSERT_OP(into.size(), <=, std::size_t(INT_MAX));
  // A buffer per thread, grown to the largest wait and then kept: made and zeroed per call, the
  // loop's 1,024 events cost a 12 KiB allocation and memset every pass (about 1 % of the live
  // server's CPU on the `Connection: close` path, perf). Each thread waits on its own poller.
  thread_local std::vector<epoll_event> events;
  if (events.size() < into.size()) events.resize(into.size());
  int n = ::epoll_wait(poller, events.data(), int(into.size()), timeout_ms(timeout));
  if (n < 0) return errno == EINTR ? 0 : -errno;
  for (int i = 0; i < n; ++i) {
    const epoll_event& event = events[std::size_t(i)];
    into[std::size_t(i)] = PollEvent{event.data.fd, from_epoll(event.events), -1};
  }
  return n;
}

int LinuxKernel::wake_create() {
  int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  return fd >= 0 ? fd : -errno;
}

// Called from signal handlers: write(2) only, and errno restored. EAGAIN (the counter is
// saturated) still leaves the wake object signalled.
void LinuxKernel::wake_signal(int wake) {
  int saved = errno;
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake, &one, sizeof one);
  errno = saved;
}

void LinuxKernel::wake_drain(int wake) {
  std::uint64_t count = 0;
  [[maybe_unused]] ssize_t n = ::read(wake, &count, sizeof count);
}

}  // namespace loopsim::live
