// The rows of a pass timeline: one row per pass, except that runs of alike passes fold into one
// row, so that a run of thousands of passes stays readable and the picture stays bounded.
//
// Folding, per worker, in stages, each only if the rows still exceed the budget:
//   1. always: a run of at least `min_run` consecutive passes of the same shape (the same wait
//      timeout, event kinds, batches with the same size, stop and owed flag, owed flags after,
//      requests served) becomes one row ("×18 passes, 1810–19810 ms, idle").
//   2. runs of at least 2 passes alike in kind (idle / owed batch / batch / events only / EMFILE
//      stop ...) fold.
//   3. neighbouring rows merge pairwise, repeatedly; pinned rows (a pass that served a long
//      request or a member of a small group, the story's blocker and /fast) merge last.
// The result never exceeds max(budget, workers) rows.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "reports/passes.hpp"

namespace loopsim::reports {

struct FoldOptions {
  std::size_t max_rows = 180;  // over every worker
  std::size_t min_run = 3;     // shorter runs of alike passes stay apart at stage 1
};

struct Row {
  int worker = 0;
  std::vector<std::size_t> passes;  // indices into PassView::passes, consecutive for the worker
  bool alike = true;                // every pass has the same shape
  bool pinned = false;
};

std::vector<Row> fold_rows(const sim::Trace& trace, const PassView& view, const FoldOptions& options);

// Clients counted for people: a few named entries (members of small groups, long requests),
// the rest by group, with the range of waits (send to answer) when the tally is of answers.
struct ClientTally {
  struct Group {
    int count = 0;
    Duration wait_min = Duration::max(), wait_max = Duration::min();
  };
  struct Named {
    std::string key;  // "fast", or "fast /fast"
    int count = 0;
    std::optional<Instant> from, to;  // when, if timed: one instant ("at 760 ms") or a span (10–610 ms)
  };
  static constexpr std::size_t max_named = 3;
  int total = 0;
  std::vector<Named> named;  // distinct keys, in first-seen order
  std::map<std::string, Group> groups;
  // Names members of small groups by label; counts everyone else by group, with its wait if any.
  void add(const sim::Trace& trace, sim::ClientIndex client, std::optional<Duration> wait = std::nullopt);
  // Names this one under `key` (repeats of a key add up), or counts it by group once
  // `max_named` keys are taken. `from` == `to`: an instant; none: untimed (and the key then stays
  // untimed).
  void add_named(const sim::Trace& trace, sim::ClientIndex client, const std::string& key,
                 std::optional<Instant> from, std::optional<Instant> to, std::optional<Duration> wait);
  std::string text() const;  // "blocker, fast ×4, burst ×120 (waited 570–710 ms)"

 private:
  void count_in_group(const sim::Trace& trace, sim::ClientIndex client, std::optional<Duration> wait);
};

// What a row's passes did, added up.
struct RowStats {
  std::size_t passes = 0;
  std::uint64_t pass_first = 0, pass_last = 0;
  Instant begin{}, woke{}, end{};
  std::optional<Duration> timeout_min = Duration(0), timeout_max = Duration(0);  // none (forever) is the least
  bool unfinished = false;  // the last pass was still waiting at the end of the run
  std::optional<int> exited;  // the process exited in the last pass, with this status
  int listener_events = 0;
  int connection_events = 0;
  std::vector<std::string> connection_names;  // at most a few, for single passes
  std::map<Door, int> accepted;
  std::map<BatchStop, int> stops;
  int owed_batches = 0;   // batches that left their door owed
  int owed_passes = 0;    // passes that ended with a door owed
  int blocked_while_owed = 0;  // passes whose wait could block although a door was owed (R2)
  bool accept_owed = false, handoff_owed = false;  // after the last pass
  std::map<std::string, int> accept_errors;
  ClientTally accepted_by;
  ClientTally arrivals;  // requests sent while these passes ran
  ClientTally served;    // long requests and small groups named: "blocker /slow?ms=600 (10–610 ms)"
  int long_served = 0;   // requests over the long-request threshold
  int small_served = 0;  // requests of small groups
  // Of `served`, spans a program's seam guessed (a read, then a write: they carry no path), which
  // pipelined requests defeat: the row says so, and `answers` is the count to believe.
  int guessed = 0;
  std::int64_t read_bytes = 0, reads = 0, wrote_bytes = 0, writes = 0, short_writes = 0;
  int answers = 0;      // as the clients counted them
  int off_natural = 0;  // choices that took another than their natural option
  bool idle() const {
    return listener_events + connection_events == 0 && served.total == 0 && stops.empty() && reads + writes == 0 &&
           answers == 0 && off_natural == 0;
  }
};

RowStats row_stats(const sim::Trace& trace, const PassView& view, const Row& row,
                   const LongRequestRule& rule);

}  // namespace loopsim::reports
