// The scheduler's epoch moves wherever the world leaves a pause: as a step begins, and as a
// decision returns. A digest kept from one epoch is
// this pause's only (sim::World reads it for the audit and for a replay's check).
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "model/scheduler.hpp"

namespace {

using namespace loopsim;
using namespace loopsim::model;
using namespace std::chrono_literals;

// Takes the natural choice, and notes the epoch at which each decision was asked: the pause in
// which a search takes its digest.
struct Noting final : Chooser {
  const Scheduler* scheduler = nullptr;
  std::vector<std::uint64_t> asked_at;
  std::uint32_t choose(ChoiceKind, std::uint32_t) override {
    asked_at.push_back(scheduler->epoch());
    return 0;
  }
};

}  // namespace

TEST_CASE("epoch: a step that runs a callback leaves the epoch its digest was taken at") {
  Scheduler scheduler;
  int ran = 0;
  scheduler.at(Instant{Duration(1ms)}, [&ran] { ++ran; }, Tag{Happening::scripted});
  const std::uint64_t before = scheduler.epoch();
  REQUIRE(scheduler.step(Instant{Duration(1s)}));
  CHECK(ran == 1);
  CHECK(scheduler.epoch() != before);
}

TEST_CASE("epoch: what runs after a decision runs at a new epoch, not the one the decision was asked at") {
  Noting chooser;
  Scheduler scheduler(&chooser);
  chooser.scheduler = &scheduler;
  std::vector<std::uint64_t> ran_at;
  for (std::uint32_t subject = 0; subject < 2; ++subject) {
    scheduler.at(Instant{Duration(1ms)}, [&] { ran_at.push_back(scheduler.epoch()); }, Tag{Happening::scripted, subject, subject});
  }
  REQUIRE(scheduler.step(Instant{Duration(1s)}));
  REQUIRE(chooser.asked_at.size() == 1);  // which of the two runs first
  REQUIRE(ran_at.size() == 1);
  CHECK(ran_at[0] != chooser.asked_at[0]);
}
