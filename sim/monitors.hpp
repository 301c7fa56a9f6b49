// Monitors: what a property that reads a run's history needs of the past, kept as state, so
// that a search may merge on it (the product of the world and a monitor, as a model checker
// builds one for a property automaton). Each keeps no more than the rest of the run needs to
// decide its property, and every time in it is relative to now, clamped just past the bound
// (older than that decides the same whatever its exact age).
//
// - `latency` of a group, without `after`: whether an answer already came late, whether any
//   came, and, for each request still waiting, when it was sent.
// - `latency` of a group `after` another: whether each group was answered yet, whether the
//   last answer of the first came within the bound of the last of the second, and how long ago
//   that last answer of the second came. A later answer of `after` restarts the clock, and the
//   first group's answers before it cannot be later than it.
// - `max_gap` of a group: whether two answers already came further apart than the bound, how
//   many came (none, one, or more), and how long ago the last one came.
// - `batch_bound`: whether a pass already took too many from one door, whether anything was
//   accepted, and, for each worker, whether it is draining for a shutdown and how many its
//   current pass took from each door.
// - `no_spin`: whether a run of idle passes, or of failing accepts, already passed the bound,
//   and for each worker how long its current runs are, whether its pass in hand made
//   progress, and when that pass's wait (and the next wait, if called) was called.
// - `post_latency` of a poster (or of all): whether a post ran late, ran twice, or any came;
//   each post still waiting, by id, with its age; and the ids that ran (a second run of one is
//   a fault).
// - `no_stranded_backlog` with a time `max`: whether a connection already waited longer than
//   the bound at a door while the loop was idle, which workers sit blocked in their wait, and
//   for each connection at a door the idle time it has waited so far.
// - `shutdown_clean`, with a time `max` or none: sim::ShutdownScan, the judge's own reading of
//   the run, as much of it as the rest of the run needs (its digest_state).
//
// The monitor reads the run's trace as it grows, where it left off: a snapshot restores it
// with the world. `held` says what a monitor decides of its property at the end of the run,
// for checker/monitors_agree_test.cpp, which holds each one to the checker's own judge on
// every shipped scenario's runs.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "realloop/state.hpp"
#include "sim/shutdown_scan.hpp"
#include "trace/trace.hpp"

