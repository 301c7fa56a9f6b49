#include "sim/world.hpp"

#include <memory>
#include <optional>

#include "model/digest.hpp"
#include "model/scheduler.hpp"
#include "model/sim_kernel.hpp"
#include "base/assert.hpp"
#include "realloop/loop.hpp"
#include "sim/canonical.hpp"
#include "sim/monitors.hpp"
#include "sim/clients.hpp"
#include "sim/recorder.hpp"
#include "sim/schedules.hpp"
#include "sim/server.hpp"

namespace loopsim::sim {

namespace {

model::SimKernelConfig kernel_config(const KernelConfig& k) {
  model::SimKernelConfig config;
  config.poller = k.poller;
  config.somaxconn = k.somaxconn;
  config.rlimit_nofile = k.rlimit_nofile;
  config.file_max = k.file_max;
  config.abort_on_overflow = k.abort_on_overflow;
  config.timer_slack = k.timer_slack;
  config.send_buffer = std::size_t(k.send_buffer);
  config.send_buffer_max = std::size_t(k.send_buffer_max);
  config.receive_buffer = std::size_t(k.receive_buffer);
  return config;
}

}  // namespace

struct World::Impl {
  Impl(const Scenario& scenario, const std::string& arm, model::Chooser* chooser, bool symmetry,
       const ServerFactories& servers)
      : scenario(scenario),
        seeded(scenario.seed),
        recording(chooser != nullptr ? *chooser : seeded, scheduler, result.trace),
        kernel(scheduler, kernel_config(scenario.kernel)),
        clients(scheduler, kernel, result.trace, port_of(scenario), scenario.seed),
        recorder(scheduler, kernel, result.trace, clients),
        monitors(result.trace) {
    Trace& trace = result.trace;
    trace.keep = scenario.trace_keep;
    trace.scenario = scenario.name;
    trace.arm = arm;
    trace.seed = scenario.seed;
    trace.horizon = scenario.horizon;
    trace.accept_batch = scenario.loop.accept_batch;
    trace.max_connections = scenario.loop.max_connections;
    trace.workers = LoopLayout::of(scenario.loop, scenario.workers).loops;  // with the accept thread's
    scheduler.set_chooser(&recording);
    scheduler.explore_windows(recording.explores_windows());
    if (symmetry) {
      canonical.emplace(scenario, scheduler, kernel, clients);
      canonical->set_monitors(&monitors);
      scheduler.set_twins([this](const model::Tag& tag, std::uint64_t own) { return canonical->twin(tag, own); },
                          [this](const model::Tag& tag) { return canonical->twin_key(tag); },
                          [this] { return canonical->twin_key_epoch(); });
    }
    scheduler.set_commutes([this](const model::Tag& what, const model::Call& call) { return clients.commutes(what, call); });
    scheduler.set_shared_inputs([this] { return process ? process->shared_inputs(scheduler.now()) : 0; });
    if (scenario.target) {
      if (!servers.foreign) throw std::logic_error("sim::World: a target runs only in its own process");
      process = foreign_server(servers.foreign(scenario), scheduler, kernel, trace, clients);
      schedule_actions(scenario, scheduler, *process, trace);
      schedule_faults(scenario, scheduler, kernel, clients, trace);
      clients.schedule(scenario.clients);
      return;
    } else {
      if (servers.own_loop) process = own_loop_server(servers.own_loop, scenario, scheduler, kernel, recorder);
      else process = built_in_server(scenario, scheduler, kernel, recorder);
      schedule_posters(scenario, scheduler, kernel, *process, trace);
      schedule_actions(scenario, scheduler, *process, trace);
    }
    trace.listener_fd = process->listener();
    schedule_faults(scenario, scheduler, kernel, clients, trace);
    clients.schedule(scenario.clients);
    process->start();
  }

  const Scenario& scenario;
  RunResult result;
  model::SeededChooser seeded;
  model::Scheduler scheduler;
  RecordingChooser recording;
  model::SimKernel kernel;
  Clients clients;
  Recorder recorder;
  Monitors monitors;  // history properties' state, for a search (checker::watch)
  std::unique_ptr<Server> process;
  std::uint64_t steps = 0;
  bool finished = false;
  std::optional<ev::Lasso> lasso;
  // The last digest taken, by the horizon it was taken to: the scheduler's epoch then, its value
  // and whether anything was past the horizon. Never reused to key a state: each digest asked for
  // is taken afresh (a reuse never hit in measured searches, and one missed epoch would have
  // merged on a stale value). The audit's transcript and a replay's check read it, and compare.
  struct Taken {
    std::uint64_t epoch = ~std::uint64_t{0};
    std::optional<Instant> horizon;
    std::uint64_t value = 0;
    bool beyond = false;
  };
  mutable Taken digest_taken;

