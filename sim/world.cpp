#include "sim/world.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <system_error>
#include <unordered_map>

#include "model/digest.hpp"
#include "model/scheduler.hpp"
#include "model/sim_kernel.hpp"
#include "base/assert.hpp"
#include "realloop/loop.hpp"
#include "realloop/pool.hpp"
#include "sim/canonical.hpp"
#include "sim/clients.hpp"
#include "sim/workload.hpp"

namespace loopsim::sim {

namespace {

constexpr std::uint16_t service_port = 80;

std::uint16_t port_of(const Scenario& scenario) {
  return scenario.target ? std::uint16_t(scenario.target->port) : service_port;
}

// Records what the loop reports as trace events, naming the client behind each descriptor.
class Recorder final : public LoopObserver {
 public:
  Recorder(model::Scheduler& scheduler, const model::SimKernel& kernel, Trace& trace, const Clients& clients)
      : scheduler_(scheduler), kernel_(kernel), trace_(trace), clients_(clients) {}

  void pass_begin(int worker, std::uint64_t pass, Nanos timeout) override {
    record(ev::PassBegin{now(), worker, pass, timeout});
  }
  void events(int worker, std::uint64_t pass, std::span<const PollEvent> events) override {
    if (!trace_.keeps<ev::Events>()) return;
    ev::Events e{now(), worker, pass, {}, std::int64_t(kernel_.work_before_wait(scheduler_.current()))};
    e.fds.reserve(events.size());
    for (const PollEvent& event : events) e.fds.push_back(event.fd);
    record(std::move(e));
  }
  void accepted(int worker, Door door, int result) override {
    if (result >= 0) ++accepts_;
    record(ev::Accept{now(), worker, door, result, result >= 0 ? clients_.client_of(result) : no_client});
  }
  void batch_end(int worker, Door door, int accepted, BatchStop stop, bool owed) override {
    record(ev::BatchEnd{now(), worker, door, accepted, stop, owed});
  }
  void request_begin(int worker, int fd, std::string_view path) override {
    record(ev::RequestBegin{now(), worker, fd, clients_.client_of(fd), std::string(path)});
  }
  void request_end(int worker, int fd, int status) override {
    record(ev::RequestEnd{now(), worker, fd, clients_.client_of(fd), status});
  }
  void closed(int worker, int fd) override {
    record(ev::Close{now(), worker, fd, clients_.client_of(fd)});
  }
  void pass_end(int worker, std::uint64_t pass, bool accept_owed, bool handoff_owed) override {
    record(ev::PassEnd{now(), worker, pass, accept_owed, handoff_owed});
  }
  void posts_drained(int worker, DrainPoint point, int count) override {
    record(ev::Drain{now(), worker, point, count});
  }
  void refused(int worker, int fd) override {
    record(ev::Refuse{now(), worker, fd, clients_.client_of(fd)});
  }
  void backpressured(int worker, int held) override {
    record(ev::Backpressure{now(), worker, held});
  }
  void shutdown_begin(int worker) override { record(ev::ShutdownBegin{now(), worker}); }
  void listener_closed(int worker) override { record(ev::ListenerClosed{now(), worker}); }
  void loop_exit(int worker, int open_connections) override {
    record(ev::LoopExit{now(), worker, open_connections});
  }
  void handed_off(int worker, int to, int fd) override {
    record(ev::Handoff{now(), worker, to, clients_.client_of(fd)});
  }

 private:
  Nanos now() const { return scheduler_.now(); }
  void record(TraceEvent event) { trace_.add(std::move(event)); }

 public:
  std::uint64_t accepts() const { return accepts_; }

