// Escaping for XML text and attribute values: JUnit reports and Graphviz HTML-like labels.
#pragma once

#include <string>
#include <string_view>

namespace loopsim::reports {

// Quotes, ampersands and angle brackets as entities; tab, newline and carriage return as
// character references; other control characters (which XML 1.0 forbids) as '?'.
std::string xml_escape(std::string_view text);

}  // namespace loopsim::reports
