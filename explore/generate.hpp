// The scenario generator behind `loopsim generate`: RapidCheck generators draw whole scenarios
// from the format (a Description, rendered to TOML text), each is run on the simulated kernel
// with the real loop and judged by the properties that must hold for every configuration with
// the rules on, and a failure is shrunk (RapidCheck's shrinks of the Description) to a small
// scenario file that `loopsim run` replays. A run that makes no virtual progress within a step
// budget is a livelock, never a frozen process.
//
// Deterministic: the same seed draws the same scenarios and finds the same failure. No wall
// clock here; the caller may pass one for the time limit and progress.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <rapidcheck.h>

#include "scenario/scenario.hpp"
#include "trace/trace.hpp"

namespace loopsim::explore {

// What a generated scenario is made of. Times are whole milliseconds (or microseconds where
// the name says so); each field shrinks towards its default or its smallest.
struct GenRequest {
  enum class Route : std::uint8_t { fast, hello, slow_ms, slow_us, bytes };
  int at_ms = 0;
  Route route = Route::fast;
  int amount = 0;  // the N of /slow?ms=N, /slow?us=N or /bytes?n=N
};

// How a group's clients meet the network and the server, beyond their requests.
struct GenWire {
  bool poisson = false;  // arrivals = "poisson" (with a rate)
  int rtt_ms = 0;
  int jitter_ms = 0;
  bool half_close = false;
  int body = 0;        // bytes with every request
  int read_rate = 0;   // bytes per second; 0: reads at once
};

struct GenGroup {
  int count = 1;
  int connect_ms = 0;
  int rate = 0;  // connections per second; 0: all at connect_ms
  bool keep_alive = false;
  std::vector<GenRequest> requests;
  GenWire wire;
  // A pipelined burst of /fast requests ahead of `requests`, sent when the connection is made
  // (render.cpp).
  int burst = 0;
};

struct GenFault {
  enum class Kind : std::uint8_t { accept_nth, accept_window, rlimit, reset };
  Kind kind = Kind::accept_nth;
  int nth = 1;
  int at_ms = 0;
  int until_ms = 0;
  int count = 0;      // accept_window: the budget (0: every accept); reset: clients (0: all)
  int error = 0;      // an errno value
  int rlimit_delta = 0;  // rlimit: the new limit less the process's own descriptors
  int group = 0;      // reset: index into the groups, modulo their number
};

// What goes wrong for a target, drawn apart from the built-in loop's faults (a program's
// descriptor reservations and posts are its own): mostly nothing, so that what any server must
// do with a plain workload stays judged in most runs; else clients that reset their connections
// (a server that writes on then meets EPIPE, and SIGPIPE unless it ignores it), a window of
// failing accepts (EMFILE, ENFILE, ENOBUFS), or a SIGTERM.
struct GenTrouble {
  enum class Kind : std::uint8_t { none, reset, accept_window, sigterm };
  Kind kind = Kind::none;
  int at_ms = 1;
  int window_ms = 10;  // accept_window
  int error = 0;       // accept_window: an errno value
  int group = 0;       // reset: index into the groups, modulo their number
  // accept_window: how many accepts in it fail, 1 to 3. Never all of them: a real EMFILE ends
  // when a descriptor is closed, and libuv closes its reserve one to take the connection (and
  // drop it); an error that no close ends would spin it, which Linux never does.
  int count = 1;
};

// A large answer to a slow reader: the first request of one group asks for `bytes` (/bytes?n=N),
// and the group reads its answers slowly, so that the answer waits in the send buffer and the
// loop must come back to it (R13). Applied as drawn (description_gen); 0: none.
struct GenLarge {
  int bytes = 0;
  int group = 0;  // index into the groups, modulo their number
};

struct GenPoster {
  int at_ms = 0;
  int cost_us = 0;
  int count = 1;
  int every_ms = 0;
  int worker = 0;  // modulo the workers
};

struct Description {
  std::uint64_t seed = 1;
  // [kernel]
  bool kqueue = false;
  int rlimit_room = 0;       // 0: the default limit; else the limit less the loop's own descriptors
  int send_buffer = 0;       // 0: the default
  int receive_buffer = 0;    // 0: the default
  // [loop]
  int accept_batch = 16;
  int yield_batch = 16;
  int drain_chunk = 8;
  int workers = 1;
  bool pool = false;
  int pool_threads = 4;
  bool inverted = false;
  int max_connections = 0;  // 0: the default
  enum class Handles : std::uint8_t { rlimit, fixed, grow } handles = Handles::rlimit;
  int max_handles = 65536;
  bool refuse = false;      // on_full
  int max_events = 0;       // 0: the default
  int emfile_backoff_ms = 100;
  int idle_timeout_ms = 1000;
  // the workload and what happens to it
  std::vector<GenGroup> groups;
  std::vector<GenFault> faults;
  std::vector<GenPoster> posters;
  std::optional<int> shutdown_ms;
  GenTrouble trouble;  // a target's only (render.cpp)
  GenLarge large;      // applied to `groups` as drawn: kept to say what was drawn
};


// Draws descriptions from the whole format; shrinking moves towards fewer groups, clients,
// requests, faults and posters, and towards the defaults.
rc::Gen<Description> description_gen();

// The descriptors the simulated process holds before its first connection: the standard
// streams, the listener, each worker's poller and wake object, each pool thread's, and the
// outer poller of each inverted worker.
int own_descriptors(const sim::Scenario& scenario);

// The scenario as TOML text, with `overrides` (--set) written into it, and the [[expect]]
// entries that must hold for its configuration (see expectations_text). `name` goes into it.
// Throws sim::ScenarioError when an override is bad.
std::string scenario_text(const Description& description, const std::string& name,
                          const std::vector<sim::Override>& overrides = {});

// The time, in milliseconds, by which everything the scenario schedules has happened and been
// served, with room for EMFILE back-offs and idle waits: a horizon no shorter cuts no request,
// retry or shutdown short.
std::int64_t horizon_needed_ms(const sim::Scenario& scenario);

// The [[expect]] entries a configuration must satisfy with the rules on, each left out where
// the configuration allows it to fail (a comment in the text says why).
std::string expectations_text(const sim::Scenario& scenario);

// The oracle a generated scenario gets: the properties judged (with their bound lines) and those
// left out, each with why (a reason shared by every run it applies to) and the detail for this
// run. expectations_text renders it.
struct Oracle {
  struct Judged {
    std::string property, extra;
  };
  struct LeftOut {
    std::string property, why, detail;
  };
  std::vector<Judged> judged;
  std::vector<LeftOut> left_out;
};
Oracle oracle_of(const sim::Scenario& scenario);

// The step budget: a run with more scheduler steps at one virtual instant is a livelock (a
// failure, as in sim::run); one with more in all is only long: a bound, judged on what it did
// so far (a violation already certain still counts).
struct StepBudget {
  std::uint64_t at_instant = 1'000'000;
  std::uint64_t total = 5'000'000;
  // The search's wall-clock limit (--time-limit), asked between a run's phases and every
  // out_of_time_every steps: true stops the run, judged out_of_time. Unset: none.
  std::function<bool()> out_of_time = nullptr;
};
inline constexpr std::uint64_t out_of_time_every = 1024;

struct Judged {
  // bound: the run stopped at its total step budget with nothing decided against it.
  // out_of_time: the search's time limit stopped the run; nothing is decided about it.
  enum class Verdict : std::uint8_t { held, violated, livelock, bound, out_of_time };
  Verdict verdict = Verdict::held;
  std::vector<std::string> violated;  // property names; "livelock" for a livelock
  std::string detail;                 // the first violation's, or the livelock's
  std::uint64_t steps = 0;
  Duration virtual_time{0};
  std::optional<sim::Trace> livelock_trace;  // the trace so far, for a livelock
  bool failed() const { return verdict == Verdict::violated || verdict == Verdict::livelock; }
};

// Runs a scenario text (as scenario_text renders it) and judges it by its [[expect]] entries.
// Throws sim::ScenarioError when the text does not load.
Judged judge_text(const std::string& text, const std::string& name, const StepBudget& budget);

struct GenerateProgress {
  std::uint64_t runs = 0;
  std::uint64_t runs_max = 0;
  std::uint64_t shrinks = 0;  // shrink candidates tried, once a failure is found
  bool shrinking = false;
};

struct GenerateOptions {
  std::uint64_t runs = 100;
  std::uint64_t seed = 1;
  std::vector<sim::Override> overrides;  // --set, applied to every generated scenario
  StepBudget budget;
  std::uint64_t max_shrinks = 3000;  // shrink candidates tried at most
  // This run's share of the draws: run i is judged when i % shards == shard. Every shard draws
  // every scenario (drawing is cheap), so run i is the same scenario in any shard.
  std::uint32_t shard = 0, shards = 1;
  std::int64_t time_limit_ns = 0;    // 0: none; checked between runs and shrink candidates, and inside each
  std::function<std::int64_t()> wall_ns;
  std::function<void(const GenerateProgress&)> progress;
};

// How often a search judged a property, and how often (and why) it left it out.
struct Coverage {
  std::uint64_t judged = 0, left_out = 0;
  std::map<std::string, std::uint64_t> why;  // reason -> runs
};

struct GenerateResult {
  // none_found: every run held (a sample, not a proof). found: a failure (or livelock), shrunk.
  // limit: the time limit cut the runs short, nothing found.
  enum class Verdict : std::uint8_t { none_found, found, limit };
  Verdict verdict = Verdict::none_found;
  std::uint64_t runs = 0;  // scenarios generated and judged (by this shard)
  std::uint64_t failing_run = 0;  // which run failed (from 0)
  std::string original;  // the failing scenario as drawn
  std::string shrunk;    // the smallest that still fails the same way
  Judged judged;         // the shrunk scenario's judgement
  std::uint64_t shrink_steps = 0;   // shrinks taken
  std::uint64_t shrink_tries = 0;   // shrink candidates run
  bool shrink_cut = false;          // the time limit or max_shrinks stopped the shrinking
  int clients_before = 0, clients_after = 0;
  std::map<std::string, Coverage> coverage;  // by property, over the runs judged
  // Runs stopped at their total step budget with nothing decided against them: with none
  // found, the search is a bound (limit), not a pass.
  std::uint64_t cut_runs = 0;
  std::string first_cut;
  bool out_of_time = false;  // --time-limit stopped the drawing
};

const char* verdict_name(GenerateResult::Verdict verdict);

// The name of run `run`'s scenario under seed `seed`.
std::string generated_name(std::uint64_t seed, std::uint64_t run);

// Draws options.runs scenarios from options.seed, judges each, and shrinks the first failure.
// Throws sim::ScenarioError when an override is bad.
GenerateResult generate(const GenerateOptions& options);

// The clients a description connects.
int clients_of(const Description& description);

}  // namespace loopsim::explore
