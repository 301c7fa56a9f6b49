#include "explore/shrink.hpp"

#include <algorithm>

namespace loopsim::explore {

std::vector<model::Choice> minimize(const sim::Scenario& scenario, const checker::Costs& costs,
                                    std::vector<model::Choice> choices, Budget* budget) {
  if (judge_choices(scenario, costs, choices).violated.empty()) return choices;  // liveness only
  for (std::size_t i = choices.size(); i-- > 0;) {
    if (choices[i].pick == 0) continue;
    if (budget != nullptr && budget->out()) break;
    auto trial = choices;
    trial[i].pick = 0;
    if (!judge_choices(scenario, costs, trial).violated.empty()) choices = std::move(trial);
  }
  return choices;
}

sim::Scenario with_counts(const sim::Scenario& scenario, const std::map<std::string, int>& counts) {
  sim::Scenario s = scenario;
  std::erase_if(s.clients, [&](const sim::ClientGroup& g) {
    auto it = counts.find(g.name);
    return it != counts.end() && it->second == 0;
  });
  for (auto& g : s.clients) {
    if (auto it = counts.find(g.name); it != counts.end()) g.count = it->second;
  }
  return s;
}

std::map<std::string, int> shrink(const sim::Scenario& scenario, const checker::Costs& costs,
                                  ExploreOptions options, Budget* budget) {
  options.progress = nullptr;
  options.max_executions = std::min<std::uint64_t>(options.max_executions, 2000);
  std::map<std::string, int> counts;
  auto fails = [&](const std::map<std::string, int>& trial) {
    if (budget != nullptr && budget->deadline_ns > 0 && budget->wall_ns) {
      if (budget->out()) return false;
      options.time_limit_ns = budget->deadline_ns - budget->wall_ns();
      options.wall_ns = budget->wall_ns;
    }
    // A smaller scenario that cannot run (a target that now dies before any decision, say) is
    // not a smaller failure: the group stays.
    try {
      return search(with_counts(scenario, trial), costs, options).verdict == ExploreResult::Verdict::violated;
    } catch (const sim::ScenarioError&) {
      return false;
    }
  };
  auto named = [&](const std::string& group) {
    return std::any_of(scenario.expect.begin(), scenario.expect.end(),
                       [&](const sim::Expectation& e) { return e.of == group || e.after == group; });
  };
  for (const auto& group : scenario.clients) {
    auto trial = counts;
    trial[group.name] = 0;
    if (!named(group.name) && scenario.clients.size() > 1 && fails(trial)) counts = trial;
  }
  for (const auto& group : scenario.clients) {
    if (counts.count(group.name)) continue;  // removed
    int n = group.count;
    while (n > 1) {
      auto trial = counts;
      trial[group.name] = n / 2;
      if (!fails(trial)) {
        trial[group.name] = n - 1;
        if (!fails(trial)) break;
      }
      counts = trial;
      n = trial[group.name];
    }
  }
  return counts;
}

std::string describe(const sim::Scenario& scenario, const std::map<std::string, int>& counts) {
  std::string text;
  for (const auto& group : scenario.clients) {
    auto it = counts.find(group.name);
    if (it == counts.end()) continue;
    if (!text.empty()) text += "; ";
    text += it->second == 0 ? group.name + " removed"
                            : group.name + ": " + std::to_string(group.count) + " -> " +
                                  std::to_string(it->second) + " clients";
  }
  return text.empty() ? "nothing could be removed" : text;
}

}  // namespace loopsim::explore
