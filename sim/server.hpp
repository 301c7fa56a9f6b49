// The server under test, as a run sees it: the built-in loop's process (its workers, its
// handler pool and the threads they run on), a loop of the user's own (ServerFactories::own_loop),
// or a target program on the far side of the POSIX seam (ServerFactories::foreign).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "model/scheduler.hpp"
#include "model/sim_kernel.hpp"
#include "realloop/observer.hpp"
#include "realloop/state.hpp"
#include "scenario/scenario.hpp"
#include "sim/world.hpp"
#include "trace/trace.hpp"

namespace loopsim::sim {

class Clients;

// The port the built-in loop and an own loop listen on; a target says its own.
constexpr std::uint16_t service_port = 80;

inline std::uint16_t port_of(const Scenario& scenario) {
  return scenario.target ? std::uint16_t(scenario.target->port) : service_port;
}

// What every kind of server answers to, for the world that runs it.
class Server {
 public:
  virtual ~Server() = default;
  virtual void start() = 0;
  virtual int listener() const = 0;  // the kernel's descriptor, or -1 before the server listens
  virtual std::size_t handoffs_pending() const = 0;
  // The server's state, times relative to now (for the world's digest). Only a server that
  // declares its state has one: a search merges no states of one that does not.
  virtual bool declares_state() const = 0;
  virtual void digest_state(state::Sink& sink, Instant now) const = 0;
  // What its threads read without a kernel call that others write (model::Scheduler::learn).
  virtual std::uint64_t shared_inputs(Instant /*now*/) const { return 0; }
  virtual ev::RunEnd end_state() = 0;
  virtual std::uint64_t passes() const = 0;
  // Whether the threads' stacks may be unwound at the end. A foreign program's frames are C
  // code that no exception may cross; its process ends instead.
  virtual bool unwinds() const { return true; }
  // A scenario's posts and shutdowns (schedule_posters, schedule_actions).
  virtual void post(int /*worker*/, std::function<void()> /*task*/, std::uint64_t /*what*/) {}
  virtual void shutdown() {}
  // SIGHUP with an action's `reload`: each loop takes what may change live of `next`, as a
  // post on its own thread, as loopsim live's reload does.
  virtual void reload(const LoopConfig& /*next*/) {}
  // The built-in loop stops on SIGTERM and SIGINT (the loader refuses it the others).
  virtual void signal(int signal) {
    if (stopping_signal(signal)) shutdown();
  }
};

// A target program (ForeignServer), started and then run until it settles (its first wait, a
// sleep or its end) before the clients' time 0.
std::unique_ptr<Server> foreign_server(std::unique_ptr<ForeignServer> server, model::Scheduler& scheduler,
                                       model::SimKernel& kernel, Trace& trace, const Clients& clients);
// A loop of the user's own, on one simulated thread, listening on service_port.
std::unique_ptr<Server> own_loop_server(const OwnLoopFactory& make, const Scenario& scenario,
                                        model::Scheduler& scheduler, model::SimKernel& kernel, LoopObserver& observer);
// The built-in loop's process, as the scenario's [loop] lays it out, listening on service_port.
std::unique_ptr<Server> built_in_server(const Scenario& scenario, model::Scheduler& scheduler,
                                        model::SimKernel& kernel, LoopObserver& observer);

}  // namespace loopsim::sim
