// Durations ("600ms", "1.5s") and bounds ("500ms", 3, "1.5 batches") as scenarios write them.
#include "scenario/units.hpp"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <sstream>
#include <stdexcept>

namespace loopsim::sim {
namespace {

template <typename... Parts>
std::string cat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}


struct UnitScale {
  std::string_view unit;
  std::int64_t ns;
};
constexpr UnitScale duration_units[] = {
    {"ns", 1}, {"us", 1'000}, {"ms", 1'000'000}, {"s", 1'000'000'000}};

struct BoundUnit {
  std::string_view word;
  Bound::Unit unit;
};
constexpr BoundUnit bound_units[] = {{"request", Bound::Unit::requests},
                                     {"requests", Bound::Unit::requests},
                                     {"batch", Bound::Unit::batches},
                                     {"batches", Bound::Unit::batches}};

// Digits, optionally followed by a point and more digits.
bool is_decimal(std::string_view text) {
  const auto point = text.find('.');
  const auto digits = [](std::string_view s) {
    return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
  };
  if (point == std::string_view::npos) return digits(text);
  return digits(text.substr(0, point)) && digits(text.substr(point + 1));
}

[[noreturn]] void bad_duration(const std::string& text, std::string_view why) {
  throw std::invalid_argument(cat("\"", escape_controls(text), "\" ", escape_controls(std::string(why))));
}

std::int64_t digits_value(std::string_view digits, const std::string& text) {
  std::int64_t value = 0;
  if (digits.empty()) return 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc{} || end != digits.data() + digits.size()) bad_duration(text, "is too large");
  return value;
}

// `number` of units of `scale` ns, in integer arithmetic.
std::int64_t scaled(std::string_view number, std::int64_t scale, const std::string& text) {
  if (!is_decimal(number)) bad_duration(text, "is not a number followed by a unit");
  const auto point = number.find('.');
  const std::int64_t whole = digits_value(number.substr(0, point), text);
  std::string_view fraction = point == std::string_view::npos ? "" : number.substr(point + 1);
  while (!fraction.empty() && fraction.back() == '0') fraction.remove_suffix(1);
  if (fraction.size() > 9) bad_duration(text, "is finer than one nanosecond");
  std::int64_t denominator = 1;
  for (std::size_t i = 0; i < fraction.size(); ++i) denominator *= 10;
  const std::int64_t part = digits_value(fraction, text) * scale;
  if (part % denominator != 0) bad_duration(text, "is finer than one nanosecond");
  std::int64_t ns = 0;
  if (__builtin_mul_overflow(whole, scale, &ns) ||
      __builtin_add_overflow(ns, part / denominator, &ns))
    bad_duration(text, "is too long (at most 1000000s, about 11.6 days)");
  return ns;
}

}  // namespace

std::string escape_controls(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      static constexpr char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += char(c);
    }
  }
  return out;
}

Bound parse_bound(const std::string& text) {
  const auto space = text.find(' ');
  if (space == std::string::npos)
    return {Bound::Unit::time, static_cast<double>(parse_duration(text).count()), text};
  const std::string_view number = std::string_view(text).substr(0, space);
  const std::string_view word = std::string_view(text).substr(space + 1);
  const auto* unit = std::find_if(std::begin(bound_units), std::end(bound_units),
                                  [&](const BoundUnit& u) { return u.word == word; });
  if (unit == std::end(bound_units))
    throw std::invalid_argument(cat("\"", escape_controls(text), "\": unknown unit \"", escape_controls(std::string(word)), "\""));
  if (!is_decimal(number))
    throw std::invalid_argument(cat("\"", escape_controls(text), "\": \"", escape_controls(std::string(number)), "\" is not a number"));
  double value = 0;
  std::from_chars(number.data(), number.data() + number.size(), value);
  if (!(value <= bound_cost_max)) {
    throw std::invalid_argument(cat("\"", text, "\" is too large (at most 1000000 ", word, ")"));
  }
  return {unit->unit, value, text};
}

std::string duration_text(Duration t) {
  const std::int64_t ns = t.count();
  if (ns % 1'000'000'000 == 0) return std::to_string(ns / 1'000'000'000) + "s";
  if (ns % 1'000'000 == 0) return std::to_string(ns / 1'000'000) + "ms";
  if (ns % 1'000 == 0) return std::to_string(ns / 1'000) + "us";
  return std::to_string(ns) + "ns";
}

Duration parse_duration(const std::string& text) {
  if (text.empty()) throw std::invalid_argument("empty duration");
  if (text.front() == '-') bad_duration(text, "is negative; durations cannot be");
  const auto unit_at = text.find_first_not_of("0123456789.");
  const std::string_view number = std::string_view(text).substr(0, unit_at);
  const std::string_view unit =
      unit_at == std::string::npos ? "" : std::string_view(text).substr(unit_at);
  if (number.empty()) bad_duration(text, "has no number before its unit");
  if (unit.empty()) bad_duration(text, "has no unit (ns, us, ms or s)");
  const auto* scale = std::find_if(std::begin(duration_units), std::end(duration_units),
                                   [&](const UnitScale& u) { return u.unit == unit; });
  if (scale == std::end(duration_units))
    bad_duration(text, cat("has an unknown unit \"", unit, "\" (use ns, us, ms or s)"));
  Duration value{scaled(number, scale->ns, text)};
  if (value > duration_max) bad_duration(text, "is too long (at most 1000000s, about 11.6 days)");
  return value;
}

model::Window parse_window(const std::string& text) {
  const auto dots = text.find("..");
  if (dots == std::string::npos) return model::at_instant(Instant{parse_duration(text)});
  const std::string lo = text.substr(0, dots), hi = text.substr(dots + 2);
  if (lo.empty()) bad_duration(text, "has no start before \"..\"");
  if (hi.empty()) bad_duration(text, "has no end after \"..\"");
  if (hi.find("..") != std::string::npos) bad_duration(text, "has more than one \"..\"");
  model::Window window{Instant{parse_duration(lo)}, Instant{parse_duration(hi)}};
  if (window.hi < window.lo) bad_duration(text, "ends before it starts");
  return window;
}

}  // namespace loopsim::sim
