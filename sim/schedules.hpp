// What a scenario makes happen at its times, besides its clients: faults (failing accepts, a
// lowered descriptor limit, resets), posts from other threads, and shutdowns and signals. Each
// is put on the scheduler at its instant, drawn from its window by the scenario's seed.
#pragma once

#include "model/scheduler.hpp"
#include "model/sim_kernel.hpp"
#include "scenario/scenario.hpp"
#include "sim/clients.hpp"
#include "sim/server.hpp"
#include "trace/trace.hpp"

namespace loopsim::sim {

void schedule_faults(const Scenario& scenario, model::Scheduler& scheduler, model::SimKernel& kernel,
                     Clients& clients, Trace& trace);
void schedule_posters(const Scenario& scenario, model::Scheduler& scheduler, model::SimKernel& kernel,
                      Server& process, Trace& trace);
void schedule_actions(const Scenario& scenario, model::Scheduler& scheduler, Server& process, Trace& trace);

}  // namespace loopsim::sim
