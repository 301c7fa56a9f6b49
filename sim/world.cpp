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

// Passes each decision on, and writes it into the trace.
class RecordingChooser final : public model::Chooser {
 public:
  RecordingChooser(model::Chooser& inner, const model::Scheduler& scheduler, Trace& trace)
      : inner_(inner), scheduler_(scheduler), trace_(trace) {}
  std::uint32_t choose(model::ChoiceKind kind, std::uint32_t options) override {
    std::uint32_t pick = inner_.choose(kind, options);
    trace_.events.push_back(ev::Choice{scheduler_.now(), std::uint8_t(kind), options, pick});
    return pick;
  }

 private:
  model::Chooser& inner_;
  const model::Scheduler& scheduler_;
  Trace& trace_;
};

void schedule_faults(const Scenario& scenario, model::Scheduler& scheduler,
                     model::SimKernel& kernel, Clients& clients, Trace& trace) {
  for (const FaultSpec& f : scenario.faults) {
    switch (f.kind) {
      case FaultSpec::Kind::accept_error:
        kernel.add_accept_fault(model::AcceptFault{f.error, f.nth, f.at, f.until, std::uint32_t(f.count)});
        break;
      case FaultSpec::Kind::rlimit:
        scheduler.at(f.at, [&scheduler, &kernel, &trace, value = f.value] {
          kernel.set_rlimit_nofile(value);
          trace.events.push_back(ev::Rlimit{scheduler.now(), value});
        });
        break;
      case FaultSpec::Kind::reset:
        scheduler.at(f.at, [&clients, of = f.of, count = f.count] { clients.reset_group(of, count); });
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
  config.receive_buffer = std::size_t(k.receive_buffer);
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

std::vector<model::Choice> choices_of(const Trace& trace) {
  std::vector<model::Choice> out;
  for (const TraceEvent& event : trace.events) {
    if (auto* c = std::get_if<ev::Choice>(&event)) {
      out.push_back(model::Choice{model::ChoiceKind(c->kind), c->options, c->pick});
    }
  }
  return out;
}

RunResult run(const Scenario& scenario, const std::string& arm, model::Chooser* chooser) {
  LOOPSIM_ASSERT_OP(scenario.workers, ==, 1);
  RunResult result;
  Trace& trace = result.trace;
  trace.scenario = scenario.name;
  trace.arm = arm;
  trace.seed = scenario.seed;
  trace.horizon = scenario.horizon;
  trace.accept_batch = scenario.loop.accept_batch;

  model::SeededChooser seeded(scenario.seed);
  model::Scheduler scheduler;
  RecordingChooser recording(chooser != nullptr ? *chooser : seeded, scheduler, trace);
  scheduler.set_chooser(&recording);
  model::SimKernel kernel(scheduler, kernel_config(scenario.kernel));
  Clients clients(scheduler, kernel, trace, service_port);
  schedule_faults(scenario, scheduler, kernel, clients, trace);
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
