// Making a counterexample small enough for a person to follow: fewer decisions away from the
// natural ones, and fewer clients.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "explore/explorer.hpp"

namespace loopsim::explore {

// Natural alternatives wherever they keep the failure (every property in `violated` still
// fails): fewer decisions for a person to follow. Choices that only a liveness failure needs
// are kept as they are.
std::vector<model::Choice> minimize(const sim::Scenario& scenario, const checker::Costs& costs,
                                    std::vector<model::Choice> choices);

// Shrinks the scenario while the explorer still finds a failure: groups no expectation names
// are dropped, the others halved (then trimmed by one) while it fails. Returns the new counts
// by group (0: removed); groups left as they were are absent.
std::map<std::string, int> shrink(const sim::Scenario& scenario, const checker::Costs& costs,
                                  ExploreOptions options);

// The scenario with those counts applied.
sim::Scenario with_counts(const sim::Scenario& scenario, const std::map<std::string, int>& counts);

// "blocker removed; burst: 5 -> 3 clients".
std::string describe(const sim::Scenario& scenario, const std::map<std::string, int>& counts);

}  // namespace loopsim::explore
