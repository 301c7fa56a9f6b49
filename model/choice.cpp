#include "model/choice.hpp"

#include <algorithm>
#include <sstream>

#include "base/assert.hpp"

namespace loopsim::model {

namespace {
constexpr const char* kind_names[] = {"order", "fault", "slack", "land", "take", "preempt"};
static_assert(std::size(kind_names) == choice_kinds);
}

const char* choice_kind_name(ChoiceKind kind) { return kind_names[std::size_t(kind)]; }

std::optional<ChoiceKind> choice_kind_from_name(const std::string& name) {
  for (std::size_t i = 0; i < std::size(kind_names); ++i) {
    if (name == kind_names[i]) return ChoiceKind(i);
  }
  return std::nullopt;
}

std::uint64_t SeededChooser::next() { return splitmix64(state_); }


std::uint32_t SeededChooser::choose(ChoiceKind kind, std::uint32_t options) {
  LOOPSIM_ASSERT_OP(options, >=, 2u);
  // A send buffer grows as Linux's autotuning grows it on loopback (K11): a seeded run takes
  // what production does; explore tries the other.
  if (kind == ChoiceKind::take) return 0;
  // Rejection sampling: no modulo bias.
  std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % options);
  std::uint64_t x = next();
  while (x >= limit) x = next();
  return std::uint32_t(x % options);
}

std::string ReplayChooser::portable() const {
  if (next_ != 0) return {};  // only a fresh one: its divergences are counted here
  std::string text = "replay";
  for (const Choice& c : record_) {
    text += " " + std::to_string(int(c.kind)) + " " + std::to_string(c.options) + " " + std::to_string(c.pick);
  }
  return text;
}

std::unique_ptr<Chooser> rebuild_chooser(const std::string& text) {
  std::istringstream in(text);
  std::string what;
  in >> what;
  if (what == "seeded") {
    std::uint64_t state = 0;
    if (in >> state) return std::make_unique<SeededChooser>(state);
    return nullptr;
  }
  if (what != "replay") return nullptr;
  std::vector<Choice> record;
  int kind = 0;
  std::uint32_t options = 0, pick = 0;
  while (in >> kind >> options >> pick) {
    if (kind < 0 || std::size_t(kind) >= std::size(kind_names) || pick >= options) return nullptr;  // not a choice
    record.push_back(Choice{ChoiceKind(kind), options, pick});
  }
  if (!in.eof()) return nullptr;  // something after the last whole choice
  return std::make_unique<ReplayChooser>(std::move(record));
}

std::string choice_text(const Choice& choice) {
  return std::string(choice_kind_name(choice.kind)) + ":" + std::to_string(choice.options) + ":" +
         std::to_string(choice.pick);
}

std::uint32_t ReplayChooser::choose(ChoiceKind kind, std::uint32_t options) {
  std::size_t at = next_++;
  if (at < record_.size()) {
    const Choice& c = record_[at];
    if (c.kind == kind && c.options == options && c.pick < options) return c.pick;
  }
  if (divergences_++ == 0) {
    first_ = "choice " + std::to_string(at + 1) + " of " + std::to_string(record_.size());
    first_ += at < record_.size() ? " is " + choice_text(record_[at]) : std::string(" is past the record");
    first_ += ", but the run asked for " + std::string(choice_kind_name(kind)) + " among " +
              std::to_string(options);
  }
  return 0;
}

bool ReplayChooser::explores_windows() const {
  return std::any_of(record_.begin(), record_.end(), [](const Choice& c) { return c.kind == ChoiceKind::land; });
}

std::string ReplayChooser::first_divergence() const {
  if (divergences_ > 0) return first_;
  if (next_ < record_.size()) {
    return "the run ended after " + std::to_string(next_) + " of " + std::to_string(record_.size()) +
           " choices";
  }
  return "";
}

}  // namespace loopsim::model
