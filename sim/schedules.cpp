#include "sim/schedules.hpp"

#include <memory>

#include "base/assert.hpp"
#include "sim/workload.hpp"

namespace loopsim::sim {

void schedule_faults(const Scenario& scenario, model::Scheduler& scheduler,
                     model::SimKernel& kernel, Clients& clients, Trace& trace) {
  for (std::uint32_t i = 0; i < scenario.faults.size(); ++i) {
    const FaultSpec& f = scenario.faults[i];
    Instant at = drawn_instant(f.at, scenario.seed, draw_salt(Drawn::fault, i));
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

void schedule_posters(const Scenario& scenario, model::Scheduler& scheduler, model::SimKernel& kernel,
                      Server& process, Trace& trace) {
  auto next_id = std::make_shared<std::int64_t>(0);
  for (std::uint32_t p = 0; p < scenario.posters.size(); ++p) {
    const PosterSpec& poster = scenario.posters[p];
    LOOPSIM_ASSERT_OP(poster.worker, <, scenario.workers);
    for (int i = 0; i < poster.count; ++i) {
      Window at = poster.at.shifted(poster.every * i);
      Instant drawn = drawn_instant(at, scenario.seed, draw_salt(Drawn::post, p, i));
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
                   else if (action.reload) process.reload(*action.reload);
                   else process.signal(action.signal);
                 },
                 model::Tag{model::Happening::shutdown, a});
  }
}

}  // namespace loopsim::sim
