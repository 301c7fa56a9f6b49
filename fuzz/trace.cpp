// Fuzzes `loopsim render TRACE` short of Graphviz: sim::read_jsonl, then what render does with
// the trace before a layout. For a Chrome trace (.json): reports::chrome_trace and its dump().
// For the pass timeline (.svg, .png, .dot): the model timeline.cpp's GraphBuilder draws from
// (view_passes, long_request_rule, fold_rows, row_stats) and every label it sets on the graph
// (row, title, request summary, legend, span labels). Building the cgraph graph and laying it
// out (gvLayout) are not fuzzed: the builder is private to timeline.cpp and Graphviz keeps
// global state. Last, the trace is written back (sim::write_jsonl) and read again.
//
// Input: a JSON Lines trace (docs/trace.md).
//
// Expected: sim::TraceError, with a message and hint of one line each. A finding: any other
// exception escaping (a reports::RenderError included: render throws it for Graphviz and for
// files, not for a trace it has read), a crash, a sanitizer report, an HTML-like label that is
// not well-formed XML (Graphviz would refuse it), a trace written back that does not read again,
// or that writes other bytes the second time.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "fuzz/finding.hpp"
#include "reports/chrome_trace.hpp"
#include "reports/passes.hpp"
#include "reports/timeline.hpp"
#include "reports/timeline_labels.hpp"
#include "reports/timeline_rows.hpp"
#include "reports/xml_check_for_tests.hpp"
#include "trace/trace.hpp"
#include "trace/trace_reader.hpp"

namespace {

using namespace loopsim;
using namespace loopsim::reports;
using namespace loopsim::reports::timeline_detail;

void check_label(const char* what, const std::string& html) {
  testing::XmlCheck check = testing::check_xml(html);
  if (!check.ok()) fuzz::finding(std::string("the ") + what + " label is not well-formed: " + check.error + "\n" + html);
}

// What GraphBuilder (reports/timeline.cpp) computes and sets as labels, without cgraph.
void timeline_model(const sim::Trace& trace) {
  const TimelineOptions options;
  const PassView view = view_passes(trace);
  const std::vector<Row> rows = fold_rows(trace, view, options.fold);
  const LongRequestRule rule = long_request_rule(view);
  check_label("title", title_label(trace, view, rows));
  check_label("key", "<TABLE BORDER=\"0\" CELLSPACING=\"4\"><TR><TD ALIGN=\"LEFT\">" + requests_label(trace, view) +
                         "</TD></TR><TR><TD ALIGN=\"LEFT\">" + legend_label() + "</TD></TR></TABLE>");
  std::vector<std::size_t> row_of_pass(view.passes.size(), no_pass);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const Row& row = rows[r];
    if (row.worker < 0 || row.worker >= std::max(view.workers, 1)) {
      fuzz::finding("a row of worker " + std::to_string(row.worker) + " with " + std::to_string(view.workers) + " workers");
    }
    for (std::size_t p : row.passes) row_of_pass.at(p) = r;
    const RowStats stats = row_stats(trace, view, row, rule);
    palette_of(mark_of(stats));
    check_label("row", row_label(stats));
  }
  std::size_t drawn = 0;
  for (const RequestSpan& span : view.requests) {
    if (drawn >= options.max_spans) break;
    if (!small_group(trace, span.client)) continue;
    if (span.sent_pass == no_pass || span.served_pass == no_pass) continue;
    if (row_of_pass.at(span.sent_pass) == row_of_pass.at(span.served_pass)) continue;
    span_label(trace, span);
    ++drawn;
  }
}

std::string written(const sim::Trace& trace) {
  std::ostringstream out;
  sim::write_jsonl(trace, out);
  return out.str();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in{std::string(fuzz::text_of(data, size))};
  sim::Trace trace;
  try {
    trace = sim::read_jsonl(in, "fuzz.jsonl");
  } catch (const sim::TraceError& e) {
    if (!fuzz::one_line(e.what()) || !fuzz::one_line(e.hint)) {
      fuzz::finding(std::string("a TraceError of more than one line: ") + e.what());
    }
    return 0;
  }

  chrome_trace(trace).dump();  // as write_chrome_trace writes it
  timeline_model(trace);

  // Reading then writing gives the same bytes (trace/trace_reader.hpp).
  const std::string once = written(trace);
  std::istringstream again_in(once);
  sim::Trace again;
  try {
    again = sim::read_jsonl(again_in, "written.jsonl");
  } catch (const sim::TraceError& e) {
    fuzz::finding(std::string("the trace written back does not read: ") + e.what());
  }
  if (written(again) != once) fuzz::finding("the trace written back writes other bytes the second time");
  return 0;
}
