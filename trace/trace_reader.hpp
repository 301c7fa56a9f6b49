// Reads a JSON Lines trace (docs/trace.md, version 1) back into a sim::Trace, so that a trace
// written by `loopsim run --trace` can be rendered later. Reading then writing gives the same
// bytes (sim::write_jsonl).
//
// The file names clients only by label ("fast", "burst#17"); the reader rebuilds the groups from
// those labels: groups in order of first appearance, a label "NAME#N" is member N of group NAME
// (the group then has at least max(N) + 1 members, and at least 2), a label without "#N" is a
// group of one. A client's `requests` is the number of requests it was seen sending: the trace
// does not record how many it meant to send. An errno the trace calls "EOTHER" reads back as EIO
// (which is written as "EOTHER" again). Traces written before the header carried
// max_connections and workers, and run_end handoffs and open_descriptors, read with 0, 1, 0 and
// 0 for them (and are written back with those fields).
#pragma once

#include <iosfwd>
#include <stdexcept>
#include <string>

#include "scenario/scenario.hpp"
#include "trace/trace.hpp"

namespace loopsim::sim {

// A trace that cannot be read: `what()` is "name:line: message", `hint` a one-line fix.
// Exit status 2 at the CLI.
class TraceError : public std::runtime_error {
 public:
  TraceError(const std::string& where_and_what, const std::string& hint)
      : std::runtime_error(sim::escape_controls(where_and_what)), hint(sim::escape_controls(hint)) {}
  std::string hint;
};

// `name` stands for the file in messages. Throws TraceError; never crashes on bad input.
sim::Trace read_jsonl(std::istream& in, const std::string& name);
sim::Trace read_trace_file(const std::string& path);

// The errno names the trace uses ("EAGAIN", ...; "EOTHER" for any other), for the reports.

}  // namespace loopsim::sim
