#include "reports/timeline.hpp"

#include <cgraph.h>
#include <gvc.h>

#include <ostream>
#include <memory>

#include "reports/passes.hpp"
#include "reports/timeline_labels.hpp"
#include "scenario/files.hpp"

namespace loopsim::reports {

namespace {

using namespace timeline_detail;

// cgraph takes `char*` for names and values it only reads (and copies).
char* arg(const char* s) { return const_cast<char*>(s); }
char* arg(const std::string& s) { return const_cast<char*>(s.c_str()); }

void set(void* object, const char* name, const std::string& value) {
  agsafeset(object, arg(name), arg(value), arg(""));
}

// An HTML-like label: the string must be interned as HTML before cgraph copies it.
void set_html(Agraph_t* graph, void* object, const std::string& html) {
  char* interned = agstrdup_html(graph, arg(html));
  agsafeset(object, arg("label"), interned, arg(""));
  agstrfree(graph, interned);
}

struct CloseGraph {
  void operator()(Agraph_t* g) const { agclose(g); }
};
struct FreeContext {
  void operator()(GVC_t* c) const { gvFreeContext(c); }
};
using GraphPtr = std::unique_ptr<Agraph_t, CloseGraph>;
using ContextPtr = std::unique_ptr<GVC_t, FreeContext>;

// gvLayout's result, freed on every path out.
class Layout {
 public:
  Layout(GVC_t* gvc, Agraph_t* g) : gvc_(gvc), g_(g) {
    if (gvLayout(gvc_, g_, "dot") != 0) throw RenderError("Graphviz could not lay out the timeline");
  }
  ~Layout() { gvFreeLayout(gvc_, g_); }
  Layout(const Layout&) = delete;
  Layout& operator=(const Layout&) = delete;

 private:
  GVC_t* gvc_;
  Agraph_t* g_;
};

struct Default {
  int kind;  // AGRAPH, AGNODE, AGEDGE
  const char* name;
  const char* value;
};

constexpr Default defaults[] = {
    {AGRAPH, "rankdir", "TB"},        {AGRAPH, "nodesep", "0.4"},     {AGRAPH, "ranksep", "0.22"},
    {AGRAPH, "bgcolor", "white"},     {AGRAPH, "fontname", "DejaVu Sans"},
    {AGNODE, "shape", "plain"},       {AGNODE, "fontname", "DejaVu Sans"}, {AGNODE, "fontsize", "10"},
    {AGEDGE, "fontname", "DejaVu Sans"}, {AGEDGE, "fontsize", "9"},  {AGEDGE, "color", "#bdbdbd"},
    {AGEDGE, "arrowsize", "0.6"},
};

void set_defaults(Agraph_t* g) {
  for (const Default& d : defaults) agattr(g, d.kind, arg(d.name), arg(d.value));
}

class GraphBuilder {
 public:
  GraphBuilder(const sim::Trace& trace, const TimelineOptions& options)
      : trace_(trace), options_(options), view_(view_passes(trace)),
        rows_(fold_rows(trace, view_, options.fold)), rule_(long_request_rule(view_)) {}

  GraphPtr build() {
    GraphPtr graph(agopen(arg("timeline"), Agdirected, nullptr));
    g_ = graph.get();
    set_defaults(g_);
    Agnode_t* title = add_header();
    add_rows();
    link_rows(title);
    add_spans();
    return graph;
  }

 private:
  Agnode_t* node(Agraph_t* in, const std::string& name, const std::string& html) {
    Agnode_t* n = agnode(in, arg(name), 1);
    set_html(g_, n, html);
    return n;
  }

  // The title above the rows; beside it, the request summary over the legend.
  Agnode_t* add_header() {
    Agraph_t* top = agsubg(g_, arg("top"), 1);
    set(top, "rank", "same");
    Agnode_t* title = node(top, "title", title_label(trace_, view_, rows_));
    Agnode_t* key = node(top, "key",
                         "<TABLE BORDER=\"0\" CELLSPACING=\"4\"><TR><TD ALIGN=\"LEFT\">" +
                             requests_label(trace_, view_) + "</TD></TR><TR><TD ALIGN=\"LEFT\">" +
                             legend_label() + "</TD></TR></TABLE>");
    set(agedge(g_, title, key, nullptr, 1), "style", "invis");
    return title;
  }

  Agraph_t* worker_graph(int worker) {
    if (view_.workers <= 1) return g_;
    std::string name = "cluster_worker" + std::to_string(worker);
    Agraph_t* cluster = agsubg(g_, arg(name), 1);
    set(cluster, "label", "worker " + std::to_string(worker));
    set(cluster, "color", "#bdbdbd");
    return cluster;
  }

  void add_rows() {
    row_of_pass_.assign(view_.passes.size(), no_pass);
    for (std::size_t r = 0; r < rows_.size(); ++r) {
      const Row& row = rows_[r];
      for (std::size_t p : row.passes) row_of_pass_[p] = r;
      RowStats stats = row_stats(trace_, view_, row, rule_);
      std::string html = row_label(stats);
      if (!row.alike) html = merged_note(html);
      nodes_.push_back(node(worker_graph(row.worker), "row" + std::to_string(r), html));
    }
  }

