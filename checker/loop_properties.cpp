#include "checker/loop_properties.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <map>
#include <set>

#include "sim/monitors.hpp"
#include "sim/shutdown_scan.hpp"

namespace loopsim::checker {

using sim::Trace;
using sim::TraceEvent;
namespace ev = sim::ev;

namespace {

Verdict counted(const char* property) {
  Verdict v;
  v.property = property;
  v.unit = Unit::count;
  return v;
}

// Marks `v` broken at `index`, keeping the earliest index seen.
void breaks_at(Verdict& v, std::size_t index) {
  v.held = false;
  if (!v.first_bad || index < *v.first_bad) v.first_bad = index;
}

std::optional<std::size_t> run_end_index(const Trace& trace) {
  for (std::size_t i = trace.events.size(); i-- > 0;) {
    if (std::holds_alternative<ev::RunEnd>(trace.events[i])) return i;
  }
  return std::nullopt;
}

std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

// ---- capacity ---------------------------------------------------------------------------

// The accepts that a refuse of the same worker and descriptor followed: accepted, then reset.
std::vector<bool> refused_accepts(const Trace& trace) {
  std::vector<bool> refused(trace.events.size(), false);
  std::map<std::pair<int, int>, std::size_t> last_accept;  // (worker, fd) -> event index
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    if (auto* a = std::get_if<ev::Accept>(&trace.events[i]); a != nullptr && a->result >= 0) {
      last_accept[{a->worker, a->result}] = i;
    }
    auto* r = std::get_if<ev::Refuse>(&trace.events[i]);
    if (r == nullptr) continue;
    auto it = last_accept.find({r->worker, r->fd});
    if (it == last_accept.end()) continue;
    refused[it->second] = true;
    last_accept.erase(it);
  }
  return refused;
}

// The connections each worker holds, by descriptor and by client.
class Holdings {
 public:
  void admit(int worker, int fd, sim::ClientIndex client) {
    if (!held_[worker].emplace(fd, client).second) return;
    ++total_;
    if (client != sim::no_client) fd_of_[{worker, client}] = fd;
  }
  void release(int worker, int fd) {
    auto& mine = held_[worker];
    auto it = mine.find(fd);
    if (it == mine.end()) return;
    fd_of_.erase({worker, it->second});
    mine.erase(it);
    --total_;
  }
  // The client's connection left `worker` for a sibling.
  void hand_off(int worker, sim::ClientIndex client) {
    auto it = fd_of_.find({worker, client});
    if (it != fd_of_.end()) release(worker, it->second);
  }
  std::int64_t of(int worker) const {
    auto it = held_.find(worker);
    return it == held_.end() ? 0 : std::int64_t(it->second.size());
  }
  std::int64_t total() const { return total_; }

 private:
  std::map<int, std::map<int, sim::ClientIndex>> held_;     // worker -> fd -> client
  std::map<std::pair<int, sim::ClientIndex>, int> fd_of_;  // (worker, client) -> fd
  std::int64_t total_ = 0;
};

struct CapacityScan {
  std::int64_t ceiling = 0;                // a refuse below it is a violation; <= 0: unknown
  std::optional<std::int64_t> max;         // the peak must not pass it
  std::vector<bool> refused;               // from refused_accepts
  Holdings held;
  std::int64_t peak = 0;
  std::int64_t refusals = 0, below_ceiling = 0, backpressures = 0;
  std::optional<std::size_t> first_limit;  // the first refuse or back-pressure
  std::optional<std::size_t> over_max;     // where the held count first passed `max`