 private:
  std::uint64_t accepts_ = 0;
  model::Scheduler& scheduler_;
  const model::SimKernel& kernel_;
  Trace& trace_;
  const Clients& clients_;
};

// Passes each decision on, and writes it into the trace.
class RecordingChooser final : public model::Chooser {
 public:
  RecordingChooser(model::Chooser& inner, const model::Scheduler& scheduler, Trace& trace)
      : inner_(inner), scheduler_(scheduler), trace_(trace) {}
  std::uint32_t choose(model::ChoiceKind kind, std::uint32_t options) override {
    std::uint32_t pick = inner_.choose(kind, options);
    trace_.add(ev::Choice{scheduler_.now(), std::uint8_t(kind), options, pick});
    return pick;
  }
  bool explores_windows() const override { return inner_.explores_windows(); }

 private:
  model::Chooser& inner_;
  const model::Scheduler& scheduler_;
  Trace& trace_;
};

void schedule_faults(const Scenario& scenario, model::Scheduler& scheduler,
                     model::SimKernel& kernel, Clients& clients, Trace& trace) {
  for (std::uint32_t i = 0; i < scenario.faults.size(); ++i) {
    const FaultSpec& f = scenario.faults[i];
    Nanos at = drawn_instant(f.at, scenario.seed, draw_salt(Drawn::fault, i));
    switch (f.kind) {
      case FaultSpec::Kind::accept_error: {
        // Searched, a window's failing accepts begin where its opening lands.
        bool lands = scheduler.windows_explored() && !f.at.fixed() && f.nth == 0;
        std::size_t index = kernel.add_accept_fault(model::AcceptFault{f.error, f.nth, lands ? f.until : at, f.until, std::uint32_t(f.count)});
        if (lands) {
          scheduler.at(f.at, at, [&kernel, index] { kernel.open_accept_fault(index); },
                       model::Tag{model::Happening::accept_fault, i});
        }
        break;
      }
      case FaultSpec::Kind::rlimit:
        scheduler.at(f.at, at, [&scheduler, &kernel, &trace, value = f.value] {
          kernel.set_rlimit_nofile(value);
          trace.add(ev::Rlimit{scheduler.now(), value});
        }, model::Tag{model::Happening::rlimit, i});
        break;
      case FaultSpec::Kind::reset:
        scheduler.at(f.at, at, [&clients, of = f.of, count = f.count] { clients.reset_group(of, count); },
                     model::Tag{model::Happening::reset_group, i});
        break;
    }
  }
}

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

RunStats stats_of(const Trace& trace, std::uint64_t passes, std::uint64_t steps) {
  RunStats stats;
  stats.passes = passes;
  stats.steps = steps;
  stats.virtual_time = trace.horizon;
  for (const TraceEvent& event : trace.events) {
    if (auto* a = std::get_if<ev::Accept>(&event); a != nullptr && a->result >= 0) ++stats.accepted;
    if (std::holds_alternative<ev::Answer>(event)) ++stats.answered;
    if (std::holds_alternative<ev::Refused>(event)) ++stats.refused;
    if (auto* x = std::get_if<ev::ProcessExit>(&event)) {
      stats.exit_status = x->status;
      stats.exited_at = x->t;
    }
  }
  return stats;
}

std::string exit_text(const RunStats& stats) {
  if (!stats.exit_status) return {};
  char at[48];
  std::snprintf(at, sizeof at, "%.1f ms", double(stats.exited_at.count()) / 1e6);
  std::string text = "the target exited with status " + std::to_string(*stats.exit_status) + " at " + at +
                     " of virtual time, before the run's horizon";
  if (!stats.last_stderr.empty()) text += " (its last line on stderr: \"" + stats.last_stderr + "\")";
  return text;
}

std::vector<model::Choice> choices_of(const Trace& trace) {
  std::vector<model::Choice> out;
  for (const TraceEvent& event : trace.events) {
    if (auto* c = std::get_if<ev::Choice>(&event)) {
      out.push_back(model::Choice{model::ChoiceKind(c->kind), c->options, c->pick});
    }
  }
  return out;
}

namespace {

// A configuration whose server cannot even start (out of descriptors before the first client):
// bad input, at the first of `keys` the file set.
[[noreturn]] void cannot_start(const Scenario& scenario, std::initializer_list<const char*> keys,
                               const std::string& why) {
  throw ScenarioError(scenario.position_of(keys) + ": the server cannot start: " + why,
                      "each worker needs a poller, a wake-up and the listener, and each pool thread a poller "
                      "and a wake-up, before any client connects: raise kernel.rlimit_nofile and kernel.file_max, "
                      "or ask for fewer");
}

// The run's end as the kernel sees it: what waits on the listener (none before it listens), and
// the descriptors open, less stdio; the server says what it holds.
ev::RunEnd run_end(const model::Scheduler& scheduler, const model::SimKernel& kernel, int listener,
                   std::int64_t open_connections, std::int64_t handoffs) {
  ev::RunEnd end{scheduler.now(), listener < 0 ? 0 : std::int64_t(kernel.backlog(listener)), open_connections, handoffs, 0};
  end.open_descriptors = std::int64_t(kernel.open_descriptors()) - 3;
  return end;
}

// The server under test, as the run sees it: the built-in loop (Process, below), or a target
// program on the far side of the POSIX seam (ForeignServer).
class Server {
 public:
  virtual ~Server() = default;
  virtual void start() = 0;
  virtual int listener() const = 0;  // the kernel's descriptor, or -1 before the server listens
  virtual std::size_t handoffs_pending() const = 0;
  // The server's state, times relative to now (for the world's digest). Only a server that
  // declares its state has one: a search merges no states of one that does not.
  virtual bool declares_state() const = 0;
  virtual void digest_state(state::Sink& sink, Nanos now) const = 0;
  // What its threads read without a kernel call that others write (model::Scheduler::learn).
  virtual std::uint64_t shared_inputs(Nanos /*now*/) const { return 0; }
  virtual ev::RunEnd end_state() = 0;
  virtual std::uint64_t passes() const = 0;
  // Whether the threads' stacks may be unwound at the end. A foreign program's frames are C
  // code that no exception may cross; its process ends instead.
  virtual bool unwinds() const { return true; }
  // A scenario's posts and shutdowns (schedule_posters, schedule_actions).
  virtual void post(int /*worker*/, std::function<void()> /*task*/, std::uint64_t /*what*/) {}
  virtual void shutdown() {}
  // The built-in loop stops on SIGTERM and SIGINT (the loader refuses it the others).
  virtual void signal(int signal) {
    if (stopping_signal(signal)) shutdown();
  }
};

class Foreign final : public Server {
 public:
  Foreign(std::unique_ptr<ForeignServer> server, model::Scheduler& scheduler, model::SimKernel& kernel,
          Trace& trace, const Clients& clients)
      : server_(std::move(server)), scheduler_(scheduler), kernel_(kernel), trace_(trace), clients_(clients) {}
  void start() override { server_->start(scheduler_, kernel_, trace_, clients_); }
  bool settled() const { return server_->settled(); }
  int listener() const override { return server_->listener(); }
  std::size_t handoffs_pending() const override { return 0; }
  // The program's memory is not in the digest: its states are told apart by the path to them
  // (explore/world_system.cpp), never merged.
  bool declares_state() const override { return false; }
  void digest_state(state::Sink&, Nanos) const override {}
  ev::RunEnd end_state() override { return run_end(scheduler_, kernel_, listener(), server_->open_connections(), 0); }
  std::uint64_t passes() const override { return server_->passes(); }
  bool unwinds() const override { return false; }
  void shutdown() override { server_->signal(15); }  // SIGTERM, as a service manager sends
  void signal(int signal) override { server_->signal(signal); }

