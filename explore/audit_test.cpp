// The digest audit (explore --audit): a search that merges states checks that states with one
// digest are one state. It passes on the built-in loop and on an own loop that declares its
// state, and stops, naming what differs, where a declaration leaves out a field that matters.
#include <catch2/catch.hpp>

#include <optional>

#include "examples/own-kernel-loop/tiny_loop.hpp"
#include "explore/explorer.hpp"
#include "realloop/loop.hpp"

using namespace loopsim;
using namespace loopsim::explore;
using loopsim::checker::Costs;

namespace {

// Three arrivals free to land over 40 ms and a held request likewise: with accept_batch 2 the
// owed flag decides whether the third is ever accepted.
const char* const windows = R"(
name = "audit"
horizon = "300ms"
[loop]
accept_batch = 2
idle_timeout = "10s"
[[clients]]
name = "held"
keep_alive = true
requests = [{ at = "1ms..60ms", path = "/fast" }]
[[clients]]
name = "arrivals"
count = 3
rate = 100
connect_at = "1ms..41ms"
requests = [{ at = "0ms", path = "/fast" }]
[[expect]]
property = "answered"
[[expect]]
property = "no_stranded_backlog"
)";

// A loop's declared state fed through a filter that drops every value inside field `forget`.
struct Filter final : state::Sink, state::Trail {
  Filter(state::Sink& to, const std::string& forget) : to(to), forget(forget) {}
  void add(std::int64_t value) override {
    if (inside == 0) to.add(value);
  }
  const state::Names* names() const override { return to.names(); }
  Trail* trail() const override { return const_cast<Filter*>(this); }
  std::optional<Instant> horizon() const override { return to.horizon(); }
  void clamped(std::int64_t exact) override { to.clamped(exact); }
  void enter(std::string_view name) override {
    depth.push_back(name == forget);
    inside += name == forget;
    if (to.trail() != nullptr) to.trail()->enter(name);
  }
  void enter(std::int64_t index) override {
    depth.push_back(false);
    if (to.trail() != nullptr) to.trail()->enter(index);
  }
  void leave() override {
    inside -= depth.back();
    depth.pop_back();
    if (to.trail() != nullptr) to.trail()->leave();
  }
  state::Sink& to;
  const std::string& forget;
  std::vector<bool> depth;
  int inside = 0;
};

// The built-in loop run as an own loop, with a declared state that forgets `forget` ("":
// nothing), as a user's declaration might.
class Declared final : public sim::OwnLoop {
 public:
  Declared(Kernel& kernel, LoopObserver& observer, const LoopConfig& config, std::string forget)
      : loop_(kernel, config, observer), forget_(std::move(forget)) {}
  int open(const ListenSpec& spec) override {
    int rc = loop_.open(spec);
    return rc < 0 ? rc : loop_.listener();
  }
  void run() override { loop_.run(); }
  void shutdown() override { loop_.shutdown(); }
  std::size_t connections() const override { return loop_.connections(); }
  std::uint64_t passes() const override { return loop_.passes(); }
  bool declares_state() const override { return true; }
  void digest_state(state::Sink& sink, Instant now) const override {
    Filter filter(sink, forget_);
    state::visit_into(filter, loop_, now);
  }
  std::uint64_t shared_inputs(Instant now) const override {
    std::uint64_t value = 0;
    loop_.visit_shared([&value](std::int64_t v) { value = state::fold(value, std::uint64_t(v)); }, now);
    return value;
  }

 private:
  Loop loop_;
  std::string forget_;
};

// An own loop: the example's (tiny), or the built-in one forgetting `forget`.
sim::ServerFactories own_loop(const std::string& forget, bool tiny = false) {
  sim::ServerFactories servers;
  if (tiny) {
    servers.own_loop = [](Kernel& kernel, LoopObserver& observer, const LoopConfig& config) {
      return std::make_unique<tiny::TinyLoop>(kernel, observer, config);
    };
  } else {
    servers.own_loop = [forget](Kernel& kernel, LoopObserver& observer, const LoopConfig& config) {
      return std::make_unique<Declared>(kernel, observer, config, forget);
    };
  }
  return servers;
}

ExploreResult audited(std::vector<sim::Override> set = {}, sim::ServerFactories servers = {}) {
  ExploreOptions options;
  options.audit = true;
  options.servers = std::move(servers);
  return search(sim::parse_scenario(windows, "audit.toml", set), Costs{}, options);
}

}  // namespace

