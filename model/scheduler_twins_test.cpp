// Twins at a same-instant choice (model::TwinClass) and their keys (model::TwinKey): a key only
// spares the work of computing classes; the alternatives offered are those the classes alone give.
#include <catch2/catch.hpp>

#include <vector>

#include "model/scheduler.hpp"

namespace {

using namespace loopsim;
using namespace loopsim::model;

struct Run {
  std::vector<std::uint32_t> options;  // of the first choice
  int classes_computed = 0;            // before the first choice was asked
};

struct Counting final : Chooser {
  explicit Counting(const int& classes) : classes(classes) {}
  const int& classes;
  std::vector<std::uint32_t> options;
  int classes_at_first = -1;
  std::uint32_t choose(ChoiceKind, std::uint32_t n) override {
    if (options.empty()) classes_at_first = classes;
    options.push_back(n);
    return 0;
  }
};

// Six happenings about subjects 0..5 at one instant. Subjects 0 and 1 are twins; the others
// have classes of their own.
Run first_choice(const TwinKey& key) {
  Run run;
  Counting chooser(run.classes_computed);
  Scheduler scheduler(&chooser);
  scheduler.set_twins(
      [&run](const Tag& tag, std::uint64_t) -> std::uint64_t {
        ++run.classes_computed;
        return tag.subject < 2 ? 1 : 10 + tag.subject;
      },
      key);
  for (std::uint32_t subject = 0; subject < 6; ++subject) {
    scheduler.at(Nanos(5), [] {}, tag(Happening::client_read, subject));
  }
  scheduler.run_until(Nanos(6));  // until is exclusive: what is due at 5 runs
  REQUIRE(!chooser.options.empty());
  run.options = {chooser.options.front()};
  run.classes_computed = chooser.classes_at_first;
  return run;
}

}  // namespace

TEST_CASE("twin keys: the classes alone decide the alternatives, a key only spares computing them") {
  const Run without_key = first_choice({});
  CHECK(without_key.options == std::vector<std::uint32_t>{5});  // the twins are one alternative
  CHECK(without_key.classes_computed == 6);

  // A key the twins share and the others do not: only the twins' classes are computed.
  const Run keyed = first_choice([](const Tag& tag) -> std::uint64_t { return tag.subject < 2 ? 7 : 100 + tag.subject; });
  CHECK(keyed.options == without_key.options);
  CHECK(keyed.classes_computed == 2);

  // A key of 0 says "no twin": every happening is its own alternative.
  CHECK(first_choice([](const Tag&) -> std::uint64_t { return 0; }).options == std::vector<std::uint32_t>{6});

  // A key that tells twins apart breaks the promise (equal classes, equal keys), and it shows:
  // the twins are offered twice. Canonical::twin_key must never do this.
  const Run wrong = first_choice([](const Tag& tag) -> std::uint64_t { return 100 + tag.subject; });
  CHECK(wrong.options == std::vector<std::uint32_t>{6});
  CHECK(wrong.classes_computed == 0);
}
