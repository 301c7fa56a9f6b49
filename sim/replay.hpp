// Reading back what a recorded trace needs for a replay: its arm, seed and choices.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/choice.hpp"

namespace loopsim::sim {

struct Recording {
  std::string scenario;  // the name of the scenario it was recorded from
  std::string arm;
  std::uint64_t seed = 0;
  std::vector<model::Choice> choices;
};

// Reads a JSON Lines trace (docs/trace.md). Throws ScenarioError naming the file and line of
// anything it cannot read.
Recording read_recording(const std::string& path);

}  // namespace loopsim::sim
