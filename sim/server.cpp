#include "sim/server.hpp"

#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "base/assert.hpp"
#include "realloop/loop.hpp"
#include "realloop/pool.hpp"

namespace loopsim::sim {

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
  void digest_state(state::Sink&, Instant) const override {}
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
  void digest_state(state::Sink& sink, Instant now) const override { loop_->digest_state(sink, now); }
  std::uint64_t shared_inputs(Instant now) const override { return loop_->shared_inputs(now); }
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

}  // namespace

// The simulated process: its worker loops, its handler pool, and the threads they run on. In a
// named namespace, not an unnamed one: a type whose state is declared must have linkage
// (realloop/state.hpp's compile-time check names an object of it that is never defined).
namespace built_in {

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
    LOOPSIM_ASSERT(acceptor_ >= 0 && std::size_t(acceptor_) < loops_.size());  // one of the loops listens
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
    LOOPSIM_ASSERT_OP(outer, >=, 0);  // the loop opened its own poller: the limit let one more in
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
  void digest_state(state::Sink& sink, Instant now) const override { state::visit_into(sink, *this, now); }
  std::uint64_t shared_inputs(Instant now) const override {
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
    for (auto& loop : loops_) loop->shutdown(Instant(scheduler_.now()));
  }
  void reload(const LoopConfig& next) override {
    for (auto& loop : loops_) {
      Loop* l = loop.get();
      l->post([l, next] { l->reconfigure(next); }, reloadable_key(next));
    }
  }

  ev::RunEnd end_state() override {
    std::int64_t open = 0, handoffs = 0;
    for (auto& loop : loops_) {
      open += std::int64_t(loop->connections());
      handoffs += std::int64_t(loop->handoffs_pending());
    }
    // Every connection a loop holds is a descriptor the kernel has open.
    LOOPSIM_ASSERT_OP(std::size_t(open), <=, kernel_.open_descriptors());
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
  static constexpr auto state_fields = state::fields(
      state::f::reference("scenario_"), state::f::reference("scheduler_"), state::f::reference("kernel_"),
      state::f::value<&Process::group_>, state::f::value<&Process::loops_>, state::f::skip<&Process::acceptor_>,
      state::f::value<&Process::pool_>);
  friend struct state::Access;
};

}  // namespace built_in

std::unique_ptr<Server> foreign_server(std::unique_ptr<ForeignServer> server, model::Scheduler& scheduler,
                                       model::SimKernel& kernel, Trace& trace, const Clients& clients) {
  auto foreign = std::make_unique<Foreign>(std::move(server), scheduler, kernel, trace, clients);
  // The program starts before the clients' time 0, as the built-in loop is made before it: it
  // runs until its first wait, or until it sleeps or ends.
  foreign->start();
  while (!foreign->settled() && scheduler.step(Instant{Duration(1)})) {
  }
  return foreign;
}

std::unique_ptr<Server> own_loop_server(const OwnLoopFactory& make, const Scenario& scenario,
                                        model::Scheduler& scheduler, model::SimKernel& kernel, LoopObserver& observer) {
  return std::make_unique<Own>(make, scenario, scheduler, kernel, observer);
}

std::unique_ptr<Server> built_in_server(const Scenario& scenario, model::Scheduler& scheduler,
                                        model::SimKernel& kernel, LoopObserver& observer) {
  return std::make_unique<built_in::Process>(scenario, scheduler, kernel, observer);
}

}  // namespace loopsim::sim
