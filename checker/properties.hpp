// Properties: pure functions of a trace. Each returns a verdict with its measured figure, its
// bound, and the first trace event that broke it. They observe; they never change the world.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "realloop/config.hpp"
#include "scenario/scenario.hpp"
#include "trace/trace.hpp"

namespace loopsim::checker {

enum class Unit : std::uint8_t { ns, count };

struct Verdict {
  std::string property;
  std::string of;  // the group the property is about, if any
  bool held = true;
  std::int64_t measured = 0;
  std::int64_t bound = 0;
  Unit unit = Unit::ns;
  std::string bound_text;  // the bound as the scenario wrote it
  std::string detail;      // one line a person can act on
  std::optional<std::size_t> first_bad;  // index into Trace::events
  // False on a run stopped before its horizon (Trace::cut) when the trace so far cannot decide
  // it: a property that needs the end, or one that held so far. `held` is then true, and says
  // nothing.
  bool decided = true;
};

// What bounds written in "requests" and "batches" are measured in.
struct Costs {
  Duration request{0};   // the measured cost of one request (see request_cost)
  int batch = LoopConfig{}.accept_batch;  // accepts in one batch
};

// The median time the loop spent serving one request in this trace: what "1 request" means.
Duration request_cost(const sim::Trace& trace);
// A bound in nanoseconds or as a count.
std::int64_t resolve(const sim::Bound& bound, const Costs& costs);
// A verdict on `property` about `expect.of` with `expect.max` as its bound, not yet judged.
Verdict bounded_by_max(const std::string& property, const sim::Expectation& expect,
                       const Costs& costs);
// "41.2 ms", for detail lines: a length, or an instant as its time since the run's start.
std::string ms_text(Duration t);
inline std::string ms_text(Instant t) { return ms_text(since_start(t)); }

// Every request answered exactly once: none lost, none duplicated.
// `of` (optional): only that group's requests count, as when a flood is shed by the kernel
// (abort_on_overflow) while a held client must still be answered.
Verdict answered(const sim::Trace& trace, const std::string& of = {});
// At the end (run_end) nothing waits in the listener's backlog or in a hand-off channel; with
// `max`, no connection waited longer than that at either door while every loop sat blocked in
// its wait. A trace without run_end is a violation: what was left is unknown.
Verdict no_stranded_backlog(const sim::Trace& trace, const sim::Expectation& expect,
                            const Costs& costs);
// `of`'s last answer within `max` of `after`'s last answer (or each of `of`'s requests within
// `max` of its own send, when `after` is empty). Measured: that time, negative when `of` was
// answered first; -1 when a request of `of`, or of `after`, was never answered, which fails.
Verdict latency(const sim::Trace& trace, const sim::Expectation& expect, const Costs& costs);
// The widest gap between consecutive answers to group `of` stays within `max`. A gap needs two
// answers, so a group with no request, no answer, or one answer of two or more requests fails
// (measured -1); whether every request was answered is `answered`'s to judge.
Verdict max_gap(const sim::Trace& trace, const sim::Expectation& expect, const Costs& costs);

// The loop rules' properties (capacity, post_latency, no_spin, shutdown_clean, batch_bound)
// are in checker/loop_properties.hpp.

// The run never came back to a state in which connections waited and none was accepted since,
// nor ended with nothing left to happen while they waited (sim::run watches for it and writes
// a `lasso` event when the scenario expects this property).
Verdict liveness(const sim::Trace& trace);

// The kinds of event `expect`'s property reads, so that a run at --trace-level verdicts keeps
// those and no others. The loop rules' properties read the passes whole: all of it.
sim::EventMask events_needed(const sim::Expectation& expect);
// What a run judged by `expect` must record: every property's needs, and the run's end.
sim::EventMask events_needed(const std::vector<sim::Expectation>& expect);

bool known_property(const std::string& name);
const std::vector<std::string>& property_names();

// Checks every expectation. `costs.request` is filled from the trace when zero. On a trace cut
// short (Trace::cut), a violation the rest of the run could not undo stays violated, with the
// cut named in its detail, and every other verdict is undecided. A run stopped because time
// stood still (Trace::stalled) gains a violated "livelock" verdict after the others.
std::vector<Verdict> evaluate(const sim::Trace& trace, const std::vector<sim::Expectation>& expect,
                              Costs costs);

}  // namespace loopsim::checker
