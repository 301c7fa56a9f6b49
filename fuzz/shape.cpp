// Fuzzes the variation of `loopsim generate --shape FILE`: explore::shaped_text on a scenario
// file, as each run of a shaped search redraws it (how many clients each group has, when the
// workload comes, at what rate each group connects, when each fault and action happens and
// whether it does). No simulation runs.
//
// Input: scenario text (TOML), the same as the scenario harness's.
//
// Expected: a shape that does not load is a sim::ScenarioError of one line. A finding: any other
// exception escaping, a crash, a sanitizer report, a shape that loads but whose variation throws
// or does not load again (generate would blame its own run on the user's file), or two
// variations of one run that differ (a run must be the same text whenever it is drawn).
#include <cstddef>
#include <cstdint>
#include <string>

#include "explore/shape_variation.hpp"
#include "fuzz/finding.hpp"
#include "scenario/scenario.hpp"

namespace {

using namespace loopsim;

constexpr std::uint64_t runs = 3;
const std::string file = "shape.toml";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(fuzz::text_of(data, size));
  try {
    (void)sim::parse_scenario(text, file);
  } catch (const sim::ScenarioError& e) {
    if (!fuzz::one_line(e.what()) || !fuzz::one_line(e.hint)) fuzz::finding(std::string("a ScenarioError of more than one line: ") + e.what());
    return 0;
  }
  for (std::uint64_t run = 0; run < runs; ++run) {
    std::string varied;
    try {
      varied = explore::shaped_text(text, file, 1, run);
    } catch (const sim::ScenarioError& e) {
      fuzz::finding("a shape that loads, varied for run " + std::to_string(run) + ", throws: " + e.what());
    }
    try {
      (void)sim::parse_scenario(varied, "varied.toml");
    } catch (const sim::ScenarioError& e) {
      fuzz::finding("run " + std::to_string(run) + "'s variation does not load: " + e.what() + "\n--- varied:\n" + varied);
    }
    if (explore::shaped_text(text, file, 1, run) != varied) fuzz::finding("run " + std::to_string(run) + " varies otherwise when drawn again");
  }
  return 0;
}
