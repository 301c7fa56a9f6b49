// One run of a scenario: the simulated kernel, the real loop on a simulated thread, and the
// client agents, in virtual time up to the scenario's horizon.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>

#include <functional>

#include "model/choice.hpp"
#include "realloop/config.hpp"
#include "realloop/kernel.hpp"
#include "realloop/observer.hpp"
#include "realloop/state.hpp"
#include "scenario/scenario.hpp"
#include "trace/trace.hpp"

namespace loopsim::model {
class Scheduler;
class SimKernel;
class Digest;
}  // namespace loopsim::model

namespace loopsim::sim {

struct RunStats {
  std::uint64_t passes = 0;
  std::uint64_t accepted = 0;
  std::uint64_t answered = 0;
  std::uint64_t refused = 0;
  std::uint64_t steps = 0;  // scheduler steps taken
  Duration virtual_time{0};
  // A target that ended before the run did (its trace's process_exit): its status, when, and
  // the last line it wrote to stderr.
  std::optional<int> exit_status;
  int exit_signal = 0;  // the signal whose default action ended it, or 0
  Instant exited_at{};
  std::string last_stderr;
};

struct RunResult {
  Trace trace;
  RunStats stats;
};

// A trace's accepted, answered and refused counts, with the passes and steps given.
RunStats stats_of(const Trace& trace, std::uint64_t passes, std::uint64_t steps);
// "the target exited with status 1 at 12.0 ms of virtual time (its last line on stderr: ...)",
// for a run whose target ended before it did.
std::string exit_text(const RunStats& stats);

class Clients;
class Monitors;

// A server other than the built-in loop: a target program (a scenario's [target]). It lives in
// the target's own process, on the far side of the POSIX seam (posix/), which installs it
// before any World is made; the trace of what it did is recorded from the kernel's side.
class ForeignServer {
 public:
  virtual ~ForeignServer() = default;
  // Starts the program's thread on `scheduler`.
  virtual void start(model::Scheduler& scheduler, model::SimKernel& kernel, Trace& trace,
                     const Clients& clients) = 0;
  // The kernel's descriptor of the listener on the target's port, or -1 before it listens.
  virtual int listener() const = 0;
  virtual std::uint64_t passes() const = 0;  // waits for events
  // The program has reached its first wait (or ended): it is up, as the built-in loop is once
  // made. A run lets it start before anything else happens at time 0.
  virtual bool settled() const = 0;
  virtual std::int64_t open_connections() const = 0;
  // The program's memory is not part of a state digest: only what the kernel holds for it.
  virtual void digest(model::Digest&) const {}
  // A signal reaches the program (a scenario's [[actions]]), from the scheduler's stack.
  virtual void signal(int /*signal*/) {}
};
using ForeignFactory = std::function<std::unique_ptr<ForeignServer>(const Scenario&)>;

// A loop of your own in place of the built-in one, written against loopsim::Kernel
// (realloop/kernel.hpp) as realloop::Loop is. A run makes it with the simulated kernel, the
// observer whose calls become the trace the properties judge (realloop/observer.hpp: report
// passes, accepts, batches, requests and closes there), and the scenario's [loop] keys, which
// it may honour or ignore. It runs on one simulated thread; live, the same class runs over
// live::LinuxKernel. One worker, no pool, no inverted mode.
class OwnLoop {
 public:
  virtual ~OwnLoop() = default;
  // Opens the listener and whatever else the loop needs before its first client. Returns the
  // listener's descriptor, or -errno: the run then cannot start, and says so.
  virtual int open(const ListenSpec& spec) = 0;
  // The loop itself, on its own thread, until a shutdown has run its course.
  virtual void run() = 0;
  // A scenario's shutdown action (R5), from outside the loop's thread, as a signal handler
  // calls it live: set a flag and signal a wake object.
  virtual void shutdown() = 0;
  // Posts (a scenario's [[posters]], R7): a loop that takes them runs each task on its thread.
  virtual bool takes_posts() const { return false; }
  virtual void post(std::function<void()> /*task*/) {}
  virtual std::size_t connections() const = 0;  // held now
  virtual std::uint64_t passes() const = 0;     // waits so far
  // Its state, for a search's digests. A loop that does not declare it is searched without
  // merging any two states (each state is its path), and the search says so. One that does
  // feeds every field that tells two of its states apart, with times relative to `now`, and
  // keeps nothing else across a wait: every Kernel::wait is a rest point, where nothing but its
  // declared state carries over (model::Scheduler::rest). It also reports what another thread
  // or a scenario's post or shutdown writes that it reads without a kernel call.
  virtual bool declares_state() const { return false; }
  virtual void digest_state(state::Sink&, Instant) const {}
  virtual std::uint64_t shared_inputs(Instant) const { return 0; }
};
using OwnLoopFactory = std::function<std::unique_ptr<OwnLoop>(Kernel&, LoopObserver&, const LoopConfig&)>;

// What a World runs as its server, given to it when it is made (never installed process-wide):
// - neither: the built-in loop (realloop::Loop), or, for a scenario with a [target], nothing a
//   World can run in this process (sim::run then starts the program: sim::run_target);
// - own_loop: a loop of your own for a scenario without a [target]. Its own state is in the
//   World's digest only if it declares it (OwnLoop::declares_state);
// - foreign: inside a target's process, the program itself (posix/host.cpp).
struct ServerFactories {
  OwnLoopFactory own_loop;
  ForeignFactory foreign;
};

// One run, a step at a time, for the explorer. Everything is set up at construction; step()
// runs the next scheduled happening before the horizon; finish() runs what is left to the
// horizon and hands over the trace.
class World {
 public:
  // `symmetry`: same-instant happenings of interchangeable clients are one alternative of an
  // order choice (model::TwinClass); false offers each on its own, for measuring what that saves.
  World(const Scenario& scenario, const std::string& arm, model::Chooser* chooser,
        bool symmetry = true, ServerFactories servers = {});
  World(const World&) = delete;
  World& operator=(const World&) = delete;
  ~World();

