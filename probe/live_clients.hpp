// The clients of a scenario on real sockets: the same groups, times, closed loops, paths and
// bodies as in simulation (sim/workload.hpp), driven against a live HTTP/1.1 server on
// loopback, recorded as client-side trace events in the simulation's schema, so that the same
// properties judge both. Wall-clock time, so not deterministic: this is the probe's half that
// meets the real world, and it is kept out of the engine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scenario/scenario.hpp"
#include "trace/trace.hpp"

namespace loopsim::probe {

// At most this many clients run live: each is a real descriptor, and so is each of the
// server's. A larger scenario does not run live (a limit, said so).
inline constexpr std::int64_t live_clients_max = 20'000;

struct LiveOptions {
  std::string address = "127.0.0.1";  // loopback only
  std::uint16_t port = 0;
  Duration time_limit = std::chrono::seconds(60);  // wall time, and never past the horizon
};

struct LiveRun {
  sim::Trace trace;  // the clients' events only: connect, established, send, answer, ...
  Duration ran{0};      // how long the live run lasted
  // Why it ended: the horizon came, nothing was left to happen (every client done or idle
  // with nothing due), or time_limit cut it short with work left.
  enum class End : std::uint8_t { horizon, quiet, time_limit };
  End end = End::horizon;
  // Parts of the scenario a client cannot carry out (server-side faults, actions, posters).
  std::vector<std::string> not_applied;
  // Answers the probe could not frame (parse_answer's rules: sim/workload.hpp); each one's
  // connection was closed, recorded as refused with EPROTO.
  int unframed = 0;
  std::string error;  // set when it could not run at all (and `trace` is empty)
};

// Runs the scenario's clients against ADDR:PORT. The trace's labels and groups are the
// simulation's, so that a client is "burst#3" in both.
LiveRun drive_live(const sim::Scenario& scenario, const LiveOptions& options);

}  // namespace loopsim::probe
