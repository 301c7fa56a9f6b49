// MaybeInstant: an Instant or none in the room of one Instant, read as std::optional<Instant>
// reads, and digested as one (state.hpp feeds none as -1, a time as its time left).
#include <catch2/catch.hpp>

#include <optional>

#include "realloop/kernel.hpp"
#include "realloop/state.hpp"

using loopsim::Duration;
using loopsim::Instant;
using loopsim::MaybeInstant;

TEST_CASE("MaybeInstant holds what std::optional<Instant> holds, none included, in eight bytes") {
  STATIC_REQUIRE(sizeof(MaybeInstant) == 8);
  MaybeInstant t;
  CHECK_FALSE(t.has_value());
  CHECK_FALSE(std::optional<Instant>(t).has_value());
  // The epoch itself is a time, not none.
  t = Instant(Duration(0));
  REQUIRE(t.has_value());
  CHECK(*t == Instant(Duration(0)));
  CHECK(std::optional<Instant>(t) == std::optional<Instant>(Instant(Duration(0))));
  t = Instant(Duration(5));
  CHECK(t->time_since_epoch() == Duration(5));
  MaybeInstant u = t;
  CHECK(u == t);
  t.reset();
  CHECK_FALSE(t);
  CHECK(u != t);
  u = std::nullopt;
  CHECK(u == t);
  CHECK(MaybeInstant(std::nullopt) == MaybeInstant());
}

TEST_CASE("MaybeInstant is digested as std::optional<Instant> is") {
  // nanos_of gives none as -1, and a time as its nanoseconds, for either type.
  CHECK(loopsim::state::nanos_of(MaybeInstant()) == -1);
  CHECK(loopsim::state::nanos_of(std::optional<Instant>()) == -1);
  CHECK(loopsim::state::nanos_of(MaybeInstant(Instant(Duration(7)))) == 7);
  CHECK(loopsim::state::nanos_of(std::optional<Instant>(Instant(Duration(7)))) == 7);
  CHECK(loopsim::state::nanos_of(MaybeInstant(Instant(Duration(0)))) == 0);
}
