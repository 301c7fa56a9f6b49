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
// With `kept`, lasting keys are kept (a key epoch that never moves).
Run first_choice(const TwinKey& key, bool kept = false) {
  Run run;
  Counting chooser(run.classes_computed);
  Scheduler scheduler(&chooser);
  scheduler.set_twins(
      [&run](const Tag& tag, std::uint64_t) -> std::uint64_t {
        ++run.classes_computed;
        return tag.subject < 2 ? 1 : 10 + tag.subject;
      },
      key, kept ? TwinKeyEpoch([] { return std::uint64_t(1); }) : TwinKeyEpoch{});
  for (std::uint32_t subject = 0; subject < 6; ++subject) {
    scheduler.at(Instant{Duration(5)}, [] {}, tag(Happening::client_read, subject));
  }
  scheduler.run_until(Instant{Duration(6)});  // until is exclusive: what is due at 5 runs
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
  const Run keyed = first_choice([](const Tag& tag) -> TwinKeyed { return {tag.subject < 2 ? 7u : 100u + tag.subject}; });
  CHECK(keyed.options == without_key.options);
  CHECK(keyed.classes_computed == 2);

  // A key of 0 says "no twin": every happening is its own alternative.
  CHECK(first_choice([](const Tag&) -> TwinKeyed { return {0}; }).options == std::vector<std::uint32_t>{6});

  // A key that tells twins apart breaks the promise (equal classes, equal keys), and it shows:
  // the twins are offered twice. Canonical::twin_key must never do this.
  const Run wrong = first_choice([](const Tag& tag) -> TwinKeyed { return {100u + tag.subject}; });
  CHECK(wrong.options == std::vector<std::uint32_t>{6});
  CHECK(wrong.classes_computed == 0);
}

TEST_CASE("twin keys: kept keys, counted as happenings come and go, find the twins a fresh scan finds") {
  // The twins' shared key is counted as it is filed: the classes are computed, the twins are one.
  for (bool lasting : {true, false}) {
    INFO("lasting " << lasting);
    const Run keyed = first_choice(
        [lasting](const Tag& tag) -> TwinKeyed { return {tag.subject < 2 ? 7u : 100u + tag.subject, lasting}; }, true);
    CHECK(keyed.options == std::vector<std::uint32_t>{5});
    CHECK(keyed.classes_computed == 2);
  }
  // A kept key shared with one that does not last (a twin not yet accepted, say) is found too.
  const Run mixed = first_choice(
      [](const Tag& tag) -> TwinKeyed { return {tag.subject < 2 ? 7u : 100u + tag.subject, tag.subject != 1}; }, true);
  CHECK(mixed.options == std::vector<std::uint32_t>{5});
  // No key shared: no class is computed, every happening is its own alternative.
  const Run own = first_choice([](const Tag& tag) -> TwinKeyed { return {100u + tag.subject, true}; }, true);
  CHECK(own.options == std::vector<std::uint32_t>{6});
  CHECK(own.classes_computed == 0);
}

namespace {

// Six happenings at one instant, each of its own class; `moves_at` (a step number, 0: never)
// moves the key epoch as that step runs. Returns how many keys were taken.
int keys_taken(bool keep, bool lasting, int moves_at) {
  const int no_classes = 0;
  Counting chooser(no_classes);
  Scheduler scheduler(&chooser);
  int taken = 0, steps = 0;
  std::uint64_t epoch = 1;
  scheduler.set_twins([](const Tag& tag, std::uint64_t) -> std::uint64_t { return 10 + tag.subject; },
                      [&taken, lasting](const Tag& tag) -> TwinKeyed {
                        ++taken;
                        return {100u + tag.subject, lasting};
                      },
                      keep ? TwinKeyEpoch([&epoch] { return epoch; }) : TwinKeyEpoch{});
  for (std::uint32_t subject = 0; subject < 6; ++subject) {
    scheduler.at(Instant{Duration(5)}, [&] { if (++steps == moves_at) ++epoch; }, tag(Happening::client_read, subject));
  }
  scheduler.run_until(Instant{Duration(6)});
  return taken;
}

}  // namespace

TEST_CASE("twin keys: a lasting key is kept with its happening until the key epoch moves") {
  // Five choices, among 6, 5, 4, 3 and 2 happenings: a key each time without keeping.
  CHECK(keys_taken(false, true, 0) == 6 + 5 + 4 + 3 + 2);
  CHECK(keys_taken(true, false, 0) == 6 + 5 + 4 + 3 + 2);  // a key that does not last is never kept
  CHECK(keys_taken(true, true, 0) == 6);                   // kept: one key a happening
  // The epoch moves as the second step runs: the four left are keyed afresh for the third choice.
  CHECK(keys_taken(true, true, 2) == 6 + 4);
}
