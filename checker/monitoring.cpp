#include "checker/monitoring.hpp"

#include "checker/loop_properties.hpp"

namespace loopsim::checker {

namespace {

// A time written as one. A bound in "requests" or "batches" is not: the judge measures what a
// request costs from the run's own requests (their median, request_cost), which is history.
bool timed(const sim::Expectation& e) { return e.max && e.max->unit == sim::Bound::Unit::time; }
bool counted_or_default(const sim::Expectation& e) { return !e.max || e.max->unit == sim::Bound::Unit::count; }
bool time_or_none(const sim::Expectation& e) { return !e.max || e.max->unit == sim::Bound::Unit::time; }

}  // namespace

bool monitorable(const sim::Expectation& e) {
  if (e.property == "latency" || e.property == "max_gap" || e.property == "no_stranded_backlog") return timed(e);
  if (e.property == "batch_bound" || e.property == "no_spin") return counted_or_default(e);
  if (e.property == "shutdown_clean") return time_or_none(e);
  return e.property == "post_latency" && time_or_none(e);
}

bool watch(sim::Monitors& monitors, const sim::Expectation& e, const Costs& costs) {
  if (!monitorable(e)) return false;
  // As bounded_by_max resolves it: no `max`, a bound of 0.
  const std::int64_t bound = e.max ? resolve(*e.max, costs) : 0;
  if (e.property == "latency" && e.after.empty()) monitors.watch_latency(e.of, bound);
  else if (e.property == "latency") monitors.watch_latency_after(e.of, e.after, bound);
  else if (e.property == "max_gap") monitors.watch_gap(e.of, bound);
  else if (e.property == "no_stranded_backlog") monitors.watch_idle_wait(bound);
  else if (e.property == "batch_bound") monitors.watch_batch(batch_bound_of(e));
  else if (e.property == "no_spin") monitors.watch_spin(no_spin_bound_of(e));
  else if (e.property == "shutdown_clean") monitors.watch_shutdown(e.max ? std::optional(Duration(bound)) : std::nullopt);
  else monitors.watch_posts(e.of, bound);
  return true;
}

}  // namespace loopsim::checker
