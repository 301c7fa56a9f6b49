// The room a scheduler makes for happenings to come: all of them, and a spare bounded by their
// count. A search copies the queue, spare room included, into every snapshot it takes, so a
// spare that did not shrink with the count would make a four-client world's snapshot three
// times its size (it did: 200 KB against 70 KB, for the anchor question at N = 4).
#include <catch2/catch.hpp>

#include "model/scheduler.hpp"

using namespace loopsim::model;
using loopsim::Duration;
using loopsim::Instant;

TEST_CASE("scheduler room: a few happenings get a spare as small as their count") {
  Scheduler scheduler;
  scheduler.expect_happenings(8);
  CHECK(scheduler.queue_room() >= 16);
  CHECK(scheduler.queue_room() <= 16 + 8);
}

TEST_CASE("scheduler room: many happenings get a bounded spare, and no doubling") {
  Scheduler scheduler;
  scheduler.expect_happenings(100000);
  CHECK(scheduler.queue_room() >= 100000 + Scheduler::expected_spare);
  CHECK(scheduler.queue_room() < 100000 + 2 * Scheduler::expected_spare);
}

TEST_CASE("scheduler room: the room made for many happenings is given back as they are taken") {
  Scheduler scheduler;
  constexpr int count = 100000;
  scheduler.expect_happenings(count);
  const std::size_t made = scheduler.queue_room();
  int ran = 0;
  for (int i = 0; i < count; ++i) scheduler.at(Instant{Duration(i + 1)}, [&ran] { ++ran; }, Tag{Happening::scripted, 0});
  CHECK(scheduler.queue_room() == made);  // no growth: the room was there
  scheduler.run_until(Instant{Duration(count * 7 / 8)});
  CHECK(ran == count * 7 / 8 - 1);
  // An eighth left: the room halved at a quarter, and again at an eighth.
  CHECK(scheduler.queue_room() <= made / 4 + 1);
  CHECK(scheduler.queue_room() >= std::size_t(count / 8) + Scheduler::expected_spare);
  scheduler.run_until(Instant{Duration(count + 1)});
  CHECK(ran == count);  // nothing lost to the moves, and in order
}

TEST_CASE("scheduler room: a thread woken before its deadline leaves no pile of stale resumptions") {
  // A loop's wait with a timeout (its next timer, a second away), woken by each of 20,000
  // arrivals a microsecond apart: each wait leaves its resumption at the timeout behind. Kept
  // until their times came, they would hold the queue at 20,000 entries as the arrivals drain.
  Scheduler scheduler;
  constexpr int arrivals = 20000;
  int waits = 0;
  const ThreadId loop = scheduler.spawn("loop", [&] {
    for (;;) {  // until the scheduler unwinds it
      scheduler.block(scheduler.now() + std::chrono::seconds(1));
      ++waits;
    }
  });
  std::size_t late = 0;  // the queue when three-quarters of the arrivals have come
  for (int i = 0; i < arrivals; ++i) {
    scheduler.at(Instant{std::chrono::microseconds(i + 1)}, [&, i] {
      scheduler.wake(loop);
      if (i == arrivals * 3 / 4) late = scheduler.queued();
    }, Tag{Happening::scripted, 0});
  }
  scheduler.run_until(Instant{std::chrono::microseconds(arrivals + 1)});
  CHECK(waits == arrivals);  // each arrival woke it
  // The arrivals still to come, and stale resumptions at most as many again (or a thousand).
  const std::size_t to_come = arrivals - arrivals * 3 / 4 - 1;
  INFO("queued " << late << " with " << to_come << " arrivals to come");
  CHECK(late <= 2 * to_come + Scheduler::stale_purge_floor + 2);
}
