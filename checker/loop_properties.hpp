// The loop rules' properties: capacity (R9), post_latency (R7), no_spin (R2-R4), shutdown_clean
// (R5) and batch_bound (R1). Pure functions of a trace, like those in properties.hpp: each
// returns its measured figure, its bound, and the index of the first trace event that broke it.
#pragma once

#include <cmath>

#include <cstdint>

#include "checker/properties.hpp"
#include "realloop/config.hpp"

namespace loopsim::checker {

// no_spin's bound when the scenario gives no `max`.
inline constexpr std::int64_t no_spin_max_default = 100;
// no_spin's bound for `expect`: its `max`, a count, or the default (the judge and the search's
// monitor both take it here).
inline std::int64_t no_spin_bound_of(const sim::Expectation& expect) {
  return expect.max ? std::llround(expect.max->value) : no_spin_max_default;
}

// R9. Connections held: an `accept` ok adds one to its worker, a `close` or a `handoff` (the
// connection leaves for a sibling) takes it away; an accept that a `refuse` of the same worker
// and descriptor follows was never held. Measured: the most held at once over all workers.
// Bound: `min`, which the peak must reach; with `max`, the peak must not pass it. A `refuse`
// while its worker held fewer than the header's max_connections (any refuse, when the header
// has none) is a violation. The detail counts refusals and back-pressure events.
Verdict capacity(const sim::Trace& trace, const sim::Expectation& expect);

// R7. For each `post` (those whose poster is `of`, when given): the time to the `post_run` of
// its id. Measured: the worst; -1 when a post never ran. Bound: `max`. A post that ran twice,
// or no post at all, is a violation too.
Verdict post_latency(const sim::Trace& trace, const sim::Expectation& expect, const Costs& costs);

// R2-R4: no worker spins. A pass is idle when its wait was non-blocking (timeout 0) and it made
// no progress: between its pass_begin and pass_end its worker took no connection (accept ok or
// ECONNABORTED), got no event for a descriptor other than the listener, began or ended no
// request, closed, refused or handed off no connection, drained no post, ran no post, and took
// no shutdown step. A blocking wait or a pass with progress ends a run of idle passes.
// Measured: the longest run on one worker. Bound: `max` (default no_spin_max_default).
Verdict no_spin(const sim::Trace& trace, const sim::Expectation& expect);

// R5. For every worker that began shutdown: it closed its listener; it never accepted on the
// listener after closing it (and no worker's accept on the listener failed with EBADF after any
// listener closed); every pass_end after the close left both owed flags clear; it exited
// (loop_exit) holding no connection. At run_end no handed-over connection waits and no
// connection is open. Measured: the number of breaches (each late accept, owed pass_end,
// missing close or exit, waiting hand-off and open connection counts one). Bound: 0. A run
// without shutdown is a violation (measured -1): the scenario asked for one.
// With `max` (a time): also the drain, from the first shutdown_asked to the last loop_exit.
Verdict shutdown_clean(const sim::Trace& trace, const sim::Expectation& expect = {});

// batch_bound's bound when the scenario gives no `max`: R1's default batch. The bound is never
// read from the run's own configuration: that is what is under test, and a sabotaged batch
// (accept_batch 0, an unbounded drain) would otherwise be its own judge.
inline constexpr std::int64_t batch_bound_max_default = LoopConfig{}.accept_batch;

// batch_bound's bound for `expect`: its `max` as a count, or the default (the judge and the
// search's monitor both take it here). A `max` in another unit is the judge's to refuse.
inline std::int64_t batch_bound_of(const sim::Expectation& expect) {
  return expect.max ? std::llround(expect.max->value) : batch_bound_max_default;
}

// R1. Measured: the most accepts ok on one door by one worker within one pass (pass_begin to
// pass_end). Bound: `max`, a count (default batch_bound_max_default); a `max` in another unit
// is a violation. Hand-off accepts between a worker's shutdown_begin and listener_closed are
// left out: R5 admits every connection already handed over, whatever the batch. A run that
// accepted nothing is a violation: it measured no batch.
Verdict batch_bound(const sim::Trace& trace, const sim::Expectation& expect);

}  // namespace loopsim::checker
