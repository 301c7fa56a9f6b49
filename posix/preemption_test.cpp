// Threads that spin on each other in user space (posix/threads.cpp): Linux preempts the one that
// spins, so the one it waits for runs; the seam asks a spinning thread, main() included, to give
// way each sim::spin_slice of its CPU time.
#include <catch2/catch.hpp>

#include <string>

#include "posix/probe_for_tests.hpp"
#include "sim/world.hpp"

#ifdef LOOPSIM_SEAM_BUILT

using namespace loopsim;
using namespace loopsim::testing;

TEST_CASE("seam: a thread that spins on a lock another holds gives way, and so does main()") {
  const auto [native, simulated, result] = both_ways("spins");
  INFO("Linux:\n" << native << "the seam:\n" << simulated);
  CHECK(native == "main lets the lock go\nthe thread took the lock\nmain saw the flag\n");
  CHECK(simulated == native);
  CHECK(result.stats.accepted == 1);
  CHECK(result.stats.exit_status == 0);  // main() returned: neither spin was taken for a livelock
  // Each time a thread gave way, the trace says which: thread 1 while main() slept, then main().
  const std::string trace = jsonl(result.trace);
  CHECK(trace.find("\"ev\":\"gave_way\",\"worker\":1}") != std::string::npos);
  CHECK(trace.find("\"ev\":\"gave_way\",\"worker\":0}") != std::string::npos);
}

#endif  // LOOPSIM_SEAM_BUILT
