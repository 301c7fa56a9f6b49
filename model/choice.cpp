#include "model/choice.hpp"

#include "realloop/assert.hpp"

namespace loopsim::model {

namespace {
constexpr const char* kind_names[] = {"order", "fault", "slack"};
}

const char* choice_kind_name(ChoiceKind kind) { return kind_names[std::size_t(kind)]; }

std::optional<ChoiceKind> choice_kind_from_name(const std::string& name) {
  for (std::size_t i = 0; i < std::size(kind_names); ++i) {
    if (name == kind_names[i]) return ChoiceKind(i);
  }
  return std::nullopt;
}

std::uint64_t SeededChooser::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::uint32_t SeededChooser::choose(ChoiceKind, std::uint32_t options) {
  LOOPSIM_ASSERT_OP(options, >=, 2u);
  // Rejection sampling: no modulo bias.
  std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % options);
  std::uint64_t x = next();
  while (x >= limit) x = next();
  return std::uint32_t(x % options);
}

std::uint32_t ReplayChooser::choose(ChoiceKind kind, std::uint32_t options) {
  if (next_ < record_.size()) {
    const Choice& c = record_[next_++];
    if (c.kind == kind && c.options == options && c.pick < options) return c.pick;
  }
  ++divergences_;
  return 0;
}

}  // namespace loopsim::model
