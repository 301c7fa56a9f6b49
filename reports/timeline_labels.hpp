// The words and colours of the pass timeline: Graphviz HTML-like labels for rows, the title,
// the legend and the request summary. Kept apart from the graph building in timeline.cpp.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "reports/passes.hpp"
#include "reports/timeline_rows.hpp"

namespace loopsim::reports::timeline_detail {

// Why a row stands out, most important first; the row's fill and border come from the first.
enum class Mark { blocker, small_answer, owed, descriptor_error, idle, plain };

struct Palette {
  const char* fill;    // the row's background
  const char* accent;  // the cells that say why it stands out
  const char* border;
};

Mark mark_of(const RowStats& stats);
Palette palette_of(Mark mark);

// Label strings are HTML-like labels without the outer angle brackets' wrapping: "<TABLE ...>".
std::string row_label(const RowStats& stats);
std::string title_label(const sim::Trace& trace, const PassView& view, const std::vector<Row>& rows);
std::string legend_label();
std::string requests_label(const sim::Trace& trace, const PassView& view);
// The arc of one request from the pass it arrived in to the pass that answered it.
std::string span_label(const sim::Trace& trace, const RequestSpan& span);

}  // namespace loopsim::reports::timeline_detail