  bool step();  // false once nothing is due before the horizon
  Instant now() const;
  // The state: simulated kernel, loops, clients and pending work, with times relative to now.
  // Equal states give equal digests, so an idle loop's ticks form cycles.
  std::uint64_t digest() const;
  // The same up to the horizon: a time still to come at or past it (a deadline, a pending
  // happening, a window's end) is fed as only that, since nothing there happens. `beyond` says
  // whether anything was. Two states with equal horizon digests at one instant end alike.
  std::uint64_t horizon_digest(bool& beyond) const;
  // The same taken again, past the cache kept for the step (its epoch), and allocating nothing
  // in the world: the explorer checks with it, from outside the world's arena, that a restored
  // world is the state it saved. The canonical names are those the last digest refreshed.
  std::uint64_t horizon_digest_afresh(bool& beyond) const;
  // The digest horizon_digest() keeps for this step, if it was taken at it: what a restore
  // brings back with the state (none otherwise; nothing is computed).
  std::optional<std::uint64_t> horizon_digest_kept(bool& beyond) const;
  // The walk horizon_digest() took, value by value, with `trail` following it: for the
  // digest-drop test, which finds the values each component holds. The same conditions as
  // horizon_transcript().
  void horizon_walk(state::Trail& trail, const std::function<void(std::int64_t)>& add) const;
  // What horizon_digest() hashed, value by value with each value's field, for a digest audit.
  // Allocates nothing in the world: it may be taken from outside an arena the world lives in,
  // right after horizon_digest() at the same step (throws std::logic_error otherwise).
  state::Transcript horizon_transcript() const;
  // Whether the server declares its state (an own loop may not, a target program cannot): a
  // search merges states only where it does.
  bool declares_state() const;
  // Every simulated thread is blocked at a rest point, or finished (model::Scheduler::at_rest).
  bool at_rest() const;
  // Connections waiting in the listener's accept queue or in a hand-off channel.
  std::size_t backlog() const;
  // Connections the loops accepted so far.
  std::uint64_t accepted() const;
  const Trace& trace() const;
  // True when nothing at all is scheduled: whatever waits, waits forever.
  bool quiescent() const;
  // The kernel parked a thread that made calls without end at one instant (SimKernel::stalled).
  bool stalled() const;
  // No digest of this world's states will be taken (a run that watches no lasso): the threads'
  // contexts then leave out the process's shared inputs, which cost a digest a kernel call.
  // Contexts are only ever digested, so nothing the run does changes.
  void digests_unused();
  // The monitors of the properties a search judges by history kept as state
  // (sim/monitors.hpp, checker::watch): what they watch joins the digest, and the search may
  // merge states as it does for properties a state decides. Watched before the first step.
  Monitors& monitors();
  // Adds a liveness finding to the trace, before the run's end.
  void note(const ev::Lasso& lasso);
  // Runs what is left to the horizon and hands over the trace. With `unwind` false the threads'
  // stacks are left as they are: the world's memory is about to be dropped or restored whole
  // (explore/arena.hpp), and it must not be used again.
  RunResult finish(bool unwind = true);
  // Ends the run where it is and hands over the trace so far, cut (Trace::cut = `why`;
  // Trace::stalled: because time stood still): no end state is added, so the properties that
  // need one are undecided.
  // `unwind` as for finish().
  RunResult stop_short(const std::string& why, bool stalled, bool liveness_watched, bool unwind = true);
  // Ends the run where it is, without running to the horizon (a run that makes no virtual
  // progress never gets there): the simulated threads unwind, and the trace so far is lost.
  void abandon();
  // Events in the trace so far.
  std::size_t trace_events() const;

  // The parts the world's digest is made of, each with whether it takes part (its policy in
  // World::Impl's declaration), for the test that no part is left out.
  static std::vector<std::pair<std::string, bool>> digest_parts();
  // Changes part `name` of the world a little (what a test of the digest perturbs): false for
  // a part it cannot change.
  bool change_part_for_tests(const std::string& name);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The most events one run's trace may hold (about 100 bytes each): a legal scenario can ask for
// more (a 1 ns idle timeout over 20 s is 2e10 passes), and is stopped there.
inline constexpr std::size_t trace_events_max = 10'000'000;
// The most scheduler steps a run may take at one virtual instant: past it, time stands still
// (nothing the loop does lets the clock move), and the run is a livelock.
inline constexpr std::uint64_t still_steps_max = 1'000'000;

// The choices a trace recorded, in order: replaying them repeats the run.
std::vector<model::Choice> choices_of(const Trace& trace);

}  // namespace loopsim::sim
