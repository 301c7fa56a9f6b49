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
// are dropped, the others halved (then trimmed by one) while it fails; then each remaining
// group's requests: a closed loop's count halved or trimmed by one while it fails (the fewest
// that still fail, where more requests fail more), a script's requests each left out, the last
// first, where it still fails without it; then each fault left out, the last first; then each
// group's request body dropped, else halved while it fails; then each window narrowed to one
// instant, its first and else its last, where it still fails; then a target's arguments left
// out (a flag with its value, else one alone) where it still fails and the program does not
// quit. Returns
// what changed (sim::Shrinks). Each trial search gets what is left of `budget`; a trial cut
// short by it counts as not failing, so what it returns always fails. `found`, when given, gets
// the counterexample its search found for what it returns (unset when nothing was removed): the
// smallest case's, written without another search.
sim::Shrinks shrink(const sim::Scenario& scenario, const checker::Costs& costs, ExploreOptions options,
                    Budget* budget = nullptr, std::optional<Counterexample>* found = nullptr);

// "blocker removed; burst: 5 -> 3 clients; pipeliner: 20 -> 16 requests".
std::string describe(const sim::Scenario& scenario, const sim::Shrinks& shrinks);

}  // namespace loopsim::explore
