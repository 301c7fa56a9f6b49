#include "explore/shrink.hpp"

#include <algorithm>
#include <functional>

#include "model/choice.hpp"
#include "scenario/units.hpp"
#include "sim/world.hpp"
#include "target/run.hpp"

namespace loopsim::explore {

namespace {

// Whether the program quit of its own accord in the run `choices` make: exited with a status
// other than 0, or was killed. A program that refuses what is left of its arguments fails for
// another reason than the one shrinking keeps.
bool program_quits(const sim::Scenario& scenario, const std::vector<model::Choice>& choices) {
  model::ReplayChooser chooser(choices);
  try {
    sim::RunResult run = sim::run(scenario, "base", &chooser);
    for (const sim::TraceEvent& event : run.trace.events)
      if (const auto* exit = std::get_if<sim::ev::ProcessExit>(&event); exit != nullptr && (exit->status != 0 || exit->signal != 0))
        return true;
    return false;
  } catch (const std::exception&) {
    return true;
  }
}

std::string window_text(const model::Window& w) {
  return w.fixed() ? sim::instant_text(w.lo) : sim::instant_text(w.lo) + ".." + sim::instant_text(w.hi);
}

}  // namespace

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
                    Budget* budget, std::optional<Counterexample>* found) {
  options.progress = nullptr;
  options.max_executions = std::min<std::uint64_t>(options.max_executions, 2000);
  sim::Shrinks kept;
  std::optional<Counterexample> last;      // the last failing trial's
  std::optional<Counterexample> kept_cex;  // the counterexample of `kept`, once a trial is kept
  auto fails = [&](const sim::Shrinks& trial) {
    if (budget != nullptr && budget->deadline_ns > 0 && budget->wall_ns) {
      if (budget->out()) return false;
      options.time_limit_ns = budget->deadline_ns - budget->wall_ns();
      options.wall_ns = budget->wall_ns;
    }
    // A smaller scenario that cannot run (a target that now dies before any decision, say) is
    // not a smaller failure: the group stays.
    try {
      ExploreResult result = search(sim::with_shrinks(scenario, trial), costs, options);
      if (result.verdict != ExploreResult::Verdict::violated) return false;
      last = result.counterexample;
      return true;
    } catch (const sim::ScenarioError&) {
      return false;
    }
  };
  // Keeps a trial that just failed, with its counterexample.
  auto take = [&](const sim::Shrinks& trial) {
    kept = trial;
    kept_cex = last;
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
      take(trial);
    }
  };
  auto named = [&](const std::string& group) {
    return std::any_of(scenario.expect.begin(), scenario.expect.end(),
                       [&](const sim::Expectation& e) { return e.of == group || e.after == group; });
  };
  for (const auto& group : scenario.clients) {
    auto trial = kept;
    trial.clients[group.name] = 0;
    if (!named(group.name) && scenario.clients.size() > 1 && fails(trial)) take(trial);
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
        take(trial);
        left = std::move(fewer);
      }
    }
  }
  for (std::size_t i = scenario.faults.size(); i-- > 0;) {
    auto trial = kept;
    trial.faults_dropped.insert(trial.faults_dropped.begin(), i);  // kept in the order written
    if (fails(trial)) take(trial);
  }
  // Fewer bytes: each group's request body, none where it still fails, else halved while it does.
  for (const auto& group : scenario.clients) {
    if (group.body <= 0) continue;
    if (auto it = kept.clients.find(group.name); it != kept.clients.end() && it->second == 0) continue;
    auto none = kept;
    none.body[group.name] = 0;
    if (fails(none)) {
      take(none);
      continue;
    }
    for (std::int64_t n = group.body / 2; n > 0; n /= 2) {
      auto trial = kept;
      trial.body[group.name] = n;
      if (!fails(trial)) break;
      take(trial);
    }
  }
  // A window narrowed to one instant is a choice fewer: its first instant, else its last.
  auto narrow = [&](const model::Window& window, const std::function<void(sim::Shrinks&, Instant)>& set) {
    if (window.fixed()) return;
    for (Instant t : {window.lo, window.hi}) {
      auto trial = kept;
      set(trial, t);
      if (fails(trial)) return take(trial);
    }
  };
  for (const auto& group : scenario.clients) {
    if (auto it = kept.clients.find(group.name); it != kept.clients.end() && it->second == 0) continue;
    narrow(group.connect_at, [&](sim::Shrinks& s, Instant t) { s.connect_at[group.name] = t; });
    const auto script = kept.script.find(group.name);
    for (std::size_t k = 0; k < group.requests.size(); ++k) {
      if (script != kept.script.end() && std::find(script->second.begin(), script->second.end(), k) == script->second.end()) continue;
      narrow(group.requests[k].at, [&](sim::Shrinks& s, Instant t) { s.request_at[group.name][k] = t; });
    }
  }
  // A target's arguments, from the last: a flag with its value, else the one alone, where it
  // still fails and the program still runs (not refusing what is left, as a usage error would).
  if (scenario.target && scenario.target->exec.size() > 1) {
    auto quits = [&](const sim::Shrinks& trial) {
      return last.has_value() && program_quits(sim::with_shrinks(scenario, trial), last->choices);
    };
    // Judged against the failing case as it stands: a program that already quits there is not
    // held to running on.
    const bool quit_already = fails(kept) && quits(kept);
    std::vector<std::string> arguments(scenario.target->exec.begin() + 1, scenario.target->exec.end());
    auto flag = [](const std::string& a) { return a.size() > 1 && a[0] == '-'; };
    for (std::size_t k = arguments.size(); k-- > 0;) {
      if (k >= arguments.size()) continue;
      for (std::size_t n : {std::size_t(2), std::size_t(1)}) {
        if (n == 2 && !(k + 1 < arguments.size() && flag(arguments[k]) && !flag(arguments[k + 1]))) continue;
        auto fewer = arguments;
        fewer.erase(fewer.begin() + std::ptrdiff_t(k), fewer.begin() + std::ptrdiff_t(k + n));
        auto trial = kept;
        trial.arguments = fewer;
        if (fails(trial) && (quit_already || !quits(trial))) {
          take(trial);
          arguments = std::move(fewer);
          break;
        }
      }
    }
  }
  if (found != nullptr) *found = kept.empty() ? std::nullopt : kept_cex;
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
    if (auto it = shrinks.body.find(group.name); it != shrinks.body.end())
      add(group.name + ": body " + std::to_string(group.body) + " -> " + std::to_string(it->second) + " bytes");
    if (auto it = shrinks.connect_at.find(group.name); it != shrinks.connect_at.end())
      add(group.name + ": connect_at " + window_text(group.connect_at) + " -> " + sim::instant_text(it->second));
    if (auto it = shrinks.request_at.find(group.name); it != shrinks.request_at.end()) {
      for (const auto& [k, t] : it->second)
        if (k < group.requests.size())
          add(group.name + ": request " + std::to_string(k + 1) + " at " + window_text(group.requests[k].at) + " -> " +
              sim::instant_text(t));
    }
  }
  if (shrinks.arguments && scenario.target) {
    std::string before, after;
    for (std::size_t k = 1; k < scenario.target->exec.size(); ++k) before += (k > 1 ? " " : "") + scenario.target->exec[k];
    for (const std::string& a : *shrinks.arguments) after += (after.empty() ? "" : " ") + a;
    add("arguments: " + before + " -> " + (after.empty() ? std::string("none") : after));
  }
  for (std::size_t i : shrinks.faults_dropped)
    if (i < scenario.faults.size()) add("fault " + std::to_string(i + 1) + " (" + std::string(sim::fault_kind_name(scenario.faults[i].kind)) + ") left out");
  return text.empty() ? "nothing could be removed" : text;
}

}  // namespace loopsim::explore
