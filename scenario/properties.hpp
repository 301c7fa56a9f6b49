// The properties a scenario may expect: the one list of their names, what their bounds measure
// and which keys each needs. The scenario reader checks [[expect]] against it (scenario/scenario.cpp),
// checker::validate what needs the whole scenario, and checker/properties.cpp holds each one's
// evaluator and the events it reads, in the same order (checked when it compiles).
#pragma once

#include <array>
#include <cstdint>
#include <iterator>
#include <string_view>

namespace loopsim::sim {

enum class Measures : std::uint8_t {
  time,     // its bounds are times, or "requests" and "batches" of the measured request cost
  count,    // its bounds are whole numbers
  nothing,  // it takes no bound
};

struct PropertyKind {
  std::string_view name;
  Measures measures;
  bool needs_of = false;   // about one client group: `of`
  bool needs_max = false;
  bool needs_min = false;
};

inline constexpr PropertyKind property_kinds[] = {
    {"answered", Measures::nothing},  // `of` optional: one group's requests only
    {"no_stranded_backlog", Measures::time},  // `max`: the longest idle wait at a door
    {"latency", Measures::time, true, true},
    {"max_gap", Measures::time, true, true},
    {"capacity", Measures::count, false, false, true},
    {"post_latency", Measures::time, false, true},
    {"no_spin", Measures::count},
    {"shutdown_clean", Measures::time},  // `max` optional: the drain's time
    {"batch_bound", Measures::count},
    {"liveness", Measures::nothing},
};
inline constexpr std::size_t property_count = std::size(property_kinds);

inline constexpr std::array<std::string_view, property_count> property_names = [] {
  std::array<std::string_view, property_count> names{};
  for (std::size_t i = 0; i < property_count; ++i) names[i] = property_kinds[i].name;
  return names;
}();

// The property named `name`, or nullptr.
constexpr const PropertyKind* property_kind(std::string_view name) {
  for (const PropertyKind& kind : property_kinds)
    if (kind.name == name) return &kind;
  return nullptr;
}

}  // namespace loopsim::sim