TEST_CASE("audit: the built-in loop's states with one digest behave as one, with the rule or without") {
  for (const char* owed : {"true", "false"}) {
    INFO("owe_unfinished_batch = " << owed);
    ExploreResult r = audited({{"loop.owe_unfinished_batch", owed}});
    CHECK(r.audit_failure.empty());
    CHECK(r.merged);
    CHECK(r.audit_compared > 100);  // it compared something: not a vacuous pass
    CHECK(r.audit_unwritten == 0);
  }
}

TEST_CASE("audit: own loops that declare their whole state pass, and merge") {
  for (bool tiny : {true, false}) {
    INFO((tiny ? "the example's tiny loop" : "the built-in loop as an own loop"));
    ExploreResult r = audited({}, own_loop("", tiny));
    CHECK(r.audit_failure.empty());
    CHECK(r.merged);
    CHECK(r.cut > 0);
    CHECK(r.audit_compared > 100);
    CHECK(r.verdict == ExploreResult::Verdict::none_found);
  }
}

TEST_CASE("audit: a declaration that leaves out the owed flag is caught, and the search stops") {
  ExploreResult r = audited({}, own_loop("accept_owed_"));
  REQUIRE_FALSE(r.audit_failure.empty());
  CHECK(r.audit_failure.find("part ways") != std::string::npos);
  CHECK(r.audit_failure.find("reached by the choices") != std::string::npos);
  // Without the audit the same search merges the two states, and nothing says so.
  ExploreOptions plain;
  plain.servers = own_loop("accept_owed_");
  ExploreResult quiet = search(sim::parse_scenario(windows, "audit.toml"), Costs{}, plain);
  CHECK(quiet.audit_failure.empty());
}

TEST_CASE("audit: the first difference is named by its field") {
  state::Transcript before, after;
  before.enter("kernel");
  before.enter("fds_");
  before.add(2);
  before.enter(std::int64_t(1));
  before.add(7);
  after.enter("kernel");
  after.enter("fds_");
  after.add(2);
  after.enter(std::int64_t(1));
  after.add(8);
  std::string difference = state::first_difference(before.take_values(), after);
  CHECK(difference.find("kernel.fds_[1]") != std::string::npos);
  CHECK(difference.find("7 then 8") != std::string::npos);
  CHECK(state::first_difference(after.values(), after).empty());
}

namespace {

// A system whose one decision leads back to itself, nothing changed: it asks its question, and
// whatever the answer, stops again in the very state it asked from, asking again, then ends.
// A scheduler that did so (the horizon's last landing offer, asked once more at the end) would
// hide what follows the second question from every merged search.
class AskedTwice final : public System {
  class Run final : public Execution {
   public:
    Stop advance() override {
      Stop stop;
      if (asked_ < 2) {
        stop.kind = Stop::Kind::decision;
        stop.choice = model::ChoiceKind::land;
        stop.options = 2;
        stop.shape = 7;
        stop.key = 11;
        return stop;
      }
      stop.kind = Stop::Kind::end;
      stop.shape = 8;
      stop.key = 12;
      return stop;
    }
    void decide(std::uint32_t) override { ++asked_; }
    Outcome outcome() override { return Outcome{}; }
    void abandon() override {}
    std::uint64_t steps() const override { return std::uint64_t(asked_); }

   private:
    int asked_ = 0;
  };

 public:
  std::unique_ptr<Execution> start() const override { return std::make_unique<Run>(); }
  Merging merging() const override { return Merging{}; }
};

}  // namespace

TEST_CASE("audit: a decision that leads back to the state that asked it fails the audit") {
  for (auto strategy : {ExploreOptions::Strategy::dfs, ExploreOptions::Strategy::deviations}) {
    ExploreOptions options;
    options.strategy = strategy;
    options.audit = true;
    ExploreResult r = search(AskedTwice{}, options);
    INFO("strategy " << int(strategy));
    CHECK_THAT(r.audit_failure, Catch::Matchers::Contains("one question asked twice"));
    options.audit = false;
    CHECK(search(AskedTwice{}, options).audit_failure.empty());
  }
}

