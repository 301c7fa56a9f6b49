// Making a counterexample small enough for a person to follow: fewer decisions away from the
// natural ones, and fewer clients.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "explore/explorer.hpp"

namespace loopsim::explore {

// Natural alternatives wherever they keep the failure (every property in `violated` still
// fails): fewer decisions for a person to follow. Choices that only a liveness failure needs
// are kept as they are.
// `deadline` (a reading of `wall_ns`; unset: none) ends it early, with `cut` set: what it
// holds then still fails.
struct Budget {
  std::function<std::int64_t()> wall_ns;
  std::int64_t deadline_ns = 0;  // 0: none
  bool cut = false;              // it ran out
  bool out() {
    if (deadline_ns <= 0 || !wall_ns || wall_ns() < deadline_ns) return false;
    return cut = true;
  }
};
std::vector<model::Choice> minimize(const sim::Scenario& scenario, const checker::Costs& costs,
                                    std::vector<model::Choice> choices, Budget* budget = nullptr);

// Shrinks the scenario while the explorer still finds a failure: groups no expectation names
// are dropped, the others halved (then trimmed by one) while it fails. Returns the new counts
// by group (0: removed); groups left as they were are absent. Each trial search gets what is
// left of `budget`; a trial cut short by it counts as not failing.
std::map<std::string, int> shrink(const sim::Scenario& scenario, const checker::Costs& costs,
                                  ExploreOptions options, Budget* budget = nullptr);

// The scenario with those counts applied.
sim::Scenario with_counts(const sim::Scenario& scenario, const std::map<std::string, int>& counts);

// "blocker removed; burst: 5 -> 3 clients".
std::string describe(const sim::Scenario& scenario, const std::map<std::string, int>& counts);

}  // namespace loopsim::explore