  // Returns whether the event broke the property.
  bool step(std::size_t i, const TraceEvent& event) {
    bool broke = false;
    if (auto* a = std::get_if<ev::Accept>(&event); a != nullptr && a->result >= 0 && !refused[i]) {
      held.admit(a->worker, a->result, a->client);
    } else if (auto* c = std::get_if<ev::Close>(&event)) {
      held.release(c->worker, c->fd);
    } else if (auto* h = std::get_if<ev::Handoff>(&event)) {
      held.hand_off(h->worker, h->client);
    } else if (auto* r = std::get_if<ev::Refuse>(&event)) {
      ++refusals;
      first_limit = first_limit.value_or(i);
      held.release(r->worker, r->fd);
      broke = ceiling <= 0 || held.of(r->worker) < ceiling;
      below_ceiling += broke ? 1 : 0;
    } else if (std::holds_alternative<ev::Backpressure>(event)) {
      ++backpressures;
      first_limit = first_limit.value_or(i);
    }
    peak = std::max(peak, held.total());
    if (max && held.total() > *max && !over_max) over_max = i;
    return broke;
  }
};

std::string capacity_detail(const CapacityScan& scan, const Verdict& v) {
  std::string detail = "peak " + std::to_string(scan.peak) + " held";
  if (scan.peak < v.bound) detail += ", fewer than " + std::to_string(v.bound);
  if (scan.over_max) detail += ", more than " + std::to_string(*scan.max);
  detail += "; " + std::to_string(scan.refusals) + " refused";
  if (scan.below_ceiling > 0) {
    std::string ceiling = scan.ceiling > 0 ? "the ceiling of " + std::to_string(scan.ceiling)
                                           : std::string("an unknown ceiling");
    detail += " (" + std::to_string(scan.below_ceiling) + " below " + ceiling + ")";
  }
  return detail + ", " + std::to_string(scan.backpressures) + " back-pressure stop(s)";
}

// ---- no_spin ----------------------------------------------------------------------------

struct SpinState {
  // The pass in hand: from one wait's return to the next wait's.
  bool open = false;          // a wait has returned
  bool progress = false;      // ...and, in a trace without kernel counts, progress events since
  // A request answered in the pass: work done in the loop's own buffers, which the kernel's
  // count does not see when the send buffer is full (a slow reader's answers queued, R8's turns).
  bool answered = false;
  std::size_t returned = 0;   // that wait's events
  std::uint64_t pass = 0;
  std::optional<Instant> began; // the pass's wait was called then, if the trace says
  std::optional<Instant> next;  // the next wait was called then
  std::int64_t run = 0;       // idle passes in a row
  std::uint64_t run_from = 0; // the first pass of the run
  std::size_t run_from_event = 0;  // ...and its wait's events, for when the run began
  // A hot accept loop never waits at all: failed accepts in a row, with no wait between them
  // (libuv 1.44 under an EMFILE window).
  std::int64_t failed_accepts = 0;
  std::size_t failed_from = 0;  // the first of them
};

// ---- shutdown_clean -----------------------------------------------------------------------

// Breaches found, each with the line that names it.
struct Findings {
  std::int64_t count = 0;
  std::vector<std::string> problems;
  void add(std::int64_t n, std::string what) {
    if (n <= 0) return;
    count += n;
    problems.push_back(std::move(what));
  }
};

// `deadline_resets`: a bounded drain (shutdown_clean's max) was asked for, and what a worker
// reset at drain_timeout is its deadline at work: reported, not a breach.
// `lost`: requests outstanding at an exit that were never answered (sim::ShutdownScan::lost):
// an answer written before the exit may still have arrived after it.
void judge_worker(int worker, const sim::WorkerShutdown& w, std::optional<std::size_t> end_at, bool deadline_resets,
                  std::int64_t lost, Verdict& v, Findings& found, std::vector<std::string>& notes) {
  if (!w.began) return;
  std::string who = "worker " + std::to_string(worker);
  if (!w.closed || !w.exited) breaks_at(v, end_at.value_or(*w.began));
  if (!w.closed) found.add(1, who + " never closed its listener");
  if (!w.exited) found.add(1, who + " never exited");
  if (!w.exited || w.open_at_exit == 0) return;
  const int idle = w.open_at_exit - w.owing_at_exit;
  const std::string idle_text = std::to_string(idle) + " idle connection(s), with nothing outstanding";
  if (w.owing_at_exit == 0) {
    notes.push_back(who + " exited holding " + idle_text + ": each client sees the close");
  } else if (deadline_resets) {
    notes.push_back(who + " reset " + std::to_string(w.owing_at_exit) + " connection(s) owed an answer at its drain_timeout");
  } else if (lost > 0) {
    breaks_at(v, *w.exited);
    found.add(1, who + " exited holding " + std::to_string(w.owing_at_exit) + " connection(s) owed an answer" +
                     (idle > 0 ? " (and " + idle_text + ")" : ""));
  }
}

void judge_end(const ev::RunEnd& end, std::size_t end_at, Verdict& v, Findings& found) {
  if (end.handoffs > 0 || end.open_connections > 0) breaks_at(v, end_at);
  found.add(end.open_connections,
            std::to_string(end.open_connections) + " connection(s) still open at the end");
}

// Judges what the scan saw, and run_end's state; with `max`, the drain's time too.
void judge_shutdown(const sim::ShutdownScan& scan, const Trace& trace, std::optional<Duration> max, Verdict& v) {
  const sim::ShutdownScan::Breaches& breaches = scan.breaches();
  Findings found;
  if (breaches.first) breaks_at(v, *breaches.first);
  found.add(breaches.handlers_before_close, std::to_string(breaches.handlers_before_close) +
                                        " handler(s) begun after the shutdown was asked, before the listener closed");
  if (max && scan.asked()) {
    const std::optional<Duration> took = scan.drain_time();
    if (!took || *took > *max) {
      breaks_at(v, run_end_index(trace).value_or(trace.events.size() - 1));
      found.add(1, !took ? "no worker exited after the shutdown was asked"
                         : "the drain took " + ms_text(*took) + " from the shutdown's asking to the last exit");
    }
  }
  found.add(breaches.late_accepts, std::to_string(breaches.late_accepts) + " accept(s) on a closed listener");
  found.add(breaches.owed_passes,
            std::to_string(breaches.owed_passes) + " pass(es) ended owed after the listener closed");
  found.add(breaches.queued_resets, std::to_string(breaches.queued_resets) +
                                " queued connection(s) reset when the listener closed, never accepted");
  auto end_at = run_end_index(trace);
  std::vector<std::string> notes;
  for (const auto& [worker, w] : scan.workers()) {
    judge_worker(worker, w, end_at, max.has_value(), scan.lost(), v, found, notes);
  }
  if (!max) {
    found.add(scan.lost(), std::to_string(scan.lost()) + " request(s) outstanding at an exit never answered");
  }
  const ev::RunEnd* end = end_at ? &std::get<ev::RunEnd>(trace.events[*end_at]) : nullptr;
  // A hand-off dropped at shutdown leaves nothing waiting at the end, which run_end's count
  // misses; one still waiting may have been cut off by the horizon, which only run_end knows.
  for (const auto& handed : scan.handed()) breaks_at(v, handed.second);
  std::int64_t never = std::max(std::int64_t(scan.handed().size()), end != nullptr ? end->handoffs : 0);
  found.add(never, std::to_string(never) + " handed-over connection(s) never admitted");
  if (end != nullptr) {
    judge_end(*end, *end_at, v, found);
  } else {
    v.held = false;
    found.add(1, "the trace has no run_end");
  }
  v.measured = found.count;
  for (std::string& note : notes) found.problems.push_back(std::move(note));
  v.detail = joined(found.problems);
}

bool any_shutdown(const Trace& trace) {
  return std::any_of(trace.events.begin(), trace.events.end(), [](const TraceEvent& e) {
    return std::holds_alternative<ev::ShutdownBegin>(e);
  });
}

// ---- batch_bound --------------------------------------------------------------------------

struct BatchState {
  std::uint64_t pass = 0;
  bool admitting = false;  // between shutdown_begin and listener_closed (R5)
  std::map<Door, std::int64_t> accepts;  // in the current pass
};

// The most accepts on one door by one worker within one pass, and where it passed the bound.
class BatchScan {
 public:
  explicit BatchScan(std::int64_t bound) : bound_(bound) {}
  void step(std::size_t i, const TraceEvent& event) {
    if (auto* b = std::get_if<ev::PassBegin>(&event)) {
      workers_[b->worker].pass = b->pass;
      workers_[b->worker].accepts.clear();
    } else if (auto* e = std::get_if<ev::PassEnd>(&event)) {
      workers_[e->worker].accepts.clear();
    } else if (auto* s = std::get_if<ev::ShutdownBegin>(&event)) {
      workers_[s->worker].admitting = true;
    } else if (auto* c = std::get_if<ev::ListenerClosed>(&event)) {
      workers_[c->worker].admitting = false;
    } else if (auto* a = std::get_if<ev::Accept>(&event); a != nullptr && a->result >= 0) {
      accept(i, *a);
    }
  }
  std::int64_t accepted = 0;  // accepts ok over the whole run, those left out included
  std::int64_t most = 0;
  std::optional<std::size_t> first_over;
  std::string worst;  // names the pass that took `most`