namespace loopsim::sim {

// A pass that takes at most this long, from its wait's call to the next wait's, did not block
// and did not sleep: the kernel charges a repeated empty poll 1 us, a target's failing call
// 1 us (design-notes, "A spinning loop moves the clock"). no_spin's judge and monitor share it.
inline constexpr Duration spin_pass_max{10'000};

// The worker that made progress with this event, if it is progress (see no_spin).
std::optional<int> progress_of(const TraceEvent& event, int listener_fd);

// Whether an accept's result is a failure no_spin counts: neither a connection, nor "none
// left" (EAGAIN), nor one aborted before it was taken.
inline bool failed_accept(int result) { return result < 0 && result != -EAGAIN && result != -ECONNABORTED; }

class Monitors {
 public:
  explicit Monitors(const Trace& trace) : trace_(&trace) {}

  // Each watches one property; bounds are in nanoseconds, or counts where they count.
  void watch_latency(const std::string& group, std::int64_t bound);
  void watch_latency_after(const std::string& group, const std::string& after, std::int64_t bound);
  void watch_gap(const std::string& group, std::int64_t bound);
  void watch_batch(std::int64_t bound);
  void watch_spin(std::int64_t bound);
  // `poster` empty: every poster's posts.
  void watch_posts(const std::string& poster, std::int64_t bound);
  void watch_idle_wait(std::int64_t bound);
  // `max`: the drain's bound, from the shutdown's asking to the last exit.
  void watch_shutdown(std::optional<Duration> max);
  bool empty() const { return order_.empty(); }

  // The monitors' state, times relative to now, clients in canonical order (sink.names()).
  void digest_state(state::Sink& sink, Instant now) const;
  // One client's part of it, for its canonical signature: clients that differ in it are not
  // interchangeable (sim::Canonical).
  std::uint64_t client_digest(ClientIndex client, Instant now) const;

  // What the monitors say of their properties if the run ended now, in the order watched. Each
  // is the monitor's part of the verdict: for latency and max_gap, requests the run left
  // unanswered are the end state's to judge; for no_stranded_backlog, what waits at the end.
  std::vector<bool> held() const;

 private:
  struct Latency {
    std::string group;
    std::int64_t bound = 0;
    bool late = false;      // an answer came after the bound
    bool answered = false;  // some answer came
  };
  struct After {
    std::string group, after;
    std::int64_t bound = 0;
    bool answered = false;
    bool within = true;                // the group's last answer came within the bound of after's last
    std::optional<Instant> after_last;   // when after's last answer came, if one did
  };
  struct Gap {
    std::string group;
    std::int64_t bound = 0;
    bool wide = false;               // two answers came further apart than the bound
    std::int64_t answers = 0;        // answers so far, clamped at 2
    std::optional<Instant> last;       // when the last one came
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
  struct Spin {
    std::int64_t bound = 0;
    bool over = false;  // a run passed the bound
  };
  struct SpinWorker {
    // (Whether a wait has returned yet, as the judge keeps it, is not kept: before the first,
    // `began` is unset, and a pass without it is not quick.)
    bool progress = false;        // in a trace without kernel counts, the pass in hand made progress
    std::optional<Instant> began;   // the pass's wait was called then
    std::optional<Instant> next;    // the next wait was called then
    bool quick = false;           // ...within spin_pass_max of `began`
    std::int64_t idle = 0;        // idle passes in a row, clamped at bound + 1
    std::int64_t failed = 0;      // failing accepts with no wait between, clamped at bound + 1
  };
  struct Posts {
    std::string poster;
    std::int64_t bound = 0;
    // (Whether any post came is not kept: every one is waiting or ran.)
    bool late = false, twice = false;
    std::map<std::int64_t, Instant> waiting;  // id -> when it was posted
    std::set<std::int64_t> ran;
  };
  struct IdleWait {
    std::int64_t bound = 0;
    bool over = false;              // a connection waited longer than the bound, idle
    std::vector<bool> blocked;      // by worker: sits in a wait with no timeout or a positive one
    Duration idle{0};                  // idle time accumulated until `since`, or until now
    std::optional<Instant> since;     // every worker blocked since then
    std::map<ClientIndex, Duration> reached;  // the idle time when each connection reached its door
  };
  enum class Kind : std::uint8_t { latency, after, gap, batch, spin, posts, idle_wait, shutdown };

  void watched(Kind kind, std::int64_t bound);
  // Reads the trace's events not read yet.
  void catch_up() const;
  void answer_event(const ev::Answer& answer) const;
  void batch_event(const TraceEvent& event) const;
  void spin_event(const TraceEvent& event) const;
  void posts_event(const TraceEvent& event) const;
  void idle_event(const TraceEvent& event) const;
  std::int64_t age(Instant then, Instant now) const;
  Duration idle_at(Instant t) const;
  // A client's part of the state, clients named as `names` says.
  void client_state(ClientIndex client, Instant now, state::Sink& sink) const;

  const Trace* trace_;
  std::int64_t clamp_ = 0;  // the largest time bound, plus one
  std::vector<Kind> order_;  // what was watched, in order
  // What was read: the events so far, and each monitor's state.
  mutable std::size_t read_ = 0;
  mutable std::vector<Latency> latency_;
  mutable std::vector<After> after_;
  mutable std::vector<Gap> gaps_;
  mutable std::vector<std::deque<Instant>> waiting_;  // by client: latency's requests waiting
  mutable std::optional<Batch> batch_;
  mutable std::vector<WorkerPass> passes_;  // by worker
  mutable std::optional<Spin> spin_;
  mutable std::vector<SpinWorker> spinners_;  // by worker
  mutable std::vector<Posts> posts_;
  mutable std::optional<IdleWait> idle_;
  mutable std::optional<ShutdownScan> shutdown_;
  std::optional<Duration> drain_max_;
};

}  // namespace loopsim::sim
