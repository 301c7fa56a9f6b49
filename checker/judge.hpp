// Judging one arm of a scenario from its property verdicts.
#pragma once

#include <string>
#include <vector>

#include "checker/properties.hpp"

namespace loopsim::checker {

struct ArmJudgement {
  bool held = true;
  std::vector<std::string> unexpected_violations;  // violated, but not expected to be
  std::vector<std::string> missed_violations;      // expected to be violated, but held
  // Undecided (the run stopped before its horizon, and its trace so far cannot say): an arm
  // that holds on everything decided but leaves one undecided is a limit, not a pass.
  std::vector<std::string> undecided;
  // Held on what was decided, but a limit left it unproven: the base arm (or one that expects
  // nothing) with anything undecided, or a run cut short with nothing to judge; an arm that
  // expects violations with one of them undecided.
  bool limit = false;
  bool limited() const { return held && limit; }
};

// Judged on the decided verdicts only; the undecided are listed apart. The base arm holds when
// every property held. An arm that expects violations holds when
// exactly the properties it names were violated (each at least once) and nothing else was:
// the sabotage was caught, and by the property that guards it.
// `cut`: the run stopped before its horizon (Trace::cut).
ArmJudgement judge(const std::vector<Verdict>& verdicts,
                   const std::vector<std::string>& expect_violated, bool cut = false);

}  // namespace loopsim::checker
