// A kernel for handlers alone, for tests and fuzzers: http::handle only spends a request's time,
// which this records; every other call fails.
#pragma once

#include "realloop/kernel.hpp"

namespace loopsim::testing {

class SpendingKernel final : public Kernel {
 public:
  Duration spent{0};
  Instant now() override { return Instant(spent); }
  void spend(Duration d) override { spent += d; }
  int listen(const ListenSpec&) override { return -1; }
  int local_port(int) override { return -1; }
  int accept(int) override { return -1; }
  std::int64_t read(int, std::span<char>) override { return -1; }
  std::int64_t write(int, std::span<const char>) override { return -1; }
  int close(int) override { return -1; }
  int abort(int) override { return -1; }
  int descriptor_limit() override { return 1024; }
  int poller_create() override { return -1; }
  int watch(int, int, std::uint32_t, Trigger) override { return -1; }
  int rewatch(int, int, std::uint32_t, Trigger) override { return -1; }
  int unwatch(int, int) override { return -1; }
  int wait(int, std::span<PollEvent>, std::optional<Duration>) override { return -1; }
  int wake_create() override { return -1; }
  void wake_signal(int) override {}
  void wake_drain(int) override {}
  int pipe(int[2]) override { return -1; }
  int shutdown_write(int) override { return -1; }
  PollerFlavour flavour() const override { return PollerFlavour::epoll; }
};

}  // namespace loopsim::testing
