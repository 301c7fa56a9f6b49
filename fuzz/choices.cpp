// Fuzzes the three readers of pinned choices (model/choice.hpp):
//   - a recording, as `loopsim run --replay TRACE` reads it: sim::read_recording (input that
//     starts with '{': a JSON Lines trace; the reader takes a path, so the input is written to
//     a memory file, read as /proc/self/fd/N);
//   - a chooser's portable text, as a target's process rebuilds the parent's chooser under the
//     POSIX seam: model::rebuild_chooser (input that starts with "replay" or "seeded"); the
//     chooser is then asked a few choices and for its first divergence;
//   - a scenario's `choices = [...]` list (any other input: each line one string of the list,
//     in a scenario that has nothing else), read by sim::parse_scenario.
// Choices read from a recording or a list are pinned into a counterexample
// (sim::pinned_scenario), which must load again with the same choices.
//
// Expected: sim::ScenarioError. A finding: any other exception escaping, a crash, a sanitizer
// report, a choice read with its pick outside [0, options), or a counterexample that does not
// load again with the same choices.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz/finding.hpp"
#include "model/choice.hpp"
#include "scenario/scenario.hpp"
#include "trace/replay.hpp"

namespace {

using namespace loopsim;

const std::string file = "fuzz.toml";

bool same(const std::vector<model::Choice>& a, const std::vector<model::Choice>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].kind != b[i].kind || a[i].options != b[i].options || a[i].pick != b[i].pick) return false;
  }
  return true;
}

// Every reader promises a pick in [0, options); a counterexample pinning them must load again.
void check_choices(const char* reader, const std::vector<model::Choice>& choices) {
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (choices[i].pick >= choices[i].options) {
      fuzz::finding(std::string(reader) + " read choice " + std::to_string(i + 1) + " as " +
                    model::choice_text(choices[i]) + ": its pick is not below its options");
    }
  }
  std::string pinned;
  sim::Scenario again;
  try {
    pinned = sim::pinned_scenario("", file, sim::Arm{"base", {}, {}}, {}, choices);
    again = sim::parse_scenario(pinned, file);
  } catch (const sim::ScenarioError& e) {
    fuzz::finding(std::string("the counterexample pinning what ") + reader + " read does not load: " + e.what());
  }
  if (!same(again.choices, choices)) {
    fuzz::finding(std::string("the counterexample pinning what ") + reader + " read reads back other choices");
  }
}

// read_recording takes a path: the input goes to a memory file (a regular file, which
// open_input asks for) of this process's own, rewritten for each input.
void recording(std::string_view text) {
  static const int fd = ::memfd_create("recording.jsonl", 0);
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (fd < 0 || ::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    std::perror("fuzz_choices: the memory file");  // the harness's failure, not the reader's
    std::abort();
  }
  sim::Recording r;
  try {
    r = sim::read_recording(path);
  } catch (const sim::ScenarioError&) {
    return;
  }
  check_choices("read_recording", r.choices);
}

void portable(std::string_view text) {
  std::unique_ptr<model::Chooser> chooser = model::rebuild_chooser(std::string(text));
  if (chooser == nullptr) return;
  // A run asks for some choices; its record may fit or not.
  constexpr model::ChoiceKind kinds[] = {model::ChoiceKind::order, model::ChoiceKind::fault, model::ChoiceKind::slack};
  for (std::uint32_t i = 0; i < 8; ++i) {
    std::uint32_t options = 2 + i % 3;
    if (chooser->choose(kinds[i % 3], options) >= options) fuzz::finding("a chooser picked past its options");
  }
  chooser->portable();
  if (auto* replay = dynamic_cast<model::ReplayChooser*>(chooser.get())) replay->first_divergence();
}

// Each line a string of the list, written as TOML by toml_strings, so that the fuzzer works on
// the choices and not on TOML syntax.
void scenario_list(std::string_view text) {
  std::vector<std::string> items;
  for (std::string_view line : fuzz::lines_of(text)) items.emplace_back(line);
  sim::Scenario s;
  try {
    s = sim::parse_scenario("choices = " + sim::toml_strings(items) + "\n", file);
  } catch (const sim::ScenarioError&) {
    return;
  }
  check_choices("the scenario's choices list", s.choices);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::text_of(data, size);
  if (text.starts_with("{")) {
    recording(text);
  } else if (text.starts_with("replay") || text.starts_with("seeded")) {
    portable(text);
  } else {
    scenario_list(text);
  }
  return 0;
}
