// The live Kernel: epoll, eventfd and non-blocking IPv4 TCP sockets on Linux.
//
// Every method is a thin translation of one or two system calls; errors come back as -errno
// (EWOULDBLOCK is EAGAIN on Linux). The object holds no per-descriptor state, so one instance
// may serve several loops on several threads.
#pragma once

#include <atomic>
#include <ctime>

#include "realloop/kernel.hpp"

namespace loopsim::live {

class LinuxKernel final : public Kernel {
 public:
  LinuxKernel();

  // CLOCK_MONOTONIC, relative to construction. Never blocks.
  Instant now() override;
  // CLOCK_REALTIME_COARSE: read from the vDSO without a system call, to the last tick.
  std::optional<std::int64_t> calendar_seconds() override;
  // Sleeps for `duration`, resuming after signal handlers until the whole duration has passed,
  // or until cancel_spending.
  void spend(Duration duration) override;
  // Ends every spend under way, and every later one, at once: a stop that does not wait for
  // handlers. Async-signal-safe.
  void cancel_spending();

  // SO_REUSEADDR (and SO_REUSEPORT when asked), bound to spec.address (dotted IPv4; -EINVAL
  // otherwise) and spec.port.
  int listen(const ListenSpec& spec) override;
  int local_port(int listener) override;
  // Pending network errors that Linux passes on from accept are folded into -ECONNABORTED:
  // like it, they consume one connection and the next may succeed.
  int accept(int listener) override;

  std::int64_t read(int fd, std::span<char> into) override;
  // MSG_NOSIGNAL: a write to a reset peer returns -EPIPE and raises no SIGPIPE.
  std::int64_t write(int fd, std::span<const char> from) override;
  // K12 holds because every descriptor is opened CLOEXEC and never duplicated: epoll drops an
  // item only when the last descriptor of its open file goes.
  int close(int fd) override;
  int abort(int fd) override;
  int descriptor_limit() override;

  int poller_create() override;
  // Interest always includes EPOLLRDHUP. Triggers map to EPOLLET / (none) / EPOLLONESHOT.
  int watch(int poller, int fd, std::uint32_t interest, Trigger trigger) override;
  int rewatch(int poller, int fd, std::uint32_t interest, Trigger trigger) override;
  int unwatch(int poller, int fd) override;
  // The timeout is rounded up to whole milliseconds (0 stays 0: never blocks). A signal ends
  // the wait early with 0 events and no error, so that the caller can look for a stop request.
  int wait(int poller, std::span<PollEvent> into, std::optional<Duration> timeout) override;

  // An eventfd. wake_signal is async-signal-safe and leaves errno unchanged.
  int pipe(int ends[2]) override;
  int shutdown_write(int fd) override;
  int wake_create() override;
  void wake_signal(int wake) override;
  void wake_drain(int wake) override;

  PollerFlavour flavour() const override { return PollerFlavour::epoll; }

 private:
  timespec origin_{};
  std::atomic<bool> cancelled_{false};
};

}  // namespace loopsim::live
