// The TOML value texts a generated scenario is written with: a quoted string, a duration in
// milliseconds.
#pragma once

#include <cstdint>
#include <string>

#include "scenario/scenario.hpp"

namespace loopsim::explore {

// Escaped as TOML must be, whatever the string holds: a name may come from the command line.
inline std::string quoted(const std::string& s) { return sim::toml_string(s); }
inline std::string ms_text(std::int64_t n) { return quoted(std::to_string(n) + "ms"); }

}  // namespace loopsim::explore