 private:
  void accept(std::size_t i, const ev::Accept& a) {
    ++accepted;
    BatchState& w = workers_[a.worker];
    // R5: a shutdown admits every hand-off and the listener's whole queue before the close,
    // past the batch: those accepts are the drain, not a batch.
    if (w.admitting) return;
    std::int64_t n = ++w.accepts[a.door];
    if (n > bound_ && !first_over) first_over = i;
    if (n <= most) return;
    most = n;
    worst = "worker " + std::to_string(a.worker) + " accepted " + std::to_string(n) + " from the " +
            door_name(a.door) + " in pass " + std::to_string(w.pass);
  }

  std::int64_t bound_;
  std::map<int, BatchState> workers_;
};

}  // namespace

Verdict capacity(const Trace& trace, const sim::Expectation& expect) {
  Verdict v = counted("capacity");
  v.of = expect.of;
  if (expect.min) {
    v.bound = std::llround(expect.min->value);
    v.bound_text = expect.min->text;
  }
  CapacityScan scan;
  scan.ceiling = trace.max_connections;
  scan.refused = refused_accepts(trace);
  if (expect.max) scan.max = std::llround(expect.max->value);
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    if (scan.step(i, trace.events[i])) breaks_at(v, i);
  }
  v.measured = scan.peak;
  if (scan.over_max) breaks_at(v, *scan.over_max);
  if (scan.peak < v.bound) {
    v.held = false;
    auto at = scan.first_limit ? scan.first_limit : run_end_index(trace);
    if (at) breaks_at(v, *at);
  }
  v.detail = capacity_detail(scan, v);
  return v;
}

