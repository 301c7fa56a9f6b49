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

// The largest trace a replay reads: 256 MiB, about 4 million choice lines. Refused by its size
// before a line is parsed: a replay reads and checks the whole trace, which at trace_file_max
// would take minutes and gigabytes before any answer.
inline constexpr std::uintmax_t replay_file_max = std::uintmax_t{256} << 20;

// Reads a JSON Lines trace (docs/trace.md) of at most `max_bytes`. Throws ScenarioError naming
// the file and line of anything it cannot read.
Recording read_recording(const std::string& path, std::uintmax_t max_bytes = replay_file_max);

}  // namespace loopsim::sim
