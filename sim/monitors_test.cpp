// The monitors' state (sim/monitors.hpp), digested: what it keeps of a run's past is exactly
// what the rest of the run needs to decide its property, and two pasts that differ in it digest
// apart. A search merges states on it, so a part left out is a verdict lost.
#include <catch2/catch.hpp>

#include <vector>

#include "sim/monitors.hpp"

using namespace loopsim;
using namespace loopsim::sim;

namespace {

struct Values final : state::Sink {
  std::vector<std::int64_t> values;
  void add(std::int64_t v) override { values.push_back(v); }
};

// A trace of a worker's passes, written as the loop writes it: each inner vector one pass, each
// number an accept from the listener (1: it took a connection, -1: it failed).
Trace passes(const std::vector<std::vector<int>>& each, bool end_last = true) {
  Trace t;
  std::uint64_t pass = 0;
  for (std::size_t i = 0; i < each.size(); ++i) {
    t.events.push_back(ev::PassBegin{Nanos(0), 0, ++pass, std::nullopt});
    for (int a : each[i]) t.events.push_back(ev::Accept{Nanos(0), 0, Door::listener, a > 0 ? 7 : -1, 0});
    if (end_last || i + 1 < each.size()) t.events.push_back(ev::PassEnd{Nanos(0), 0, pass, false, false});
  }
  return t;
}

std::vector<std::int64_t> batch_state(const Trace& trace, std::int64_t bound) {
  Monitors m(trace);
  m.watch_batch(bound);
  Values v;
  m.digest_state(v, Nanos(0));
  return v.values;
}

}  // namespace

TEST_CASE("monitors: batch_bound keeps whether a pass already took more than the bound") {
  // Two accepts in one pass, or one in each of two: the passes are over, only the past differs.
  CHECK(batch_state(passes({{1, 1}}), 1) != batch_state(passes({{1}, {1}}), 1));
  // Within the bound both are alike: the monitor keeps no more than the verdict needs.
  CHECK(batch_state(passes({{1, 1}}), 2) == batch_state(passes({{1}, {1}}), 2));
}

TEST_CASE("monitors: batch_bound keeps what the current pass took, clamped past the bound") {
  // A pass under way that took one, or none yet: its next accept decides.
  CHECK(batch_state(passes({{1}, {1}}, false), 2) != batch_state(passes({{1}, {}}, false), 2));
  // Failed accepts take nothing.
  CHECK(batch_state(passes({{1}, {-1, -1}}, false), 2) == batch_state(passes({{1}, {}}, false), 2));
  // Past the bound, how far past does not matter.
  CHECK(batch_state(passes({{1, 1, 1}}, false), 1) == batch_state(passes({{1, 1, 1, 1}}, false), 1));
}

TEST_CASE("monitors: batch_bound keeps whether anything was accepted, and leaves a shutdown's drain out") {
  CHECK(batch_state(passes({{}}), 2) != batch_state(passes({{1}}), 2));
  Trace drained = passes({{1}}, false);
  drained.events.push_back(ev::ShutdownBegin{Nanos(0), 0});
  for (int i = 0; i < 5; ++i) drained.events.push_back(ev::Accept{Nanos(0), 0, Door::listener, 7, 0});
  drained.events.push_back(ev::ListenerClosed{Nanos(0), 0});
  drained.events.push_back(ev::PassEnd{Nanos(0), 0, 1, false, false});
  CHECK(batch_state(drained, 2) == batch_state(passes({{1}}), 2));
}
