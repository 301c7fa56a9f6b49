// A failing run told in words, made from its trace: what the clients sent and when, what each
// choice off the natural path did, what the server read and wrote on each connection, in bytes,
// what was lost, and why the properties say so. It appears under a violated arm of `run`, as
// comments in an explore counterexample, and under a generate finding; `--json` carries it.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "checker/properties.hpp"
#include "trace/trace.hpp"

namespace loopsim::checker {

// The story's lines, each a sentence or two (no indentation, no trailing newline). The run's
// trace should keep every kind of event (sim::all_events); from one kept to its verdicts the
// story says less, and says so. Lines are bounded: a long run is summed up, not listed.
// `pinned`: the run's choices were pinned (a counterexample's, or --replay), so each choice off
// the natural path is part of what made it fail, and each is told; otherwise they were drawn
// from the seed, and are only counted.
std::vector<std::string> story(const sim::Trace& trace, const std::vector<Verdict>& verdicts, bool pinned = true);

// The story as text, for every place that prints one: `heading` then "what happened:", then each
// line after `indent`, control characters escaped; nothing when there is no story. A file's
// comments are heading "#\n# " and indent "#   ".
void write_story(std::ostream& out, const std::vector<std::string>& lines, const std::string& heading,
                 const std::string& indent);

// One event as a short clause ("window#1 connected", "the server read 52 bytes from
// window#1"), for the story.
std::string event_clause(const sim::Trace& trace, const sim::TraceEvent& event);

// The same run as a decision graph (Graphviz dot), written beside an explore counterexample: one
// node for each choice off the natural path (red: where it was, what it did, what came next),
// runs of natural choices folded into one grey node, each edge labelled with what happened
// between (connects, requests, accepts, bytes read and written, answers), and an end node that
// says why the run fails. A liveness cycle (a Lasso event) is an edge back to where it began.
std::string decision_graph(const sim::Trace& trace, const std::vector<Verdict>& verdicts);

}  // namespace loopsim::checker