namespace {

// A system whose executions do not repeat: from its second execution on, one decision asks
// otherwise than the first execution's did (`changes`: another state, or another count of
// options). A replay, which repeats a path's decisions to reach a branch, would then take the
// branch of another execution in silence. Its executions can be saved; with Change::restore a
// restore forgets the path taken, as a snapshot that does not hold all its state would.
class Unrepeatable final : public System {
 public:
  enum class Change { none, key, options, restore };
  Unrepeatable(Change change, std::uint32_t at) : change_(change), at_(at) {}

  std::unique_ptr<Execution> start() const override { return std::make_unique<Run>(*this, started_++); }
  Merging merging() const override { return Merging{}; }

 private:
  class Run final : public Execution {
   public:
    Run(const Unrepeatable& system, std::uint64_t number) : system_(system), number_(number) {}
    Stop advance() override { return here(); }
    std::optional<Stop> stands_at(bool) const override { return here(); }
    std::unique_ptr<Saved> save() override { return std::make_unique<Kept>(decided_, path_); }
    void restore(const Saved& saved) override {
      const auto& kept = dynamic_cast<const Kept&>(saved);
      decided_ = kept.decided;
      path_ = system_.change_ == Change::restore ? 0 : kept.path;
    }
    Stop here() const {
      Stop stop;
      if (decided_ < 3) {
        const bool changed = number_ > 0 && decided_ == system_.at_;
        stop.kind = Stop::Kind::decision;
        stop.choice = model::ChoiceKind::order;
        stop.options = changed && system_.change_ == Change::options ? 3 : 2;
        stop.shape = 1000 * (decided_ + 1) + path_;
        stop.key = stop.shape + (changed && system_.change_ == Change::key ? 77 : 0);
        return stop;
      }
      stop.kind = Stop::Kind::end;
      stop.shape = stop.key = 9000 + path_;
      return stop;
    }
    void decide(std::uint32_t pick) override {
      path_ = path_ * 3 + pick + 1;
      ++decided_;
    }
    Outcome outcome() override { return Outcome{}; }
    void abandon() override {}
    std::uint64_t steps() const override { return decided_; }

   private:
    struct Kept final : Saved {
      Kept(std::uint32_t d, std::uint64_t p) : decided(d), path(p) {}
      std::size_t bytes() const override { return sizeof *this; }
      std::uint32_t decided;
      std::uint64_t path;
    };
    const Unrepeatable& system_;
    std::uint64_t number_;
    std::uint32_t decided_ = 0;
    std::uint64_t path_ = 0;
  };

  Change change_;
  std::uint32_t at_;
  mutable std::uint64_t started_ = 0;
};

}  // namespace

TEST_CASE("replays check themselves: a replay that parts from its execution stops, naming the decision") {
  for (auto strategy : {ExploreOptions::Strategy::dfs, ExploreOptions::Strategy::deviations}) {
    INFO("strategy " << int(strategy));
    ExploreOptions replays;  // every branch replayed from a new execution's start
    replays.strategy = strategy;
    replays.snapshots = false;
    // A system that repeats itself is searched whole: 2^3 executions.
    ExploreResult whole = search(Unrepeatable(Unrepeatable::Change::none, 0), replays);
    CHECK(whole.executions == 8);
    CHECK(whole.diverged.empty());
    const ExploreResult key = search(Unrepeatable(Unrepeatable::Change::key, 0), replays);
    CHECK_THAT(key.diverged, Catch::Matchers::Contains("parted from the execution it repeats at decision 0") &&
                                 Catch::Matchers::Contains("the same question in another state"));
    CHECK(key.executions < whole.executions);  // stopped where it parted
    // One whose second decision offers another count of options.
    CHECK_THAT(search(Unrepeatable(Unrepeatable::Change::options, 1), replays).diverged,
               Catch::Matchers::Contains("at decision 1") && Catch::Matchers::Contains("it found order:3"));
    // One whose restores forget the path: the restored state, read afresh, is not the saved one.
    // Replayed instead, it repeats itself.
    ExploreOptions restores = replays;
    restores.snapshots = true;
    CHECK(search(Unrepeatable(Unrepeatable::Change::none, 0), restores).diverged.empty());
    CHECK_THAT(search(Unrepeatable(Unrepeatable::Change::restore, 0), restores).diverged,
               Catch::Matchers::Contains("parted from the execution it repeats at decision 2"));
    CHECK(search(Unrepeatable(Unrepeatable::Change::restore, 0), replays).diverged.empty());
  }
}
