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
};

// The base arm holds when every property held. An arm that expects violations holds when
// exactly the properties it names were violated (each at least once) and nothing else was:
// the sabotage was caught, and by the property that guards it.
ArmJudgement judge(const std::vector<Verdict>& verdicts,
                   const std::vector<std::string>& expect_violated);

}  // namespace loopsim::checker