Verdict post_latency(const Trace& trace, const sim::Expectation& expect, const Costs& costs) {
  Verdict v = bounded_by_max("post_latency", expect, costs);
  std::map<std::int64_t, std::size_t> posted;  // id -> its post event, for the posts judged
  std::set<std::int64_t> ran;
  std::int64_t twice = 0;
  std::optional<std::pair<std::int64_t, Duration>> worst;  // id, latency
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& event = trace.events[i];
    auto* p = std::get_if<ev::Post>(&event);
    if (p != nullptr && (expect.of.empty() || p->poster == expect.of)) posted.emplace(p->id, i);
    auto* r = std::get_if<ev::PostRun>(&event);
    auto it = r == nullptr ? posted.end() : posted.find(r->id);
    if (it == posted.end()) continue;
    if (!ran.insert(r->id).second) {
      ++twice;
      breaks_at(v, i);
      continue;
    }
    Duration latency = r->t - sim::time_of(trace.events[it->second]);
    if (!worst || latency > worst->second) worst.emplace(r->id, latency);
    if (latency.count() > v.bound) breaks_at(v, i);
  }
  std::vector<std::string> problems;
  std::int64_t never = 0;
  for (const auto& [id, index] : posted) {
    if (ran.count(id) > 0) continue;
    ++never;
    breaks_at(v, index);
  }
  v.measured = never > 0 || !worst ? -1 : worst->second.count();
  if (posted.empty()) {
    v.held = false;
    problems.push_back(expect.of.empty() ? "no post in this run"
                                         : "no post from \"" + expect.of + "\"");
  }
  if (never > 0) problems.push_back(std::to_string(never) + " post(s) never ran");
  if (twice > 0) problems.push_back(std::to_string(twice) + " post callback(s) ran twice");
  if (worst) {
    problems.push_back("the slowest (id " + std::to_string(worst->first) + ") ran " +
                       ms_text(worst->second) + " after it was posted");
  }
  if (!v.held) v.detail = joined(problems);
  return v;
}

