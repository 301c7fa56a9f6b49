// Executions in this process, each replaying its prefix of decisions from time 0.
#include <algorithm>
#include <stdexcept>

#include "explore/runner.hpp"

namespace loopsim::explore {

namespace {

// A chooser that records its decisions.
class Recording : public model::Chooser {
 public:
  const std::vector<model::Choice>& made() const { return made_; }

 protected:
  std::vector<model::Choice> made_;
};

// Follows a prefix of picks, then takes the natural alternative.
class PrefixChooser final : public Recording {
 public:
  explicit PrefixChooser(const std::vector<model::Choice>& prefix) {
    prefix_.reserve(prefix.size());
    for (const model::Choice& c : prefix) prefix_.push_back(c.pick);
  }
  std::uint32_t choose(model::ChoiceKind kind, std::uint32_t options) override {
    std::size_t i = made_.size();
    std::uint32_t pick = i < prefix_.size() ? std::min(prefix_[i], options - 1) : 0;
    made_.push_back(model::Choice{kind, options, pick});
    return pick;
  }

 private:
  std::vector<std::uint32_t> prefix_;
};

// Picks at random, by seed.
class SeededRecording final : public Recording {
 public:
  explicit SeededRecording(std::uint64_t seed) : seeded_(seed) {}
  std::uint32_t choose(model::ChoiceKind kind, std::uint32_t options) override {
    std::uint32_t pick = seeded_.choose(kind, options);
    made_.push_back(model::Choice{kind, options, pick});
    return pick;
  }

 private:
  model::SeededChooser seeded_;
};

class ReplayingRunner final : public Runner {
 public:
  ReplayingRunner(const System& system, std::unique_ptr<Recording> chooser)
      : chooser_(std::move(chooser)), execution_(system.start(*chooser_)) {}

  Report begin(std::size_t prefix) {
    if (prefix == 0) return report(true, 0, execution_->accepted());
    Report r;
    while (chooser_->made().size() < prefix) {
      r = step(0);
      if (!r.stepped) throw std::logic_error("explore: a replay ended before its prefix");
    }
    r.replayed = steps_ - 1;
    return r;
  }

  Report step(std::uint32_t) override {
    std::size_t before = chooser_->made().size();
    std::uint64_t accepted_before = execution_->accepted();
    bool stepped = execution_->step();
    if (stepped) ++steps_;
    return report(stepped, before, accepted_before);
  }

  Outcome finish() override { return execution_->finish(); }

 private:
  Report report(bool stepped, std::size_t first, std::uint64_t accepted_before) const {
    Report r;
    r.stepped = stepped;
    r.digest = execution_->digest();
    r.backlog = execution_->backlog();
    r.accepted_before = accepted_before;
    r.accepted = execution_->accepted();
    r.now = execution_->now();
    r.quiescent = execution_->quiescent();
    r.steps = steps_;
    r.first = first;
    const std::vector<model::Choice>& made = chooser_->made();
    r.decisions.assign(made.begin() + static_cast<std::ptrdiff_t>(first), made.end());
    r.snapshots.resize(r.decisions.size());
    return r;
  }

  std::unique_ptr<Recording> chooser_;
  std::unique_ptr<Execution> execution_;
  std::uint64_t steps_ = 0;
};

class ReplayingRunners final : public Runners {
 public:
  explicit ReplayingRunners(const System& system) : system_(system) {}
  std::unique_ptr<Runner> begin(const std::vector<model::Choice>& prefix, const std::shared_ptr<Snapshot>&,
                                std::size_t, std::uint32_t, Report& first) override {
    auto runner = std::make_unique<ReplayingRunner>(system_, std::make_unique<PrefixChooser>(prefix));
    first = runner->begin(prefix.size());
    return runner;
  }
  std::uint32_t room() const override { return 0; }
  std::uint64_t taken() const override { return 0; }

 private:
  const System& system_;
};

}  // namespace

std::unique_ptr<Runners> replaying_runners(const System& system) {
  return std::make_unique<ReplayingRunners>(system);
}

std::unique_ptr<Runner> seeded_runner(const System& system, std::uint64_t seed, Report& first) {
  auto runner = std::make_unique<ReplayingRunner>(system, std::make_unique<SeededRecording>(seed));
  first = runner->begin(0);
  return runner;
}

}  // namespace loopsim::explore