 private:
  std::unique_ptr<ForeignServer> server_;
  model::Scheduler& scheduler_;
  model::SimKernel& kernel_;
  Trace& trace_;
  const Clients& clients_;
};

// A loop of the user's own (ServerFactories::own_loop), on one simulated thread.
class Own final : public Server {
 public:
  Own(const OwnLoopFactory& make, const Scenario& scenario, model::Scheduler& scheduler, model::SimKernel& kernel,
      LoopObserver& observer)
      : scheduler_(scheduler), kernel_(kernel) {
    if (scenario.workers != 1 || scenario.loop.mode == HandlerMode::pool || scenario.loop.inverted) {
      throw ScenarioError(scenario.position_of({"loop.workers", "loop.mode", "loop.inverted"}) +
                              ": an own loop (sim::ServerFactories::own_loop) runs one worker, inline",
                          "leave loop.workers, loop.mode and loop.inverted at their defaults");
    }
    loop_ = make(kernel, observer, scenario.loop);
    if (!scenario.posters.empty() && !loop_->takes_posts()) {
      throw ScenarioError(scenario.position_of({"posters"}) + ": this loop takes no posts (OwnLoop::takes_posts)",
                          "leave out [[posters]], or give the loop a post()");
    }
    listener_ = loop_->open(ListenSpec{"127.0.0.1", service_port, scenario.kernel.listen_backlog});
    if (listener_ < 0) {
      cannot_start(scenario, {"kernel.rlimit_nofile", "kernel.file_max"},
                   std::string("the loop could not open its listener: ") + errno_name(-listener_));
    }
  }
  void start() override { scheduler_.spawn("worker-0", [this] { loop_->run(); }); }
  int listener() const override { return listener_; }
  std::size_t handoffs_pending() const override { return 0; }
  bool declares_state() const override { return loop_->declares_state(); }
  void digest_state(state::Sink& sink, Nanos now) const override { loop_->digest_state(sink, now); }
  std::uint64_t shared_inputs(Nanos now) const override { return loop_->shared_inputs(now); }
  ev::RunEnd end_state() override {
    return run_end(scheduler_, kernel_, listener_, std::int64_t(loop_->connections()), 0);
  }
  std::uint64_t passes() const override { return loop_->passes(); }
  void post(int, std::function<void()> task, std::uint64_t) override { loop_->post(std::move(task)); }
  void shutdown() override { loop_->shutdown(); }

