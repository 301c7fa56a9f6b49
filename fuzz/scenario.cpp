// Fuzzes the scenario loader as `loopsim run FILE --set key=value...` uses it:
// sim::parse_override on each assignment, then sim::parse_scenario (which converts the base and
// every arm, overrides applied), then sim::pinned_scenario and parse_scenario again on what it
// wrote, as `loopsim explore` writes a counterexample and `loopsim run` replays it. No
// simulation runs.
//
// Input: scenario text (TOML); if a line reads exactly "--set", the lines after it are the
// assignments, one a line (at most 16).
//
// Expected: sim::ScenarioError, with a message and hint of one line each. A finding: any other
// exception escaping, a crash, a sanitizer report, an override whose value_column does not point
// at its value, or a pinned scenario that does not load again with the same choices.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/finding.hpp"
#include "scenario/scenario.hpp"

namespace {

using namespace loopsim;

constexpr std::size_t overrides_max = 16;
constexpr std::size_t pinned_arms_max = 4;  // each one converts the whole text again
const std::string file = "fuzz.toml";

void check_error(const sim::ScenarioError& e) {
  if (!fuzz::one_line(e.what()) || !fuzz::one_line(e.hint)) {
    fuzz::finding(std::string("a ScenarioError of more than one line: ") + e.what());
  }
}

// An override's value_column is where its value starts in the assignment (1-based).
void check_override(const std::string& assignment, const sim::Override& o) {
  const std::size_t at = o.value_column - 1;
  if (o.value_column == 0 || at >= assignment.size() || assignment.compare(at, o.value.size(), o.value) != 0) {
    fuzz::finding("value_column " + std::to_string(o.value_column) + " does not point at \"" + o.value +
                  "\" in \"" + assignment + "\"");
  }
}

// The counterexample `arm` would give: it must load, with the choices it pinned.
void check_pinned(const std::string& text, const sim::Arm& arm, const std::vector<sim::Override>& overrides,
                  const std::vector<model::Choice>& choices) {
  std::string pinned;
  try {
    pinned = sim::pinned_scenario(text, file, arm, overrides, choices);
  } catch (const sim::ScenarioError& e) {
    // The arm converted in parse_scenario; writing it out must not fail.
    fuzz::finding(std::string("pinned_scenario failed for arm \"") + arm.name + "\": " + e.what());
  }
  sim::Scenario again;
  try {
    again = sim::parse_scenario(pinned, file);
  } catch (const sim::ScenarioError& e) {
    fuzz::finding(std::string("the pinned scenario of arm \"") + arm.name + "\" does not load: " + e.what() +
                  "\n--- pinned:\n" + pinned);
  }
  bool same = again.choices.size() == choices.size();
  for (std::size_t i = 0; same && i < choices.size(); ++i) {
    same = again.choices[i].kind == choices[i].kind && again.choices[i].options == choices[i].options &&
           again.choices[i].pick == choices[i].pick;
  }
  if (!same) fuzz::finding("the pinned scenario of arm \"" + arm.name + "\" reads back other choices");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input = fuzz::text_of(data, size);
  std::string text(input);
  std::vector<std::string> assignments;
  for (std::size_t start = 0; start < input.size();) {
    std::size_t end = input.find('\n', start);
    if (input.substr(start, end - start) == "--set") {
      text = std::string(input.substr(0, start));
      if (end != std::string_view::npos) {
        for (std::string_view line : fuzz::lines_of(input.substr(end + 1))) assignments.emplace_back(line);
      }
      break;
    }
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  if (assignments.size() > overrides_max) assignments.resize(overrides_max);

  std::vector<sim::Override> overrides;
  for (const std::string& assignment : assignments) {
    try {
      sim::Override o = sim::parse_override(assignment);
      check_override(assignment, o);
      overrides.push_back(std::move(o));
    } catch (const sim::ScenarioError& e) {
      check_error(e);  // the CLI stops here; go on with the rest to reach the loader
    }
  }

  sim::Scenario scenario;
  try {
    scenario = sim::parse_scenario(text, file, overrides);
  } catch (const sim::ScenarioError& e) {
    check_error(e);
    return 0;
  }
  check_pinned(text, sim::Arm{"base", {}, {}}, overrides, scenario.choices);
  for (std::size_t i = 0; i < scenario.arms.size() && i < pinned_arms_max; ++i) {
    check_pinned(text, scenario.arms[i], overrides, scenario.choices);
  }
  return 0;
}
