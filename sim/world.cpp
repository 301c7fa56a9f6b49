#include "sim/world.hpp"

#include <memory>

#include "model/scheduler.hpp"
#include "model/sim_kernel.hpp"
#include "realloop/assert.hpp"
#include "realloop/loop.hpp"
#include "sim/clients.hpp"

namespace loopsim::sim {

namespace {

constexpr std::uint16_t service_port = 80;

// Records what the loop reports as trace events, naming the client behind each descriptor.
class Recorder final : public LoopObserver {
 public:
  Recorder(model::Scheduler& scheduler, Trace& trace, const Clients& clients)
      : scheduler_(scheduler), trace_(trace), clients_(clients) {}

  void pass_begin(int worker, std::uint64_t pass, Nanos timeout) override {
    record(ev::PassBegin{now(), worker, pass, timeout});
  }
  void events(int worker, std::uint64_t pass, std::span<const PollEvent> events) override {
    ev::Events e{now(), worker, pass, {}};
    e.fds.reserve(events.size());
    for (const PollEvent& event : events) e.fds.push_back(event.fd);
    record(std::move(e));
  }
  void accepted(int worker, Door door, int result) override {
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

 private:
  Nanos now() const { return scheduler_.now(); }
  void record(TraceEvent event) { trace_.events.push_back(std::move(event)); }

  model::Scheduler& scheduler_;
  Trace& trace_;
  const Clients& clients_;
};

model::SimKernelConfig kernel_config(const KernelConfig& k) {
  model::SimKernelConfig config;
  config.poller = k.poller;
  config.somaxconn = k.somaxconn;
  config.rlimit_nofile = k.rlimit_nofile;
  config.file_max = k.file_max;
  config.abort_on_overflow = k.abort_on_overflow;
  config.timer_slack = k.timer_slack;
  return config;
}

RunStats stats_of(const Trace& trace, const Loop& loop, std::uint64_t steps) {
  RunStats stats;
  stats.passes = loop.passes();
  stats.steps = steps;
  stats.virtual_time = trace.horizon;
  for (const TraceEvent& event : trace.events) {
    if (auto* a = std::get_if<ev::Accept>(&event); a != nullptr && a->result >= 0) ++stats.accepted;
    if (std::holds_alternative<ev::Answer>(event)) ++stats.answered;
    if (std::holds_alternative<ev::Refused>(event)) ++stats.refused;
  }
  return stats;
}

}  // namespace

RunResult run(const Scenario& scenario, const std::string& arm) {
  LOOPSIM_ASSERT_OP(scenario.workers, ==, 1);
  RunResult result;
  Trace& trace = result.trace;
  trace.scenario = scenario.name;
  trace.arm = arm;
  trace.seed = scenario.seed;
  trace.horizon = scenario.horizon;
  trace.accept_batch = scenario.loop.accept_batch;

  model::Scheduler scheduler;
  model::SimKernel kernel(scheduler, kernel_config(scenario.kernel));
  Clients clients(scheduler, kernel, trace, service_port);
  Recorder recorder(scheduler, trace, clients);
  auto loop = std::make_unique<Loop>(kernel, scenario.loop, recorder, 0);
  int rc = loop->open(ListenSpec{"127.0.0.1", service_port, scenario.kernel.listen_backlog});
  LOOPSIM_ASSERT_OP(rc, >=, 0);
  trace.listener_fd = loop->listener();

  clients.schedule(scenario.clients);
  scheduler.spawn("worker-0", [&loop] { loop->run(); });
  std::uint64_t steps = scheduler.run_until(scenario.horizon);
  trace.events.push_back(ev::RunEnd{scheduler.now(), std::int64_t(kernel.backlog(loop->listener())),
                                    std::int64_t(loop->connections())});
  result.stats = stats_of(trace, *loop, steps);
  scheduler.unwind();  // the loop's stack goes before the loop itself
  loop.reset();
  return result;
}

}  // namespace loopsim::sim
