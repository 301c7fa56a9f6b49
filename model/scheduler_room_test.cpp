// The room a scheduler makes for happenings to come: all of them, and a spare bounded by their
// count. A search copies the queue, spare room included, into every snapshot it takes, so a
// spare that did not shrink with the count would make a four-client world's snapshot three
// times its size (it did: 200 KB against 70 KB, for the anchor question at N = 4).
#include <catch2/catch.hpp>

#include "model/scheduler.hpp"

using namespace loopsim::model;

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
