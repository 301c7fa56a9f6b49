#include "reports/output.hpp"

#include <algorithm>

#include "reports/chrome_trace.hpp"
#include "reports/timeline.hpp"

namespace loopsim::reports {

namespace {

const char* extension_of(OutputKind kind) {
  switch (kind) {
    case OutputKind::svg: return ".svg";
    case OutputKind::png: return ".png";
    case OutputKind::dot: return ".dot";
    case OutputKind::chrome_json: return ".json";
  }
  return "";
}

}  // namespace

std::optional<OutputKind> output_kind(const std::string& path, const std::vector<OutputKind>& allowed) {
  for (OutputKind kind : allowed) {
    if (path.ends_with(extension_of(kind)) && path.size() > std::string(extension_of(kind)).size()) return kind;
  }
  return std::nullopt;
}

std::string output_hint(const std::vector<OutputKind>& allowed) {
  std::string hint = "name the file ";
  for (std::size_t i = 0; i < allowed.size(); ++i) {
    if (i > 0) hint += i + 1 == allowed.size() ? " or " : ", ";
    hint += std::string("F") + extension_of(allowed[i]);
  }
  if (allowed.size() > 1 && std::count(allowed.begin(), allowed.end(), OutputKind::chrome_json)) {
    hint += " (.json: Chrome trace event JSON)";
  }
  return hint;
}

void write_output(const sim::Trace& trace, OutputKind kind, const std::string& path) {
  switch (kind) {
    case OutputKind::svg: return write_timeline(trace, PictureFormat::svg, path);
    case OutputKind::png: return write_timeline(trace, PictureFormat::png, path);
    case OutputKind::dot: return write_timeline(trace, PictureFormat::dot, path);
    case OutputKind::chrome_json: return write_chrome_trace(trace, path);
  }
}

}  // namespace loopsim::reports
