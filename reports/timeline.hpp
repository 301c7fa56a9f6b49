// The pass timeline: one row per pass (folded for long runs, see timeline_rows.hpp), top to
// bottom in time, built as a Graphviz graph with libcgraph and laid out and rendered with libgvc
// (the dot engine) in-process. Requests of small groups are arcs from the pass they arrived in
// to the pass that answered them; big groups are summarized. Rows that carry the story stand
// out: the blocker, answers to small groups (/fast), owed batches, failed accepts.
#pragma once

#include <stdexcept>
#include <string>

#include "reports/timeline_rows.hpp"
#include "trace/trace.hpp"

namespace loopsim::reports {

enum class PictureFormat { svg, png, dot };

struct TimelineOptions {
  FoldOptions fold;
  std::size_t max_spans = 24;  // request arcs drawn, at most
};

// Graphviz failed (no renderer for the format, a layout error) or the file cannot be written.
class RenderError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The rendered bytes: SVG text, a PNG image, or DOT (laid out: with positions) text.
// Throws RenderError. Not thread-safe: Graphviz keeps global state (and one context for the
// process, see timeline.cpp).
std::string render_timeline(const sim::Trace& trace, PictureFormat format,
                            const TimelineOptions& options = {});
void write_timeline(const sim::Trace& trace, PictureFormat format, const std::string& path,
                    const TimelineOptions& options = {});

}  // namespace loopsim::reports
