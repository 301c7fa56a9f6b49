// TOML as loopsim writes it: the counterexamples, worst cases and generated scenarios, and the
// scenario a target's process is handed. Every writer goes through toml_text.
#pragma once

#include <sstream>
#include <string>
#include <toml++/toml.h>

namespace loopsim::sim {

// Strings are written basic-quoted on one line, every character that needs it escaped. toml++
// would write a string with a line break as a multi-line literal ('''...''') even when the string
// holds ''' itself, which then ends the literal early: a file that does not load. A basic string
// reads back as it was whatever it holds (quotes, line breaks, control characters).
inline constexpr toml::format_flags toml_write_flags =
    toml::toml_formatter::default_flags &
    ~(toml::format_flags::allow_literal_strings | toml::format_flags::allow_multi_line_strings);

inline std::string toml_text(const toml::node& node) {
  std::ostringstream out;
  out << toml::toml_formatter(node, toml_write_flags);
  return out.str();
}

}  // namespace loopsim::sim