// A pass runs from a wait's call to the next wait's. It is idle if it took at most
// spin_pass_max of virtual time (its wait returned at once, whatever timeout it asked for, and
// nothing slept) and got nothing done: the kernel's count of calls that did something
// (Events::work, carried by the next wait) is 0, or, in a trace without that count, no
// progress event came; and it finished no request (request_end).
// A spin is more than `max` idle passes in a row, or more than `max` failing accepts with no
// wait between them.
Verdict no_spin(const Trace& trace, const sim::Expectation& expect) {
  Verdict v = counted("no_spin");
  v.bound = no_spin_bound_of(expect);
  v.bound_text = expect.max ? expect.max->text : std::to_string(v.bound);
  std::map<int, SpinState> workers;
  std::string worst;
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& event = trace.events[i];
    if (const auto* r = std::get_if<ev::RequestEnd>(&event)) workers[r->worker].answered = true;
    if (auto* a = std::get_if<ev::Accept>(&event)) {
      SpinState& s = workers[a->worker];
      bool failed = sim::failed_accept(a->result);
      if (failed && s.failed_accepts == 0) s.failed_from = i;
      s.failed_accepts = failed ? s.failed_accepts + 1 : 0;
      if (s.failed_accepts == v.bound + 1) breaks_at(v, s.failed_from);
      if (s.failed_accepts > v.measured) {
        v.measured = s.failed_accepts;
        worst = "worker " + std::to_string(a->worker) + " made " + std::to_string(s.failed_accepts) +
                " failing accepts in a row without a wait (from " + sim::errno_name(-a->result) + " at " +
                std::to_string(since_start(sim::time_of(trace.events[s.failed_from])).count() / 1000) + " us)";
      }
    }
    if (auto* b = std::get_if<ev::PassBegin>(&event)) {
      SpinState& s = workers[b->worker];
      s.next = b->t;
      s.failed_accepts = 0;
    } else if (auto* e = std::get_if<ev::Events>(&event)) {
      SpinState& s = workers[e->worker];
      s.failed_accepts = 0;
      if (s.open) {
        bool quick = s.began && s.next && *s.next - *s.began <= sim::spin_pass_max;
        bool idle = quick && !s.answered && (e->work >= 0 ? e->work == 0 : !s.progress);
        if (idle && s.run == 0) {
          s.run_from = s.pass;
          s.run_from_event = s.returned;
        }
        s.run = idle ? s.run + 1 : 0;
        if (s.run == v.bound + 1) breaks_at(v, s.returned);
        if (s.run > v.measured) {
          v.measured = s.run;
          worst = "worker " + std::to_string(e->worker) + " made " + std::to_string(s.run) +
                  " passes in a row that returned at once and got nothing done (passes " +
                  std::to_string(s.run_from) + "–" + std::to_string(s.pass) + ", from " +
                  ms_text(sim::time_of(trace.events[s.run_from_event])) + ")";
        }
      }
      s.open = true;
      s.answered = false;
      s.began = s.next;
      s.progress = !e->fds.empty() && std::any_of(e->fds.begin(), e->fds.end(), [&](int fd) { return fd != trace.listener_fd; });
      s.returned = i;
      s.pass = e->pass;
      s.next.reset();
    } else if (auto worker = sim::progress_of(event, trace.listener_fd)) {
      workers[*worker].progress = true;
    }
  }
  if (!v.held) v.detail = worst;
  return v;
}

Verdict shutdown_clean(const Trace& trace, const sim::Expectation& expect) {
  Verdict v = counted("shutdown_clean");
  std::optional<Duration> max;
  if (expect.max) {
    if (expect.max->unit != sim::Bound::Unit::time) {
      v.held = false;
      v.detail = "shutdown_clean's max is a time (from the shutdown's asking to the last exit), not \"" +
                 expect.max->text + "\"";
      return v;
    }
    max = Duration(std::llround(expect.max->value));
    v.bound_text = expect.max->text;
  }
  if (!any_shutdown(trace)) {
    v.held = false;
    v.measured = -1;
    v.detail = "no shutdown in this run";
    v.first_bad = run_end_index(trace);
    return v;
  }
  sim::ShutdownScan scan;
  for (std::size_t i = 0; i < trace.events.size(); ++i) scan.step(i, trace.events[i]);
  judge_shutdown(scan, trace, max, v);
  return v;
}

Verdict batch_bound(const Trace& trace, const sim::Expectation& expect) {
  Verdict v = counted("batch_bound");
  v.bound = batch_bound_of(expect);
  v.bound_text = expect.max ? expect.max->text : std::to_string(v.bound);
  if (expect.max && expect.max->unit != sim::Bound::Unit::count) {
    v.held = false;
    v.bound = 0;
    v.detail = "batch_bound's max is a count of accepts (max = " +
               std::to_string(batch_bound_max_default) + "), not \"" + expect.max->text + "\"";
    return v;
  }
  BatchScan scan(v.bound);
  for (std::size_t i = 0; i < trace.events.size(); ++i) scan.step(i, trace.events[i]);
  v.measured = scan.most;
  if (scan.accepted == 0) {
    v.held = false;
    v.first_bad = run_end_index(trace);
    v.detail = "no connection was accepted in this run, so no batch was measured";
    return v;
  }
  if (!scan.first_over) return v;
  breaks_at(v, *scan.first_over);
  v.detail = scan.worst + ", more than " + std::to_string(v.bound);
  return v;
}

}  // namespace loopsim::checker
