// The figures a person compares between a simulated and a live run of one scenario, read from
// the clients' side of a trace (what both runs have): per group, answers, request latencies
// and the widest gap between answers; and the verdicts of the properties a client can judge.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "checker/properties.hpp"
#include "scenario/scenario.hpp"
#include "trace/trace.hpp"

namespace loopsim::probe {

struct GroupFigures {
  std::string group;
  std::int64_t asked = 0;     // requests the group meant to send
  std::int64_t answered = 0;  // answers it got
  // Send to answer, over the answered requests; none when none was.
  std::optional<Duration> p50, p99, max;
  std::optional<Instant> last_answer;  // the time of its last answer, if one came
  std::optional<Duration> widest_gap;  // between two consecutive answers; none with fewer than two
};

GroupFigures group_figures(const sim::Trace& trace, const std::string& group);

// Properties a client sees whole: answered, latency, max_gap. The rest are the server's to
// show (its passes, queue, descriptors) and are not judged from a live client's side.
bool judged_from_clients(const std::string& property);

// `live / simulated` for two measurements of one thing, or nullopt when it means nothing (either
// never happened, or the simulated one is 0 and the live one is not).
std::optional<double> ratio(std::int64_t simulated, std::int64_t live);

}  // namespace loopsim::probe
