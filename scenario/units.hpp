// Durations and bounds as scenarios write them. parse_duration is declared in scenario.hpp.
#pragma once

#include <string>

#include "scenario/scenario.hpp"

namespace loopsim::sim {

// "500ms" (a time), "3" (a count), "2 requests", "1.5 batches". Throws std::invalid_argument.
Bound parse_bound(const std::string& text);

// A duration as a scenario writes it, exactly: in the largest unit that divides it ("1500ns",
// "20ms", "3s"), so that parse_duration reads back the same value.
std::string duration_text(Duration t);
// An instant as a scenario writes it: its time since the run's start, as duration_text writes it.
inline std::string instant_text(Instant t) { return duration_text(since_start(t)); }

}  // namespace loopsim::sim