  static std::string merged_note(const std::string& html) {
    const std::string close = "</TABLE>";
    return html.substr(0, html.size() - close.size()) +
           "<TR><TD COLSPAN=\"2\" ALIGN=\"LEFT\"><I>merged: these passes differ</I></TD></TR>" + close;
  }

  // Consecutive rows of a worker, top to bottom, held in one straight column.
  void link_rows(Agnode_t* title) {
    std::vector<Agnode_t*> last(std::size_t(std::max(view_.workers, 1)), nullptr);
    for (std::size_t r = 0; r < rows_.size(); ++r) {
      Agnode_t*& previous = last[std::size_t(rows_[r].worker)];
      Agedge_t* e = agedge(g_, previous ? previous : title, nodes_[r], nullptr, 1);
      set(e, "weight", "100");
      if (!previous) set(e, "style", "invis");
      previous = nodes_[r];
    }
  }

  // Requests of small groups, from the row they arrived in to the row that answered them.
  void add_spans() {
    std::size_t drawn = 0;
    for (const RequestSpan& span : view_.requests) {
      if (drawn >= options_.max_spans) break;
      if (!small_group(trace_, span.client)) continue;
      if (span.sent_pass == no_pass || span.served_pass == no_pass) continue;
      std::size_t from = row_of_pass_[span.sent_pass], to = row_of_pass_[span.served_pass];
      if (from == to) continue;
      Agedge_t* e = agedge(g_, nodes_[from], nodes_[to], arg("span" + std::to_string(drawn++)), 1);
      set(e, "constraint", "false");
      set(e, "color", palette_of(Mark::small_answer).border);
      set(e, "fontcolor", palette_of(Mark::small_answer).border);
      set(e, "penwidth", "1.6");
      set(e, "tailport", "e");
      set(e, "headport", "e");
      set(e, "label", span_label(trace_, span));
    }
  }

  const sim::Trace& trace_;
  const TimelineOptions& options_;
  PassView view_;
  std::vector<Row> rows_;
  LongRequestRule rule_;
  Agraph_t* g_ = nullptr;
  std::vector<Agnode_t*> nodes_;        // one per row
  std::vector<std::size_t> row_of_pass_;
};

// One Graphviz context for the whole process, freed at exit. Graphviz 2.42's pango plugin keeps
// the last font name it measured by pointer, into the context's font table: freeing a context
// and rendering with the next one reads freed memory (AddressSanitizer shows it).
GVC_t* context() {
  static const ContextPtr gvc(gvContext());
  if (!gvc) throw RenderError("Graphviz could not start");
  return gvc.get();
}

const char* format_name(PictureFormat format) {
  switch (format) {
    case PictureFormat::svg: return "svg";
    case PictureFormat::png: return "png";
    case PictureFormat::dot: return "dot";
  }
  return "svg";
}

}  // namespace

#if defined(__SANITIZE_ADDRESS__)
// LeakSanitizer: Graphviz 2.42 and the font stack under it (fontconfig, pango, cairo, glib)
// keep caches and leak parse state for the life of the process. Those leaks are theirs, not
// ours; libcgraph is not listed, so a graph we forget to close is still reported. The sanitizer
// runtime calls this hook at startup (it lives here so that every binary that renders has it).
extern "C" __attribute__((used)) const char* __lsan_default_suppressions() {
  return "leak:libgvc.so\nleak:libgvplugin_\nleak:libfontconfig.so\nleak:libpango\n"
         "leak:libcairo.so\nleak:libglib-2.0.so\n";
}
// ... and says nothing about the suppressed leaks at exit.
extern "C" __attribute__((used)) const char* __lsan_default_options() { return "print_suppressions=0"; }
#endif

std::string render_timeline(const sim::Trace& trace, PictureFormat format, const TimelineOptions& options) {
  agseterr(AGERR);  // warnings (a font substituted, ...) are not the user's business
  GVC_t* gvc = context();
  GraphPtr graph = GraphBuilder(trace, options).build();
  Layout layout(gvc, graph.get());
  char* data = nullptr;
  unsigned length = 0;
  int failed = gvRenderData(gvc, graph.get(), format_name(format), &data, &length);
  std::string out = data ? std::string(data, length) : std::string();
  if (data) gvFreeRenderData(data);
  if (failed || out.empty()) {
    throw RenderError(std::string("Graphviz cannot render ") + format_name(format) +
                      " here (its plugins may not be configured: run `dot -c` as root)");
  }
  return out;
}

void write_timeline(const sim::Trace& trace, PictureFormat format, const std::string& path,
                    const TimelineOptions& options) {
  std::string bytes = render_timeline(trace, format, options);
  const std::string why = sim::write_output_file(path, [&](std::ostream& out) {
    out.write(bytes.data(), std::streamsize(bytes.size()));
  });
  if (!why.empty()) throw RenderError("cannot write " + path + why);
}

}  // namespace loopsim::reports