 private:
  model::Scheduler& scheduler_;
  model::SimKernel& kernel_;
  std::unique_ptr<OwnLoop> loop_;
  int listener_ = -1;
};

// The simulated process: its worker loops, its handler pool, and the threads they run on.
class Process final : public Server {
 public:
  Process(const Scenario& scenario, model::Scheduler& scheduler, model::SimKernel& kernel,
          LoopObserver& observer)
      : scenario_(scenario), scheduler_(scheduler), kernel_(kernel) {
    const LoopLayout layout = LoopLayout::of(scenario.loop, scenario.workers);
    std::vector<Loop*> loops;
    for (int i = 0; i < layout.loops; ++i) {
      loops_.push_back(std::make_unique<Loop>(kernel, scenario.loop, observer, i));
      loops.push_back(loops_.back().get());
    }
    int failed = 0;
    const int rc = layout.open(loops, ListenSpec{"127.0.0.1", service_port, scenario.kernel.listen_backlog}, group_, failed);
    if (rc < 0) {
      cannot_start(scenario, {"kernel.rlimit_nofile", "kernel.file_max", "loop.workers"},
                   "worker " + std::to_string(failed) + " could not open its poller and listener: " + errno_name(-rc));
    }
    acceptor_ = layout.acceptor;
    if (scenario.loop.mode == HandlerMode::pool) {
      try {
        pool_ = std::make_unique<HandlerPool>(kernel, scenario.loop.pool_threads);
      } catch (const std::system_error& e) {
        cannot_start(scenario, {"loop.pool_threads", "kernel.rlimit_nofile", "kernel.file_max", "loop.mode"},
                     std::string(e.what()) + " (" + errno_name(e.code().value()) + ")");
      }
      for (auto& loop : loops_) loop->use_pool(*pool_);
    }
  }

