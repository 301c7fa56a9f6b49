// The loop's waits in instants and durations: "none" is an empty optional, never -1, and an
// idle timeout of none is a wait until something is ready, also under R4's back-off.
#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <type_traits>
#include <vector>

#include "model/scheduler.hpp"
#include "model/sim_kernel.hpp"
#include "realloop/atomic_instant.hpp"
#include "realloop/loop.hpp"

using namespace loopsim;
using namespace std::chrono_literals;

namespace {

// What the loop said of each pass's wait.
struct Waits final : LoopObserver {
  std::vector<std::optional<Duration>> timeouts;
  void pass_begin(int, std::uint64_t, std::optional<Duration> timeout) override { timeouts.push_back(timeout); }
};

// The loop on a simulated kernel with `limit` descriptors, serving port 80, run to `until`;
// `clients` connect at 1 ms.
std::vector<std::optional<Duration>> waits(LoopConfig config, int limit, int clients, Duration until) {
  model::Scheduler scheduler;
  model::SimKernelConfig kernel_config;
  kernel_config.rlimit_nofile = limit;
  model::SimKernel kernel(scheduler, kernel_config);
  Waits observer;
  Loop loop(kernel, config, observer, 0);
  REQUIRE(loop.open(ListenSpec{"127.0.0.1", 80, 128}) >= 0);
  scheduler.spawn("worker-0", [&] { loop.run(); });
  for (int i = 0; i < clients; ++i) scheduler.at(Instant{1ms}, [&] { kernel.connect(80); }, model::Tag{model::Happening::scripted, 0});
  scheduler.run_until(Instant{until});
  loop.stop();
  scheduler.run_until(Instant{until + 1ms});
  scheduler.unwind();
  return observer.timeouts;
}

}  // namespace

TEST_CASE("an Instant and a Duration do not mix, and an AtomicInstant's none is its own") {
  static_assert(std::is_same_v<decltype(Instant{} - Instant{}), Duration>);
  static_assert(std::is_same_v<decltype(Instant{} + 1ms), Instant>);
  static_assert(!std::is_convertible_v<Instant, Duration>);
  static_assert(!std::is_convertible_v<Duration, Instant>);
  AtomicInstant t;
  CHECK_FALSE(t.load());
  CHECK(t.set_if_none(Instant(5ms)));
  CHECK_FALSE(t.set_if_none(Instant(7ms)));  // the first asking stands
  CHECK(t.load() == Instant(5ms));
  t.store(Instant(Duration(0)));  // the epoch is an instant like any other, not none
  CHECK(t.load() == Instant(Duration(0)));
  t.store(std::nullopt);
  CHECK_FALSE(t.load());
}

TEST_CASE("a loop whose idle timeout is none waits until something is ready, one with a timeout wakes on it") {
  LoopConfig forever;
  forever.idle_timeout = std::nullopt;
  // Nothing comes: one wait, with no timeout, for the whole second.
  CHECK(waits(forever, 1024, 0, 1s) == std::vector<std::optional<Duration>>{std::nullopt});
  LoopConfig each_second;
  CHECK(waits(each_second, 1024, 0, 3500ms) == std::vector<std::optional<Duration>>(4, Duration(1s)));
}

TEST_CASE("R4's back-off bounds a wait whose idle timeout is none: the wait lasts what is left of it") {
  // stdio, the poller, the wake object and the listener take all 6: the client's accept fails
  // with EMFILE at 1 ms, and the loop retries after emfile_backoff (100 ms), not never.
  LoopConfig config;
  config.idle_timeout = std::nullopt;
  const std::vector<std::optional<Duration>> seen = waits(config, 6, 1, 150ms);
  REQUIRE(seen.size() >= 3);
  CHECK(seen[0] == std::nullopt);   // before the client: nothing to wait for
  CHECK(seen[1] == Duration(100ms));  // the back-off, from the failed accept
  // Retried at 101 ms, failed again: the next back-off's whole length.
  CHECK(seen[2] == Duration(100ms));
}
