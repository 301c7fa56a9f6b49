#include "explore/shrink.hpp"

#include <algorithm>
#include <functional>

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

sim::Shrinks shrink(const sim::Scenario& scenario, const checker::Costs& costs, ExploreOptions options,
                    Budget* budget) {
  options.progress = nullptr;
  options.max_executions = std::min<std::uint64_t>(options.max_executions, 2000);
  sim::Shrinks kept;
  auto fails = [&](const sim::Shrinks& trial) {
    if (budget != nullptr && budget->deadline_ns > 0 && budget->wall_ns) {
      if (budget->out()) return false;
      options.time_limit_ns = budget->deadline_ns - budget->wall_ns();
      options.wall_ns = budget->wall_ns;
    }
    // A smaller scenario that cannot run (a target that now dies before any decision, say) is
    // not a smaller failure: the group stays.
    try {
      return search(sim::with_shrinks(scenario, trial), costs, options).verdict == ExploreResult::Verdict::violated;
    } catch (const sim::ScenarioError&) {
      return false;
    }
  };
  // From n down while it still fails: half of it, else one less (`set` puts a trial count in).
  auto descend = [&](std::int64_t n, const std::function<void(sim::Shrinks&, std::int64_t)>& set) {
    while (n > 1) {
      auto trial = kept;
      set(trial, n / 2);
      if (!fails(trial)) {
        set(trial, n - 1);
        if (!fails(trial)) break;
        n = n - 1;
      } else {
        n = n / 2;
      }
      kept = trial;
    }
  };
  auto named = [&](const std::string& group) {
    return std::any_of(scenario.expect.begin(), scenario.expect.end(),
                       [&](const sim::Expectation& e) { return e.of == group || e.after == group; });
  };
  for (const auto& group : scenario.clients) {
    auto trial = kept;
    trial.clients[group.name] = 0;
    if (!named(group.name) && scenario.clients.size() > 1 && fails(trial)) kept = trial;
  }
  for (const auto& group : scenario.clients) {
    if (kept.clients.count(group.name)) continue;  // removed
    descend(group.count, [&](sim::Shrinks& s, std::int64_t n) { s.clients[group.name] = int(n); });
  }
  for (const auto& group : scenario.clients) {
    if (auto it = kept.clients.find(group.name); it != kept.clients.end() && it->second == 0) continue;
    if (group.closed_requests > 1) {
      descend(group.closed_requests, [&](sim::Shrinks& s, std::int64_t n) { s.closed_requests[group.name] = n; });
      continue;
    }
    if (group.requests.size() < 2) continue;
    std::vector<std::size_t> left(group.requests.size());
    for (std::size_t k = 0; k < left.size(); ++k) left[k] = k;
    for (std::size_t k = left.size(); k-- > 0 && left.size() > 1;) {
      auto trial = kept;
      auto fewer = left;
      fewer.erase(fewer.begin() + std::ptrdiff_t(k));
      trial.script[group.name] = fewer;
      if (fails(trial)) {
        kept = trial;
        left = std::move(fewer);
      }
    }
  }
  return kept;
}

std::string describe(const sim::Scenario& scenario, const sim::Shrinks& shrinks) {
  std::string text;
  auto add = [&text](const std::string& part) { text += (text.empty() ? "" : "; ") + part; };
  for (const auto& group : scenario.clients) {
    if (auto it = shrinks.clients.find(group.name); it != shrinks.clients.end()) {
      if (it->second == 0) {
        add(group.name + " removed");
        continue;
      }
      add(group.name + ": " + std::to_string(group.count) + " -> " + std::to_string(it->second) + " clients");
    }
    if (auto it = shrinks.closed_requests.find(group.name); it != shrinks.closed_requests.end())
      add(group.name + ": " + std::to_string(group.closed_requests) + " -> " + std::to_string(it->second) + " requests");
    if (auto it = shrinks.script.find(group.name); it != shrinks.script.end())
      add(group.name + ": " + std::to_string(group.requests.size()) + " -> " + std::to_string(it->second.size()) + " requests");
  }
  return text.empty() ? "nothing could be removed" : text;
}

}  // namespace loopsim::explore