  std::uint64_t digest_of(std::optional<Instant> to, bool& beyond) const {
    struct Flag final : state::Clamp {
      void clamped(std::int64_t) override { any = true; }
      bool any = false;
    } flag;
    model::Digest digest;
    const state::Names* names = nullptr;
    if (canonical) {
      canonical->refresh();
      names = &*canonical;
    }
    state::visit([&digest](std::int64_t v) { digest.add(v); }, *this, scheduler.now(), names, nullptr, to, &flag);
    digest_taken = Taken{scheduler.epoch(), to, digest.value(), flag.any};
    LOOPSIM_ASSERT(!flag.any || to);  // only a digest up to a horizon clamps anything
    beyond = flag.any;
    return digest_taken.value;
  }
  // Interchangeable clients' canonical names (none without symmetry), for digests and twins.
  mutable std::optional<Canonical> canonical;

  // The world's state is its parts' (realloop/state.hpp). Skipped: the scenario (fixed); the
  // result, whose trace is history, not state (a search judges properties that read history
  // without merging states: explore/world_system.cpp); the choosers and the recorder (they
  // pass decisions and reports on); the step count, whether it finished, a liveness finding
  // and the last digest taken (bookkeeping).
  static constexpr auto state_fields = state::fields(
      state::f::reference("scenario"), state::f::skip<&Impl::result>, state::f::skip<&Impl::seeded>,
      state::f::value<&Impl::scheduler>, state::f::skip<&Impl::recording>, state::f::value<&Impl::kernel>,
      state::f::value<&Impl::clients>, state::f::skip<&Impl::recorder>, state::f::value<&Impl::monitors>,
      state::f::value<&Impl::process>, state::f::skip<&Impl::steps>, state::f::skip<&Impl::finished>,
      state::f::skip<&Impl::lasso>, state::f::skip<&Impl::digest_taken>,
      state::f::skip<&Impl::canonical>);
};

World::World(const Scenario& scenario, const std::string& arm, model::Chooser* chooser,
             bool symmetry, ServerFactories servers)
    : impl_(std::make_unique<Impl>(scenario, arm, chooser, symmetry, servers)) {}

World::~World() {
  if (!impl_->finished) finish();
}

bool World::step() {
  Impl& w = *impl_;
  LOOPSIM_ASSERT(!w.finished);  // a finished world's trace is gone; nothing steps it
  const Instant before = w.scheduler.now();
  if (!w.scheduler.step(w.scenario.horizon)) return false;
  // Time never goes back, and a step runs nothing at or past the horizon.
  LOOPSIM_ASSERT(w.scheduler.now() >= before && w.scheduler.now() < w.scenario.horizon);
  ++w.steps;
  return true;
}

Instant World::now() const { return impl_->scheduler.now(); }

const Trace& World::trace() const { return impl_->result.trace; }

std::size_t World::backlog() const {
  int listener = impl_->process->listener();
  return (listener < 0 ? 0 : impl_->kernel.backlog(listener)) + impl_->process->handoffs_pending();
}

std::uint64_t World::accepted() const { return impl_->recorder.accepts(); }

std::uint64_t World::digest() const {
  bool beyond = false;
  return impl_->digest_of(std::nullopt, beyond);
}

std::uint64_t World::horizon_digest(bool& beyond) const { return impl_->digest_of(impl_->scenario.horizon, beyond); }

std::optional<std::uint64_t> World::horizon_digest_kept(bool& beyond) const {
  const Impl& w = *impl_;
  if (w.digest_taken.epoch != w.scheduler.epoch() || w.digest_taken.horizon != w.scenario.horizon) return std::nullopt;
  beyond = w.digest_taken.beyond;
  return w.digest_taken.value;
}

std::uint64_t World::horizon_digest_afresh(bool& beyond) const {
  const Impl& w = *impl_;
  struct Flag final : state::Clamp {
    void clamped(std::int64_t) override { any = true; }
    bool any = false;
  } flag;
  model::Digest fresh;
  const state::Names* names = w.canonical ? &*w.canonical : nullptr;
  state::visit([&fresh](std::int64_t v) { fresh.add(v); }, w, w.scheduler.now(), names, nullptr, w.scenario.horizon,
               &flag);
  beyond = flag.any;
  return fresh.value();
}

void World::horizon_walk(state::Trail& trail, const std::function<void(std::int64_t)>& add) const {
  const Impl& w = *impl_;
  if (w.digest_taken.epoch != w.scheduler.epoch() || w.digest_taken.horizon != w.scenario.horizon) {
    throw std::logic_error("World::horizon_walk: no horizon digest taken at this step");
  }
  const state::Names* names = w.canonical ? &*w.canonical : nullptr;
  state::visit(add, w, w.scheduler.now(), names, &trail, w.scenario.horizon);
}

state::Transcript World::horizon_transcript() const {
  const Impl& w = *impl_;
  // The canonical names are the ones the digest just refreshed: refreshing them here would
  // allocate into the world's memory from outside it.
  if (w.digest_taken.epoch != w.scheduler.epoch() || w.digest_taken.horizon != w.scenario.horizon) {
    throw std::logic_error("World::horizon_transcript: no horizon digest taken at this step");
  }
  state::Transcript out;
  const state::Names* names = w.canonical ? &*w.canonical : nullptr;
  state::visit([&out](std::int64_t v) { out.add(v); }, w, w.scheduler.now(), names, &out, w.scenario.horizon);
  // What it wrote must be what the digest read (but for a component the digest-drop test
  // leaves out of the digest alone): a state changed since then without a new epoch would be
  // keyed by a state it no longer is.
  if (state::dropped_for_tests == nullptr) {
    model::Digest again;
    for (std::int64_t v : out.values()) again.add(v);
    if (again.value() != w.digest_taken.value) {
      throw std::logic_error("World::horizon_transcript: the state changed since this step's digest was taken");
    }
  }
  return out;
}

bool World::declares_state() const { return impl_->process->declares_state(); }

std::vector<std::pair<std::string, bool>> World::digest_parts() {
  std::vector<std::pair<std::string, bool>> out;
  for (const state::Field* f : state::field_list<Impl>()) out.emplace_back(f->name, f->policy != state::Policy::skip);
  return out;
}

bool World::change_part_for_tests(const std::string& name) {
  Impl& w = *impl_;
  w.digest_taken = Impl::Taken{};  // a change from outside any step: the scheduler does not see it
  if (name == "scheduler") {
    w.scheduler.at(w.scheduler.now() + Duration(1), [] {}, model::Tag{model::Happening::scripted, 0});
  } else if (name == "kernel") {
    w.kernel.set_rlimit_nofile(w.kernel.descriptor_limit() + 1);
  } else if (name == "clients") {
    static const std::vector<ClientGroup> one = [] {
      ClientGroup g;
      g.name = "extra";
      g.connect_at = model::at_instant(Instant{Duration(1)});
      return std::vector<ClientGroup>{g};
    }();
    w.clients.schedule(one);
  } else if (name == "monitors") {
    w.monitors.watch_latency(w.result.trace.groups.empty() ? "" : w.result.trace.groups.front(), 1);
  } else if (name == "process") {
    w.process->post(0, [] {}, 1);
  } else {
    return false;
  }
  return true;
}

bool World::at_rest() const { return impl_->scheduler.at_rest(); }

bool World::quiescent() const { return impl_->scheduler.idle(); }

bool World::stalled() const { return impl_->kernel.stalled(); }

Monitors& World::monitors() { return impl_->monitors; }

void World::digests_unused() { impl_->scheduler.digests_unused(); }

void World::abandon() {
  Impl& w = *impl_;
  if (w.finished) return;
  w.finished = true;
  if (!w.process->unwinds()) {  // its process ends instead (see finish)
    (void)w.process.release();
    return;
  }
  w.scheduler.unwind();  // the loops' stacks go before the loops themselves
  w.process.reset();
  w.finished = true;
}

void World::note(const ev::Lasso& lasso) { impl_->lasso = lasso; }

std::size_t World::trace_events() const { return impl_->result.trace.events.size(); }

RunResult World::stop_short(const std::string& why, bool stalled, bool liveness_watched, bool unwind) {
  Impl& w = *impl_;
  LOOPSIM_ASSERT(!w.finished && !why.empty());  // a run cut short says why
  if (w.lasso) w.result.trace.add(*w.lasso);
  w.result.trace.cut = why;
  w.result.trace.stalled = stalled;
  w.result.trace.liveness_watched = liveness_watched;
  w.result.stats = stats_of(w.result.trace, w.process->passes(), w.steps);
  w.result.stats.virtual_time = since_start(w.scheduler.now());
  if (!w.result.trace.keeps<ev::Accept>()) w.result.stats.accepted = w.recorder.accepts();
  RunResult out = std::move(w.result);
  if (unwind) abandon();
  else w.finished = true;
  return out;
}

RunResult World::finish(bool unwind) {
  Impl& w = *impl_;
  LOOPSIM_ASSERT(!w.finished);
  w.scheduler.run_until(w.scenario.horizon);  // what step() has not run yet
  LOOPSIM_ASSERT_OP(since_start(w.scheduler.now()).count(), ==, since_start(w.scenario.horizon).count());  // the run reached its end
  w.clients.report_unframed();
  w.clients.report_left();
  if (w.lasso) w.result.trace.add(*w.lasso);
  w.result.trace.add(w.process->end_state());
  w.result.stats = stats_of(w.result.trace, w.process->passes(), w.steps);
  // A trace that keeps less may lack the accepts: the loop's observer counted them anyway.
  if (!w.result.trace.keeps<ev::Accept>()) w.result.stats.accepted = w.recorder.accepts();
  w.finished = true;
  if (!unwind) return std::move(w.result);
  if (!w.process->unwinds()) {
    // Its process ends after the trace is out: nothing unwinds the target's C frames.
    (void)w.process.release();
    return std::move(w.result);
  }
  w.scheduler.unwind();  // the loops' stacks go before the loops themselves
  w.process.reset();
  return std::move(w.result);
}

}  // namespace loopsim::sim
