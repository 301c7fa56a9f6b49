// Choice points: every nondeterministic decision the simulation makes passes through one
// Chooser. The default one is seeded and deterministic; the explorer plugs in its own; a
// replaying one repeats a recorded run's decisions, which is all a run needs to be repeated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace loopsim::model {

enum class ChoiceKind : std::uint8_t {
  order,  // which of several same-instant happenings runs first
  fault,  // whether an injected fault lands here, within its budget
  slack,  // which timer slack this sleep gets, from the scenario's set
  land,   // whether a windowed happening lands here, and which (model/scheduler.hpp)
  take,   // how much of a write the kernel takes: its send buffer as it is, or grown (K11)
  preempt,  // whether a target's thread, at a synchronisation call, gives way to another that may run
};

inline constexpr std::uint8_t choice_kinds = 6;  // how many kinds there are
const char* choice_kind_name(ChoiceKind kind);
std::optional<ChoiceKind> choice_kind_from_name(const std::string& name);

struct Choice {
  ChoiceKind kind;
  std::uint32_t options;  // n: the pick is in [0, n)
  std::uint32_t pick;
};

class Chooser {
 public:
  virtual ~Chooser() = default;
  // Picks one of `options` (>= 2) alternatives. Index 0 is the natural one: the first scheduled,
  // no fault, no slack.
  virtual std::uint32_t choose(ChoiceKind kind, std::uint32_t options) = 0;
  // A description from which another process can rebuild this chooser as it is now, to make
  // the same decisions without asking (a target's process, target/target.hpp); empty when the
  // decisions depend on more than the calls (the explorer's).
  virtual std::string portable() const { return {}; }
  // Whether the run offers windowed happenings every placement (choices of kind `land`) rather
  // than drawing each one's instant from the seed.
  virtual bool explores_windows() const { return false; }
};

// The chooser a portable() text describes; null for text that describes none.
std::unique_ptr<Chooser> rebuild_chooser(const std::string& text);

// SplitMix64: advances `state` and returns the next 64 bits. Every random draw in loopsim
// (choices, and the workloads' arrivals and path mixes) comes from it, seeded by the scenario.
inline std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Uniform picks from SplitMix64 seeded with the scenario's seed. No other source of randomness.
class SeededChooser final : public Chooser {
 public:
  explicit SeededChooser(std::uint64_t seed) : state_(seed) {}
  std::uint32_t choose(ChoiceKind kind, std::uint32_t options) override;
  std::string portable() const override { return "seeded " + std::to_string(state_); }

 private:
  std::uint64_t next();
  std::uint64_t state_;
};

// How many of `choices` took other than the natural alternative: what a person must follow.
inline std::size_t not_natural(const std::vector<Choice>& choices) {
  std::size_t n = 0;
  for (const Choice& c : choices) n += c.pick != 0;
  return n;
}

// Repeats recorded picks. A request that does not match the record (another kind, another
// number of options, or past its end) means the run diverged: it is counted and answered with
// the natural alternative.
class ReplayChooser final : public Chooser {
 public:
  explicit ReplayChooser(std::vector<Choice> record) : record_(std::move(record)) {}
  std::uint32_t choose(ChoiceKind kind, std::uint32_t options) override;
  std::string portable() const override;
  // A record that holds a landing came from a search of windows, and is replayed as one.
  bool explores_windows() const override;
  std::size_t divergences() const { return divergences_; }
  bool exhausted() const { return next_ >= record_.size(); }
  // Where the run first left the record, for a person: "choice 7 of 12 is order:3:1, but the
  // run asked for order among 2", or "the run ended after 5 of 12 choices"; empty if it fit.
  std::string first_divergence() const;

 private:
  std::vector<Choice> record_;
  std::size_t next_ = 0;
  std::size_t divergences_ = 0;
  std::string first_;
};

// "order:3:1", as scenario files and traces write a choice.
std::string choice_text(const Choice& choice);

}  // namespace loopsim::model
