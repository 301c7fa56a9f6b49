#include <chrono>
#include <iostream>

#include "cli/commands.hpp"

namespace loopsim::cli {

std::int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::vector<sim::Override> parse_overrides(const std::vector<std::string>& assignments) {
  std::vector<sim::Override> overrides;
  for (const auto& a : assignments) overrides.push_back(sim::parse_override(a));
  return overrides;
}

int report_error(const sim::ScenarioError& e) {
  std::cerr << "error: " << e.what() << '\n';
  if (!e.hint.empty()) std::cerr << "  hint: " << e.hint << '\n';
  return exit_bad_input;
}

}  // namespace loopsim::cli
