// A trace as bytes, for passing one between processes of the same build (a target's process
// sends its trace to loopsim this way): every field of every event, no text to parse. Files
// are JSON Lines (trace/trace.hpp); this is not a file format and has no version.
#pragma once

#include <string>
#include <string_view>

#include "trace/trace.hpp"

namespace loopsim::sim {

std::string encode_trace(const Trace& trace);
// Throws std::runtime_error for bytes that are not a whole trace.
Trace decode_trace(std::string_view bytes);

}  // namespace loopsim::sim
