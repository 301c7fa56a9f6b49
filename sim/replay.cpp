#include "sim/replay.hpp"

#include <fstream>
#include <nlohmann/json.hpp>

#include "sim/scenario.hpp"

namespace loopsim::sim {

namespace {

[[noreturn]] void bad(const std::string& path, std::size_t line, const std::string& what) {
  throw ScenarioError(path + ":" + std::to_string(line) + ":1: " + what,
                      "replay takes a trace written by `loopsim run --trace`");
}

model::Choice choice_of(const nlohmann::json& event, const std::string& path, std::size_t line) {
  auto kind = model::choice_kind_from_name(event.value("kind", ""));
  auto options = event.value("options", std::int64_t(0));
  auto pick = event.value("pick", std::int64_t(-1));
  if (!kind || options < 2 || pick < 0 || pick >= options) bad(path, line, "a malformed choice");
  return model::Choice{*kind, std::uint32_t(options), std::uint32_t(pick)};
}

}  // namespace

Recording read_recording(const std::string& path) {
  std::ifstream in = open_input(path, trace_file_max, "trace");
  Recording recording;
  std::string text;
  for (std::size_t line = 1; std::getline(in, text); ++line) {
    auto event = nlohmann::json::parse(text, nullptr, false);
    if (event.is_discarded() || !event.is_object()) bad(path, line, "not a JSON object");
    if (line == 1) {
      if (!event.contains("loopsim_trace")) bad(path, line, "no trace header");
      recording.arm = event.value("arm", "base");
      recording.seed = event.value("seed", std::uint64_t(0));
      continue;
    }
    if (event.value("ev", "") == "choice") recording.choices.push_back(choice_of(event, path, line));
  }
  if (recording.arm.empty()) bad(path, 1, "an empty trace");
  return recording;
}

}  // namespace loopsim::sim
