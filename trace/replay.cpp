#include "trace/replay.hpp"

#include <filesystem>
#include <fstream>

#include "scenario/scenario.hpp"
#include "trace/trace_reader.hpp"

namespace loopsim::sim {

// The one trace reader reads the whole file, so a replay takes exactly the traces `render`
// takes, and refuses the same bad lines at the same positions.
Recording read_recording(const std::string& path, std::uintmax_t max_bytes) {
  std::error_code error;
  if (const std::uintmax_t size = std::filesystem::file_size(path, error); !error && size > max_bytes) {
    throw ScenarioError(path + ":1:1: the trace is " + std::to_string(size) + " bytes; a replay reads at most " +
                            std::to_string(max_bytes) + " (" + std::to_string(max_bytes >> 20) + " MiB)",
                        "replay a shorter run, or the choices explore pins in a counterexample");
  }
  std::ifstream in = open_input(path, max_bytes, "replay trace");  // no FIFO, no device
  Trace trace;
  try {
    trace = read_jsonl(in, path);
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
