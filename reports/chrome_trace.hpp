// A trace as Chrome trace event JSON (the JSON Object Format), for Perfetto or chrome://tracing:
// each worker is a thread of process 1; its passes are complete events ("X") with the wait and
// each request served nested inside; accepts and batch ends are instant events ("i"); every
// client request is an async span ("b"/"e", category "request") from its send to its answer.
// Times are microseconds of virtual time.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "trace/trace.hpp"

namespace loopsim::reports {

nlohmann::ordered_json chrome_trace(const sim::Trace& trace);
// Throws RenderError (timeline.hpp) when the file cannot be written.
void write_chrome_trace(const sim::Trace& trace, const std::string& path);

}  // namespace loopsim::reports
