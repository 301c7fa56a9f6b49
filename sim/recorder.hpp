// How a run writes its trace as it goes: what the loop reports (Recorder), naming the client
// behind each descriptor, and every decision a chooser makes (RecordingChooser).
#pragma once

#include <span>
#include <string_view>

#include "model/choice.hpp"
#include "model/scheduler.hpp"
#include "model/sim_kernel.hpp"
#include "realloop/observer.hpp"
#include "sim/clients.hpp"
#include "trace/trace.hpp"

namespace loopsim::sim {

// Records what the loop reports as trace events, naming the client behind each descriptor.
class Recorder final : public LoopObserver {
 public:
  Recorder(model::Scheduler& scheduler, const model::SimKernel& kernel, Trace& trace, const Clients& clients)
      : scheduler_(scheduler), kernel_(kernel), trace_(trace), clients_(clients) {}

  void pass_begin(int worker, std::uint64_t pass, std::optional<Duration> timeout) override {
    record(ev::PassBegin{now(), worker, pass, timeout});
  }
  void events(int worker, std::uint64_t pass, std::span<const PollEvent> events) override {
    if (!trace_.keeps<ev::Events>()) return;
    ev::Events e{now(), worker, pass, {}, ev::work_count(kernel_.work_before_wait(scheduler_.current()))};
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
  Instant now() const { return scheduler_.now(); }
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

}  // namespace loopsim::sim
