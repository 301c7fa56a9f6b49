#include "sim/replay.hpp"

#include "sim/scenario.hpp"
#include "sim/trace_reader.hpp"

namespace loopsim::sim {

// The one trace reader reads the whole file, so a replay takes exactly the traces `render`
// takes, and refuses the same bad lines at the same positions.
Recording read_recording(const std::string& path) {
  Trace trace;
  try {
    trace = read_trace_file(path);
  } catch (const TraceError& e) {
    throw ScenarioError(e.what(), "replay takes a trace written by `loopsim run --trace`");
  }
  Recording recording;
  recording.scenario = trace.scenario;
  recording.arm = trace.arm.empty() ? "base" : trace.arm;
  recording.seed = trace.seed;
  for (const TraceEvent& event : trace.events) {
    if (const auto* choice = std::get_if<ev::Choice>(&event)) {
      recording.choices.push_back(
          model::Choice{model::ChoiceKind(choice->kind), choice->options, choice->pick});
    }
  }
  return recording;
}

}  // namespace loopsim::sim
