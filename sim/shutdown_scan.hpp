// What shutdown_clean (R5) reads of a run, event by event: one state machine for the judge
// (checker::shutdown_clean, which also reports where each breach was) and for the search's
// monitor (sim::Monitors, which digests the part of it the rest of a run needs).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "realloop/state.hpp"
#include "trace/trace.hpp"

namespace loopsim::sim {

// One worker's shutdown: the events that began, closed and ended it (trace indices), and what
// it held as it exited: connections, and how many of them were owed an answer (their client had
// sent a request it had not been answered for).
struct WorkerShutdown {
  std::optional<std::size_t> began, closed, exited;
  int open_at_exit = 0;
  int owing_at_exit = 0;
};

class ShutdownScan {
 public:
  // Reads the run's event at trace index `i`.
  void step(std::size_t i, const TraceEvent& event);

  // Breaches found along the way, by kind, and the first one's index.
  struct Breaches {
    std::int64_t late_accepts = 0, owed_passes = 0, queued_resets = 0, handlers_before_close = 0;
    std::optional<std::size_t> first;
    bool any() const { return first.has_value(); }
  };
  const Breaches& breaches() const { return breaches_; }
  const std::map<int, WorkerShutdown>& workers() const { return workers_; }
  // Hand-offs not yet admitted: (to, client) -> the handoff event.
  const std::multimap<std::pair<int, ClientIndex>, std::size_t>& handed() const { return handed_; }
  std::optional<Instant> asked() const { return asked_; }  // the first shutdown_asked
  // Requests outstanding on connections a worker held as it exited, not answered since: what
  // clients lost to an exit. An idle connection held at exit loses nothing (its client sees
  // the close), and an answer written before the exit may still arrive after it.
  std::int64_t lost() const;
  std::optional<Instant> last_exit() const { return last_exit_; }

  // What the rest of a run needs of the scan, for a search's digest: times relative to `now`;
  // with `max` (shutdown_clean's drain bound), the drain's time so far against it. The run's
  // `clients` are in canonical order (sink.names()), and client_state is one client's part,
  // for its canonical signature.
  void digest_state(state::Sink& sink, Instant now, std::optional<Duration> max, std::size_t clients) const;
  void client_state(ClientIndex client, state::Sink& sink) const;
  // Whether shutdown_clean holds on what the scan saw, the run ending now; run_end's counts of
  // connections still open or handed over are the end state's to add.
  bool held(std::optional<Duration> max) const;
  // The drain's time, from the asking to the last exit; none when no worker exited after it.
  std::optional<Duration> drain_time() const;

 private:
  bool closed(int worker) const;
  void accept(std::size_t i, const ev::Accept& a);
  void breach(std::size_t i, std::int64_t& counter);

  std::map<int, WorkerShutdown> workers_;
  std::multimap<std::pair<int, ClientIndex>, std::size_t> handed_;
  bool any_closed_ = false;
  std::set<ClientIndex> queued_;  // established, not yet accepted
  std::set<ClientIndex> accepted_;
  std::map<ClientIndex, int> held_;             // accepted and not closed: by which worker
  std::map<ClientIndex, std::int64_t> owed_;    // requests sent, not answered yet
  std::map<ClientIndex, std::int64_t> lost_;    // of those, held at an exit and still unanswered
  bool drain_starved_ = false;     // a shutdown's drain stopped at EMFILE, ENFILE or ENOBUFS
  std::int64_t aborted_ = 0;       // accepts that failed ECONNABORTED, each consuming one
  Breaches breaches_;
  std::optional<Instant> asked_;
  std::optional<Instant> last_exit_;
  std::optional<int> last_exit_worker_;  // the worker of that loop_exit
};

}  // namespace loopsim::sim
