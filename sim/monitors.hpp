// Monitors: what a property that reads a run's history needs of the past, kept as state, so
// that a search may merge on it (the product of the world and a monitor, as a model checker
// builds one for a property automaton).
//
// `latency` of a group, without `after`, holds when every request of the group is answered
// within its bound. What the rest of a run needs of the past to decide it: whether an answer
// already came late, whether any came, and, for each request still waiting, when it was sent.
// Two executions that agree on these (and on the world's state) are judged alike whatever
// follows, so the monitor's state joins the digest: each waiting request's age, relative to
// now like every other time, and clamped just past the largest bound (older is late whatever
// its exact age).
//
// `max_gap` of a group holds when no two answers to it, one after the other, are further apart
// than its bound. What the rest of a run needs of the past: whether two already were, how many
// answers came (none, one, or more: the verdict tells those apart), and how long ago the last
// one came, clamped just past the bound.
//
// `batch_bound` holds when no worker accepts more than its bound from one door within one
// pass (a shutdown's drain, between its start and the listener's close, apart), and something
// was accepted. What the rest of a run needs of the past: whether a pass already took too many,
// whether anything was accepted, and, for each worker, whether it is draining and how many its
// current pass took from each door, clamped just past the bound.
//
// The monitor reads the run's trace as it grows (the Send, Answer, pass and Accept events),
// where it left off: a snapshot restores it with the world.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "realloop/state.hpp"
#include "sim/trace.hpp"

namespace loopsim::sim {

class Monitors {
 public:
  explicit Monitors(const Trace& trace) : trace_(&trace) {}

  // Judges `latency` of `group` (no `after`) with its bound, in nanoseconds.
  void watch_latency(const std::string& group, std::int64_t bound);
  // Judges `max_gap` of `group` with its bound, in nanoseconds.
  void watch_gap(const std::string& group, std::int64_t bound);
  // Judges `batch_bound` with its bound, a count of accepts.
  void watch_batch(std::int64_t bound);
  bool empty() const { return latency_.empty() && gaps_.empty() && !batch_; }

  // The monitors' state, times relative to now, clients in canonical order (sink.names()).
  void digest_state(state::Sink& sink, Nanos now) const;
  // One client's part of it, for its canonical signature: clients that differ in it are not
  // interchangeable (sim::Canonical).
  std::uint64_t client_digest(ClientIndex client, Nanos now) const;

 private:
  struct Latency {
    std::string group;
    std::int64_t bound = 0;
    bool late = false;      // an answer came after the bound
    bool answered = false;  // some answer came
  };
  struct Gap {
    std::string group;
    std::int64_t bound = 0;
    bool wide = false;               // two answers came further apart than the bound
    std::int64_t answers = 0;        // answers so far, clamped at 2
    std::optional<Nanos> last;       // when the last one came
  };
  struct Batch {
    std::int64_t bound = 0;
    bool over = false;      // a pass took more than the bound from one door
    bool accepted = false;  // some accept took a connection
  };
  struct WorkerPass {
    bool admitting = false;                  // a shutdown's drain: its accepts are no batch
    std::int64_t accepts[2] = {0, 0};        // this pass's, by door, clamped at bound + 1
  };
  // Reads the trace's events not read yet.
  void catch_up() const;
  void batch_event(const TraceEvent& event) const;
  std::int64_t age(Nanos sent, Nanos now) const;

  const Trace* trace_;
  std::int64_t clamp_ = 0;  // the largest bound, plus one
  // What was read: the events so far, the monitors' flags, and each watched client's requests
  // waiting (their send times, oldest first).
  mutable std::size_t read_ = 0;
  mutable std::vector<Latency> latency_;
  mutable std::vector<Gap> gaps_;
  mutable std::vector<std::deque<Nanos>> waiting_;  // by client
  mutable std::optional<Batch> batch_;
  mutable std::vector<WorkerPass> passes_;  // by worker
};

}  // namespace loopsim::sim
