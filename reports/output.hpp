// Where a trace's pictures go: the output format is chosen by the file's extension
// (.svg, .png, .dot: the pass timeline; .json: the Chrome trace).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "trace/trace.hpp"

namespace loopsim::reports {

enum class OutputKind { svg, png, dot, chrome_json };

// The kind for `path`'s extension, if it is one of `allowed`.
std::optional<OutputKind> output_kind(const std::string& path, const std::vector<OutputKind>& allowed);
// "use .svg, .png or .dot": a one-line hint listing `allowed`.
std::string output_hint(const std::vector<OutputKind>& allowed);
// Renders and writes. Throws RenderError.
void write_output(const sim::Trace& trace, OutputKind kind, const std::string& path);

inline const std::vector<OutputKind> picture_kinds{OutputKind::svg, OutputKind::png, OutputKind::dot};
inline const std::vector<OutputKind> any_kind{OutputKind::svg, OutputKind::png, OutputKind::dot,
                                              OutputKind::chrome_json};

}  // namespace loopsim::reports