  void start() override {
    for (auto& loop : loops_) {
      Loop* l = loop.get();
      std::string name = l->accept_only() ? "acceptor" : "worker-" + std::to_string(l->worker());
      if (scenario_.loop.inverted) {
        scheduler_.spawn(name, [this, l] { drive_inverted(*l); });
      } else {
        scheduler_.spawn(name, [l] { l->run(); });
      }
    }
    for (int i = 0; pool_ && i < pool_->threads(); ++i) {
      scheduler_.spawn("pool-" + std::to_string(i), [this, i] { pool_->run_thread(i); });
    }
  }

  // R6: the outside scheduler runs a pass when the loop's poller is readable, and on a 1 Hz tick.
  void drive_inverted(Loop& loop) {
    int outer = kernel_.poller_create();
    LOOPSIM_ASSERT_OP(kernel_.watch(outer, loop.poller(), io::readable, Trigger::level), ==, 0);
    PollEvent event[1];
    while (!loop.finished()) {
      kernel_.wait(outer, event, std::chrono::seconds(1));
      loop.run_pass_once();
    }
  }

  void post(int worker, std::function<void()> task, std::uint64_t what) override {
    loops_.at(std::size_t(worker))->post(std::move(task), what);
  }
  bool declares_state() const override { return true; }
  void digest_state(state::Sink& sink, Nanos now) const override { state::visit_into(sink, *this, now); }
  std::uint64_t shared_inputs(Nanos now) const override {
    std::uint64_t value = 0;
    auto add = [&value](std::int64_t v) { value = state::fold(value, std::uint64_t(v)); };
    for (const auto& loop : loops_) loop->visit_shared(add, now);
    if (pool_) pool_->visit_shared(add, now);
    return value;
  }
  int listener() const override { return loops_.at(std::size_t(acceptor_))->listener(); }
  std::size_t handoffs_pending() const override {
    std::size_t n = 0;
    for (const auto& loop : loops_) n += loop->handoffs_pending();
    return n;
  }
  void shutdown() override {
    for (auto& loop : loops_) loop->shutdown(scheduler_.now());
  }

  ev::RunEnd end_state() override {
    std::int64_t open = 0, handoffs = 0;
    for (auto& loop : loops_) {
      open += std::int64_t(loop->connections());
      handoffs += std::int64_t(loop->handoffs_pending());
    }
    return run_end(scheduler_, kernel_, listener(), open, handoffs);
  }
  std::uint64_t passes() const override {
    std::uint64_t n = 0;
    for (const auto& loop : loops_) n += loop->passes();
    return n;
  }

 private:
  const Scenario& scenario_;
  model::Scheduler& scheduler_;
  model::SimKernel& kernel_;
  WorkerGroup group_;
  std::vector<std::unique_ptr<Loop>> loops_;  // the workers, then the accept thread's loop (R10)
  int acceptor_ = 0;                          // the loop that listens
  std::unique_ptr<HandlerPool> pool_;

