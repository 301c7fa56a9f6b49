// What a finished trace says: its counts, a target's early exit, its choices.
#include <string.h>  // sigabbrev_np

#include <cstdio>
#include <string>
#include <vector>

#include "model/choice.hpp"
#include "sim/world.hpp"

namespace loopsim::sim {

RunStats stats_of(const Trace& trace, std::uint64_t passes, std::uint64_t steps) {
  RunStats stats;
  stats.passes = passes;
  stats.steps = steps;
  stats.virtual_time = since_start(trace.horizon);
  for (const TraceEvent& event : trace.events) {
    if (auto* a = std::get_if<ev::Accept>(&event); a != nullptr && a->result >= 0) ++stats.accepted;
    if (std::holds_alternative<ev::Answer>(event)) ++stats.answered;
    if (std::holds_alternative<ev::Refused>(event)) ++stats.refused;
    if (auto* x = std::get_if<ev::ProcessExit>(&event)) {
      stats.exit_status = x->status;
      stats.exit_signal = x->signal;
      stats.exited_at = x->t;
    }
  }
  return stats;
}

std::string exit_text(const RunStats& stats) {
  if (!stats.exit_status) return {};
  char at[48];
  std::snprintf(at, sizeof at, "%.1f ms", double(since_start(stats.exited_at).count()) / 1e6);
  std::string how = "exited with status " + std::to_string(*stats.exit_status);
  if (stats.exit_signal != 0) {
    const char* name = ::sigabbrev_np(stats.exit_signal);
    how = std::string("was ended by ") + (name != nullptr ? std::string("SIG") + name : "signal " + std::to_string(stats.exit_signal)) +
          " (status " + std::to_string(*stats.exit_status) + ")";
  }
  std::string text = "the target " + how + " at " + at + " of virtual time, before the run's horizon";
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

}  // namespace loopsim::sim
