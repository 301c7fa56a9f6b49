#include "model/choice.hpp"

#include <catch2/catch.hpp>

using namespace loopsim::model;

TEST_CASE("a chooser rebuilt from its portable text decides the same, and text that is not one is refused") {
  ReplayChooser original({Choice{ChoiceKind::order, 3, 2}, Choice{ChoiceKind::slack, 2, 1}});
  auto rebuilt = rebuild_chooser(original.portable());
  REQUIRE(rebuilt != nullptr);
  CHECK(rebuilt->choose(ChoiceKind::order, 3) == 2);
  CHECK(rebuilt->choose(ChoiceKind::slack, 2) == 1);
  CHECK(rebuild_chooser("replay 5 2 1") != nullptr);  // preempt, the sixth
  // A kind past the known six, a pick outside its options, or junk: not a recording.
  for (const char* bad : {"replay 6 2 0", "replay -1 2 0", "replay 0 2 2", "replay 0 2 1 x", "nonsense 1"}) {
    INFO(bad);
    CHECK(rebuild_chooser(bad) == nullptr);
  }
}
