// The TOML value texts a generated scenario is written with: a quoted string, a duration in
// milliseconds.
#pragma once

#include <cstdint>
#include <string>

namespace loopsim::explore {

inline std::string quoted(const std::string& s) { return "\"" + s + "\""; }
inline std::string ms_text(std::int64_t n) { return quoted(std::to_string(n) + "ms"); }

}  // namespace loopsim::explore