 public:
  // Skipped: the scenario and the acceptor (fixed), the scheduler and kernel (the world's,
  // digested there).
  static constexpr state::Fields<7> state_fields{
      state::f::skip("scenario_"), state::f::skip("scheduler_"), state::f::skip("kernel_"),
      state::f::value("group_"),   state::f::value("loops_"),    state::f::skip("acceptor_"),
      state::f::value("pool_")};
  friend struct state::Access;
};

void schedule_posters(const Scenario& scenario, model::Scheduler& scheduler, model::SimKernel& kernel,
                      Server& process, Trace& trace) {
  auto next_id = std::make_shared<std::int64_t>(0);
  for (std::uint32_t p = 0; p < scenario.posters.size(); ++p) {
    const PosterSpec& poster = scenario.posters[p];
    LOOPSIM_ASSERT_OP(poster.worker, <, scenario.workers);
    for (int i = 0; i < poster.count; ++i) {
      Window at = poster.at.shifted(poster.every * i);
      Nanos drawn = drawn_instant(at, scenario.seed, draw_salt(Drawn::post, p, i));
      // The post's number only names it in the trace; what it does is its poster's.
      scheduler.at(at, drawn, [&, poster, next_id, p] {
        std::int64_t id = (*next_id)++;
        trace.add(ev::Post{scheduler.now(), id, poster.name});
        process.post(poster.worker, [&, id, poster] {
          trace.add(ev::PostRun{scheduler.now(), poster.worker, id});
          kernel.spend(poster.cost);
        }, p + 1);
      }, model::Tag{model::Happening::post, p});
    }
  }
}

void schedule_actions(const Scenario& scenario, model::Scheduler& scheduler, Server& process, Trace& trace) {
  for (std::uint32_t a = 0; a < scenario.actions.size(); ++a) {
    const ActionSpec& action = scenario.actions[a];
    const Window& at = action.at;
    scheduler.at(at, drawn_instant(at, scenario.seed, draw_salt(Drawn::action, a)),
                 [&process, &trace, &scheduler, &action] {
                   const bool shutdown = action.kind == ActionSpec::Kind::shutdown;
                   if (shutdown || stopping_signal(action.signal)) trace.add(ev::ShutdownAsked{scheduler.now()});
                   if (shutdown) process.shutdown();
                   else process.signal(action.signal);
                 },
                 model::Tag{model::Happening::shutdown, a});
  }
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
        recorder(scheduler, kernel, result.trace, clients) {
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
      scheduler.set_twins([this](const model::Tag& tag, std::uint64_t own) { return canonical->twin(tag, own); },
                          [this](const model::Tag& tag) { return canonical->twin_key(tag); });
    }
    scheduler.set_commutes([this](const model::Tag& what, const model::Call& call) { return clients.commutes(what, call); });
    scheduler.set_shared_inputs([this] { return process ? process->shared_inputs(scheduler.now()) : 0; });
    if (scenario.target) {
      if (!servers.foreign) throw std::logic_error("sim::World: a target runs only in its own process");
      auto foreign = std::make_unique<Foreign>(servers.foreign(scenario), scheduler, kernel, trace, clients);
      // The program starts before the clients' time 0, as the built-in loop is made before it:
      // it runs until its first wait, or until it sleeps or ends.
      foreign->start();
      while (!foreign->settled() && scheduler.step(Nanos(1))) {
      }
      process = std::move(foreign);
      schedule_actions(scenario, scheduler, *process, trace);
      schedule_faults(scenario, scheduler, kernel, clients, trace);
      clients.schedule(scenario.clients);
      return;
    } else {
      if (servers.own_loop) process = std::make_unique<Own>(servers.own_loop, scenario, scheduler, kernel, recorder);
      else process = std::make_unique<Process>(scenario, scheduler, kernel, recorder);
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
  std::unique_ptr<Server> process;
  std::uint64_t steps = 0;
  bool finished = false;
  std::optional<ev::Lasso> lasso;
  mutable model::Digest digest;  // the buffer World::digest() fills, kept between steps
  // The last digest taken, by the horizon it was taken to: the scheduler's epoch then, its value
  // and whether anything was past the horizon (it holds until anything runs).
  struct Taken {
    std::uint64_t epoch = ~std::uint64_t{0};
    Nanos horizon{0};
    std::uint64_t value = 0;
    bool beyond = false;
  };
  mutable Taken digest_taken;

  std::uint64_t digest_of(Nanos to, bool& beyond) const {
    if (digest_taken.epoch == scheduler.epoch() && digest_taken.horizon == to) {
      beyond = digest_taken.beyond;
      return digest_taken.value;
    }
    struct Flag final : state::Clamp {
      void clamped(std::int64_t) override { any = true; }
      bool any = false;
    } flag;
    digest.clear();
    const state::Names* names = nullptr;
    if (canonical) {
      canonical->refresh();
      names = &*canonical;
    }
    state::visit([this](std::int64_t v) { digest.add(v); }, *this, scheduler.now(), names, nullptr, to, &flag);
    digest_taken = Taken{scheduler.epoch(), to, digest.value(), flag.any};
    beyond = flag.any;
    return digest_taken.value;
  }
  // Interchangeable clients' canonical names (none without symmetry), for digests and twins.
  mutable std::optional<Canonical> canonical;

  // The world's state is its parts' (realloop/state.hpp). Skipped: the scenario (fixed); the
  // result, whose trace is history, not state (a search judges properties that read history
  // without merging states: explore/world_system.cpp); the choosers and the recorder (they
  // pass decisions and reports on); the step count, whether it finished, a liveness finding
  // and the digest's buffer (bookkeeping).
  static constexpr state::Fields<15> state_fields{
      state::f::skip("scenario"),  state::f::skip("result"),  state::f::skip("seeded"),
      state::f::value("scheduler"), state::f::skip("recording"), state::f::value("kernel"),
      state::f::value("clients"),  state::f::skip("recorder"), state::f::value("process"),
      state::f::skip("steps"),     state::f::skip("finished"), state::f::skip("lasso"),
      state::f::skip("digest"),    state::f::skip("digest_taken"), state::f::skip("canonical")};
};

World::World(const Scenario& scenario, const std::string& arm, model::Chooser* chooser,
             bool symmetry, ServerFactories servers)
    : impl_(std::make_unique<Impl>(scenario, arm, chooser, symmetry, servers)) {}

World::~World() {
  if (!impl_->finished) finish();
}

bool World::step() {
  if (!impl_->scheduler.step(impl_->scenario.horizon)) return false;
  ++impl_->steps;
  return true;
}

Nanos World::now() const { return impl_->scheduler.now(); }

const Trace& World::trace() const { return impl_->result.trace; }

std::size_t World::backlog() const {
  int listener = impl_->process->listener();
  return (listener < 0 ? 0 : impl_->kernel.backlog(listener)) + impl_->process->handoffs_pending();
}

std::uint64_t World::accepted() const { return impl_->recorder.accepts(); }

std::uint64_t World::digest() const {
  bool beyond = false;
  return impl_->digest_of(Nanos(-1), beyond);
}

std::uint64_t World::horizon_digest(bool& beyond) const { return impl_->digest_of(impl_->scenario.horizon, beyond); }

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
  return out;
}

bool World::declares_state() const { return impl_->process->declares_state(); }

std::vector<std::pair<std::string, bool>> World::digest_parts() {
  std::vector<std::pair<std::string, bool>> out;
  for (const state::Field& f : Impl::state_fields) out.emplace_back(f.name, f.policy != state::Policy::skip);
  return out;
}

bool World::change_part_for_tests(const std::string& name) {
  Impl& w = *impl_;
  w.digest_taken = Impl::Taken{};  // a change from outside any step: the scheduler does not see it
  if (name == "scheduler") {
    w.scheduler.at(w.scheduler.now() + Nanos(1), [] {}, model::Tag{model::Happening::scripted, 0});
  } else if (name == "kernel") {
    w.kernel.set_rlimit_nofile(w.kernel.descriptor_limit() + 1);
  } else if (name == "clients") {
    static const std::vector<ClientGroup> one = [] {
      ClientGroup g;
      g.name = "extra";
      g.connect_at = Window{Nanos(1), Nanos(1)};
      return std::vector<ClientGroup>{g};
    }();
    w.clients.schedule(one);
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

void World::digests_unused() { impl_->scheduler.set_shared_inputs({}); }

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
  if (w.lasso) w.result.trace.add(*w.lasso);
  w.result.trace.cut = why;
  w.result.trace.stalled = stalled;
  w.result.trace.liveness_watched = liveness_watched;
  w.result.stats = stats_of(w.result.trace, w.process->passes(), w.steps);
  w.result.stats.virtual_time = w.scheduler.now();
  if (!w.result.trace.keeps<ev::Accept>()) w.result.stats.accepted = w.recorder.accepts();
  RunResult out = std::move(w.result);
  if (unwind) abandon();
  else w.finished = true;
  return out;
}

RunResult World::finish(bool unwind) {
  Impl& w = *impl_;
  w.scheduler.run_until(w.scenario.horizon);  // what step() has not run yet
  w.clients.report_unframed();
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

namespace {

bool expects(const Scenario& scenario, const std::string& property) {
  return std::any_of(scenario.expect.begin(), scenario.expect.end(),
                     [&](const Expectation& e) { return e.property == property; });
}

// The states seen while connections wait, each with the accepts made by then: coming back to
// one with no accept since is a cycle that never takes them.
class LassoWatch {
 public:
  void look(const World& world) {
    if (found_) return;
    std::size_t backlog = world.backlog();
    if (backlog == 0) return;
    auto [it, fresh] = seen_.try_emplace(world.digest(), Seen{world.now(), world.accepted()});
    if (!fresh && it->second.accepted == world.accepted()) {
      found_ = ev::Lasso{world.now(), it->second.t, std::int64_t(backlog), false};
    }
  }
  void at_end(World& world) {
    if (!found_ && world.quiescent() && world.backlog() > 0) {
      found_ = ev::Lasso{world.now(), world.now(), std::int64_t(world.backlog()), true};
    }
    if (found_) world.note(*found_);
  }

 private:
  struct Seen {
    Nanos t;
    std::uint64_t accepted;
  };
  std::unordered_map<std::uint64_t, Seen> seen_;  // by digest; looked up, never iterated
  std::optional<ev::Lasso> found_;
};

}  // namespace

RunResult run(const Scenario& scenario, const std::string& arm, model::Chooser* chooser,
              const ServerFactories& servers) {
  if (scenario.target && !servers.foreign) return run_target(scenario, arm, chooser);
  std::optional<model::ReplayChooser> pinned;  // a counterexample's choices
  if (chooser == nullptr && !scenario.choices.empty()) chooser = &pinned.emplace(scenario.choices);
  auto owned = std::make_unique<World>(scenario, arm, chooser, true, servers);
  World& world = *owned;
  // A target's thread is C code that nothing may unwind: its World outlives the run, and its
  // process ends once the trace is out (posix/host.cpp).
  if (scenario.target) (void)owned.release();
  std::optional<LassoWatch> watch;
  if (expects(scenario, "liveness")) watch.emplace();
  if (!watch) world.digests_unused();
  Nanos instant = world.now();
  std::uint64_t at_instant = 0;
  do {
    if (watch) watch->look(world);
    if (world.now() != instant) instant = world.now(), at_instant = 0;
    char at[48];
    if (world.trace_events() > trace_events_max) {
      std::snprintf(at, sizeof at, "%.1f ms", double(world.now().count()) / 1e6);
      return world.stop_short("its trace passed " + std::to_string(trace_events_max) + " events at " + at +
                                  " of virtual time (a shorter horizon, or fewer passes, fits)",
                              false, watch.has_value());
    }
    if (++at_instant > still_steps_max || world.stalled()) {
      std::snprintf(at, sizeof at, "%.1f ms", double(world.now().count()) / 1e6);
      std::string what = world.stalled() ? std::to_string(model::SimKernel::calls_at_instant_max) + " kernel calls"
                                         : std::to_string(still_steps_max) + " steps";
      return world.stop_short("livelock: virtual time stood still for " + what + " at " + at +
                                  ", nothing done (nothing the server does lets the clock move)",
                              true, watch.has_value());
    }
  } while (world.step());
  if (watch) watch->at_end(world);
  RunResult result = world.finish();
  result.trace.liveness_watched = watch.has_value();
  return result;
}

}  // namespace loopsim::sim
