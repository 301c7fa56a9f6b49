// R10's hand-off mailbox, against a kernel that only counts: a hand-off wakes its worker when it
// finds the mailbox empty, and one wake-up serves every hand-off that joins it before the
// worker takes them.
#include <catch2/catch.hpp>

#include "realloop/loop.hpp"

using namespace loopsim;

namespace {

// Gives a poller and a wake object, and counts the wake-ups; any other call fails.
class CountingKernel final : public Kernel {
 public:
  int wake_signals = 0;
  Instant now() override { return Instant(Duration(0)); }
  void spend(Duration) override {}
  int listen(const ListenSpec&) override { return -1; }
  int local_port(int) override { return -1; }
  int accept(int) override { return -1; }
  std::int64_t read(int, std::span<char>) override { return -1; }
  std::int64_t write(int, std::span<const char>) override { return -1; }
  int close(int) override { return 0; }
  int abort(int) override { return 0; }
  int descriptor_limit() override { return 1024; }
  int poller_create() override { return 5; }
  int watch(int, int, std::uint32_t, Trigger) override { return 0; }
  int rewatch(int, int, std::uint32_t, Trigger) override { return 0; }
  int unwatch(int, int) override { return 0; }
  int wait(int, std::span<PollEvent>, std::optional<Duration>) override { return 0; }
  int wake_create() override { return 6; }
  void wake_signal(int) override { ++wake_signals; }
  void wake_drain(int) override {}
  int pipe(int[2]) override { return -1; }
  int shutdown_write(int) override { return -1; }
  PollerFlavour flavour() const override { return PollerFlavour::epoll; }
};

int wake_ups_for_three_handoffs(bool once) {
  CountingKernel kernel;
  LoopConfig config;
  config.handoff_wakes_when_empty = once;
  LoopObserver quiet;
  Loop worker(kernel, config, quiet, 1);
  REQUIRE(worker.attach(-1) == 0);  // served by hand-offs alone
  for (int fd : {10, 11, 12}) REQUIRE(worker.offer(fd));
  CHECK(worker.handoffs_pending() == 3);
  return kernel.wake_signals;
}

}  // namespace

TEST_CASE("R10 a hand-off wakes its worker only when it finds the mailbox empty") {
  CHECK(wake_ups_for_three_handoffs(true) == 1);
  CHECK(wake_ups_for_three_handoffs(false) == 3);  // the loop before: one a hand-off
}
