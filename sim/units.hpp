// Durations and bounds as scenarios write them. parse_duration is declared in scenario.hpp.
#pragma once

#include <string>

#include "sim/scenario.hpp"

namespace loopsim::sim {

// "500ms" (a time), "3" (a count), "2 requests", "1.5 batches". Throws std::invalid_argument.
Bound parse_bound(const std::string& text);

}  // namespace loopsim::sim
