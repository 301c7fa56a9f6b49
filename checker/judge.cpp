#include "checker/judge.hpp"

#include <algorithm>

namespace loopsim::checker {

ArmJudgement judge(const std::vector<Verdict>& verdicts,
                   const std::vector<std::string>& expect_violated, bool cut) {
  ArmJudgement j;
  auto expected = [&](const std::string& p) {
    return std::find(expect_violated.begin(), expect_violated.end(), p) != expect_violated.end();
  };
  for (const Verdict& v : verdicts) {
    if (!v.decided) {
      if (std::find(j.undecided.begin(), j.undecided.end(), v.property) == j.undecided.end()) j.undecided.push_back(v.property);
      continue;
    }
    if (!v.held && !expected(v.property)) j.unexpected_violations.push_back(v.property);
  }
  for (const std::string& p : expect_violated) {
    bool caught = std::any_of(verdicts.begin(), verdicts.end(),
                              [&](const Verdict& v) { return v.property == p && !v.held; });
    bool open = std::any_of(verdicts.begin(), verdicts.end(),
                            [&](const Verdict& v) { return v.property == p && !v.decided; });
    if (!caught && !open) j.missed_violations.push_back(p);
  }
  j.held = j.unexpected_violations.empty() && j.missed_violations.empty();
  if (expect_violated.empty()) {
    j.limit = !j.undecided.empty() || (cut && verdicts.empty());
  } else {
    j.limit = std::any_of(expect_violated.begin(), expect_violated.end(), [&](const std::string& p) {
      return std::find(j.undecided.begin(), j.undecided.end(), p) != j.undecided.end();
    });
  }
  return j;
}

}  // namespace loopsim::checker
