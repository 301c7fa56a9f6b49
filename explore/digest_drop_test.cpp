// The digest-drop test: each component of the world's digest (every field a type declares as
// state, and each named part of a type that digests itself: the scheduler's pending work and
// threads, a connection's output) must matter to some search over the shipped scenarios.
//
// First, cheaply, in one search of each arm: at every stop, the state's key is taken again
// without each component in turn (from one walk that sums the values each holds). Two stops
// the whole key tells apart that fall together without a component differ in it alone: a
// search that left it out would merge them, and the audit (which sees everything) would fail
// there. Then, for a component that shows nowhere so, every arm is searched with it left out
// (state::dropped_for_tests) until one notices: a verdict, a count of states or executions, or
// the audit (the twin classes read clients apart from the key). A component whose loss nothing
// notices is not state (it should be skipped, with its reason), or determined by other
// components (the same), or not exercised by any shipped scenario (one should be added):
// either way the merging it guards is unchecked.
//
// DROPS_EXECUTIONS=N sets the first part's executions an arm (300; states 20 times that);
// DROPS_ONLY=TEXT runs the second part only for components whose path holds TEXT (the others
// are listed as not probed further); DROPS_VERBOSE=1 prints each search of the second part.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <unordered_map>
#include <vector>

#include "checker/suite.hpp"
#include "explore/arena.hpp"
#include "explore/explorer.hpp"
#include "realloop/state.hpp"
#include "scenario/scenario.hpp"

using namespace loopsim;

namespace {

struct Case {
  std::string name;  // file and arm
  sim::Scenario scenario;
  checker::Costs costs;
};

struct Seen {
  explore::ExploreResult::Verdict verdict;
  std::uint64_t states, executions;
  bool audit_failed;
  bool operator==(const Seen&) const = default;
};

// Too large to search a few hundred times here (each takes seconds and gigabytes audited, with
// thousands of connections, or answers of a mebibyte): whole files, or one arm of a file.
const std::vector<std::string> too_large = {
    "scenarios/drain-chunk.toml",         "scenarios/flood.toml",
    "scenarios/flood-abort.toml",         "scenarios/flood-syn.toml",
    "scenarios/wrk.toml",                 "scenarios/handle-ceiling.toml",
    "scenarios/emfile.toml owed-after-emfile", "scenarios/shutdown-busy-keepalive.toml",
    "scenarios/workers-emfile.toml base", "scenarios/workers-capacity.toml base",
    "scenarios/shutdown-backlog.toml base"};

bool left_out(const std::string& file, const std::string& arm) {
  return std::find(too_large.begin(), too_large.end(), file) != too_large.end() ||
         std::find(too_large.begin(), too_large.end(), file + " " + arm) != too_large.end();
}

// Every arm of every shipped scenario and of tests/data/explore/, in file order, but those.
std::vector<Case> shipped_cases() {
  namespace fs = std::filesystem;
  const fs::path root = LOOPSIM_SOURCE_DIR;
  std::vector<fs::path> files;
  for (const char* dir : {"scenarios", "tests/data/explore"}) {
    for (const auto& entry : fs::directory_iterator(root / dir)) {
      if (entry.path().extension() == ".toml") files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<Case> out;
  for (const fs::path& file : files) {
    const std::string text = sim::read_scenario_file(file.string());
    const std::string shown = fs::relative(file, root).string();
    const sim::Scenario base = sim::parse_scenario(text, shown);
    std::vector<sim::Arm> arms{sim::Arm{"base", {}, {}}};
    arms.insert(arms.end(), base.arms.begin(), base.arms.end());
    for (const sim::Arm& arm : arms) {
      if (left_out(shown, arm.name)) continue;
      sim::Scenario s = sim::scenario_for_arm(text, shown, arm, {});
      checker::validate(s);
      out.push_back(Case{shown + " " + arm.name, std::move(s), checker::costs_for(text, shown)});
    }
  }
  return out;
}

// The components met, in the order first met, with the path each was first met at by a walk
// that names them (the audit's). Kept on the ordinary heap: the walks run in the explorer's arena.
struct Components final : state::Catalog {
  std::vector<const state::Field*> fields;
  std::vector<std::string> where;
  void note(const state::Field* f, std::string_view path) override {
    explore::Arena::Pause outside;
    auto it = std::find(fields.begin(), fields.end(), f);
    const std::size_t at = std::size_t(it - fields.begin());
    if (it == fields.end()) {
      fields.push_back(f);
      where.emplace_back();
    }
    if (where[at].empty() && !path.empty()) where[at] = std::string(path);
  }
};

Seen searched(const Case& c, std::uint64_t executions = 60, std::uint64_t states = 3000) {
  explore::ExploreOptions options;
  options.audit = true;
  options.max_executions = executions;
  options.max_states = states;
  explore::ExploreResult r = explore::search(c.scenario, c.costs, options);
  return Seen{r.verdict, r.states, r.executions, !r.audit_failure.empty()};
}

// Follows a walk of a state and sums, for each component, the values it holds (each value
// hashed with where it stands: its path and its place there), beside the sum of them all. The
// state without a component is then the whole less the component's sum. A component is met as
// a declared field (noted, then entered by name) or as a part a self-digesting type names
// (noted, then its values added at the same level).
class Holdings final : public state::Trail, public state::Catalog {
 public:
  explicit Holdings(const std::vector<const state::Field*>& fields) : fields_(fields), sums_(fields.size()) {
    for (std::size_t i = 0; i < fields.size(); ++i) index_.emplace(fields[i], i);
  }
  void start() {
    std::fill(sums_.begin(), sums_.end(), 0);
    whole_ = 0;
    frames_.assign(1, Frame{0x6a09e667f3bcc908ull, none, none, 0});
  }
  std::uint64_t whole() const { return whole_; }
  std::uint64_t without(std::size_t component) const { return whole_ - sums_[component]; }
  void add(std::int64_t value) {
    Frame& top = frames_.back();
    const std::uint64_t h = state::mix64(state::fold(state::fold(top.path, top.count++), std::uint64_t(value)));
    whole_ += h;
    holders_.clear();
    for (const Frame& f : frames_) {
      for (std::size_t c : {f.field, f.part}) {
        if (c != none && std::find(holders_.begin(), holders_.end(), c) == holders_.end()) holders_.push_back(c);
      }
    }
    for (std::size_t c : holders_) sums_[c] += h;
  }
  void note(const state::Field* f, std::string_view) override {
    auto it = index_.find(f);
    frames_.back().part = it == index_.end() ? none : it->second;
  }
  void enter(std::string_view name) override {
    Frame& top = frames_.back();
    std::size_t field = none;
    if (top.part != none && fields_[top.part]->name == name) std::swap(field, top.part);
    std::uint64_t path = state::fold(top.path, state::bytes_hash(name));
    frames_.push_back(Frame{path, field, none, 0});
  }
  void enter(std::int64_t index) override {
    std::uint64_t path = state::fold(frames_.back().path, std::uint64_t(index) ^ 0x5bd1e995ull);
    frames_.push_back(Frame{path, none, none, 0});
  }
  void leave() override { frames_.pop_back(); }

 private:
  static constexpr std::size_t none = ~std::size_t{0};
  struct Frame {
    std::uint64_t path;
    std::size_t field;  // the component entered here
    std::size_t part;   // the component noted here last and not entered: its values follow
    std::uint64_t count;
  };
  const std::vector<const state::Field*>& fields_;
  std::unordered_map<const state::Field*, std::size_t> index_;  // looked up, never iterated
  std::vector<std::uint64_t> sums_;
  std::uint64_t whole_ = 0;
  std::vector<Frame> frames_;
  std::vector<std::size_t> holders_;
};

// At every stop of a search, the state's key without each component in turn: two stops the
// whole key tells apart that fall together without a component differ in it alone, and a search
// without it would merge them (its audit, which sees everything, failing there).
struct Collisions final : explore::KeyProbe {
  explicit Collisions(const std::vector<const state::Field*>& fields)
      : fields(fields), holdings(fields), keys(fields.size()), noticed_by(fields.size()) {}
  void stopped(std::uint64_t key, const std::function<std::uint64_t(std::uint64_t)>& key_of_shape,
               const Walk& walk) override {
    explore::Arena::Pause outside;  // the walk allocates nothing in the world; what is kept, here
    holdings.start();
    state::catalog_for_tests = &holdings;
    walk(holdings, [this](std::int64_t v) { holdings.add(v); });
    state::catalog_for_tests = nullptr;
    ++stops;
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (!noticed_by[i].empty()) continue;
      auto [it, fresh] = keys[i].emplace(key_of_shape(holdings.without(i)), key);
      if (!fresh && it->second != key) noticed_by[i] = current;
    }
  }
  void next_case(const std::string& name) {
    current = name;
    for (auto& k : keys) k = {};
  }
  const std::vector<const state::Field*>& fields;
  Holdings holdings;
  std::vector<std::unordered_map<std::uint64_t, std::uint64_t>> keys;  // by component: key without it, key
  std::vector<std::string> noticed_by;  // by component: the case that noticed it
  std::string current;
  std::uint64_t stops = 0;
};

// The base arm of tests/data/explore/NAME.toml.
Case data_case(const std::string& name) {
  const std::string file = std::string(LOOPSIM_SOURCE_DIR) + "/tests/data/explore/" + name + ".toml";
  const std::string text = sim::read_scenario_file(file);
  return Case{name, sim::parse_scenario(text, name + ".toml"), checker::costs_for(text, name + ".toml")};
}

}  // namespace

// The first part's own check, on one arm: the monitors' state alone tells two stops apart (a
// request answered late or not is nowhere else), and a limit this run never changes never does.
TEST_CASE("digest drops: one search finds a component that alone tells two states apart, and not a constant") {
  const Case c = data_case("latency-windows");
  Components catalog;
  state::catalog_for_tests = &catalog;
  searched(c);
  state::catalog_for_tests = nullptr;
  Collisions collisions(catalog.fields);
  explore::key_probe_for_tests = &collisions;
  collisions.next_case(c.name);
  searched(c);
  explore::key_probe_for_tests = nullptr;
  CHECK(collisions.stops > 100);
  auto noticed = [&](const std::string& where) {
    auto it = std::find(catalog.where.begin(), catalog.where.end(), where);
    REQUIRE(it != catalog.where.end());
    return !collisions.noticed_by[std::size_t(it - catalog.where.begin())].empty();
  };
  CHECK(noticed("(top).monitors"));
  CHECK_FALSE(noticed("kernel.config_.rlimit_nofile"));  // no fault changes it here
}

// The loop's reload_key_ alone holds what a reload applied: two reloads at one instant, taken in
// both orders, leave two states apart in it alone, whose futures differ (the head timed out or
// not). Searched whole, the audit passes; with it left out, the two are merged, and the audit,
// which writes down every field, sees one digest with two futures.
TEST_CASE("digest drops: two reloads at one instant are told apart by reload_key_ alone, and merged without it") {
  const Case c = data_case("reload-race");
  Components catalog;
  state::catalog_for_tests = &catalog;
  const Seen whole = searched(c);
  state::catalog_for_tests = nullptr;
  CHECK_FALSE(whole.audit_failed);
  CHECK(whole.verdict == explore::ExploreResult::Verdict::none_found);
  auto it = std::find_if(catalog.where.begin(), catalog.where.end(),
                         [](const std::string& where) { return where.ends_with(".reload_key_"); });
  REQUIRE(it != catalog.where.end());
  state::dropped_for_tests = catalog.fields[std::size_t(it - catalog.where.begin())];
  const Seen without = searched(c);
  state::dropped_for_tests = nullptr;
  CHECK(without.audit_failed);
  CHECK(without.states < whole.states);
}

// Hidden ([.]): most components do not yet show (see docs/design.md, "Every component counts"),
// and each such costs a search of every arm. scripts/digest_drops.sh runs it.
TEST_CASE("digest drops: leaving out any one component of the digest changes some search over the shipped scenarios",
          "[.][drops]") {
  const std::vector<Case> cases = shipped_cases();
  REQUIRE(cases.size() >= 50);
  // The components, as the searches meet them; and what each search sees with all of them.
  Components catalog;
  std::vector<Seen> whole;
  state::catalog_for_tests = &catalog;
  for (const Case& c : cases) whole.push_back(searched(c));
  state::catalog_for_tests = nullptr;
  REQUIRE(catalog.fields.size() >= 100);  // the catalog works: the kernel and the loop alone hold more
  // First, cheaply: every stop of every case keyed again without each component.
  const char* budget = std::getenv("DROPS_EXECUTIONS");
  const std::uint64_t executions = budget != nullptr ? std::stoull(budget) : 300;
  Collisions collisions(catalog.fields);
  explore::key_probe_for_tests = &collisions;
  for (const Case& c : cases) {
    collisions.next_case(c.name);
    searched(c, executions, 20 * executions);
  }
  explore::key_probe_for_tests = nullptr;
  // Then, for what that did not show, the searches themselves without each (twin classes and
  // keys digest clients too, apart from the state's key).
  std::vector<std::string> survived;
  const char* only = std::getenv("DROPS_ONLY");
  const bool verbose = std::getenv("DROPS_VERBOSE") != nullptr;
  for (std::size_t i = 0; i < catalog.fields.size(); ++i) {
    const std::string name = catalog.where[i].empty() ? catalog.fields[i]->name : catalog.where[i];
    if (!collisions.noticed_by[i].empty()) {
      std::cerr << "digest drops: " << (i + 1) << "/" << catalog.fields.size() << " " << name
                << ": two states fall together without it in " << collisions.noticed_by[i] << '\n';
      continue;
    }
    if (only != nullptr && name.find(only) == std::string::npos) {
      survived.push_back(name);
      std::cerr << "digest drops: " << (i + 1) << "/" << catalog.fields.size() << " " << name << ": not probed further\n";
      continue;
    }
    state::dropped_for_tests = catalog.fields[i];
    bool noticed = false;
    std::size_t noticed_by = 0;
    for (std::size_t k = 0; k < cases.size() && !noticed; ++k) {
      const Seen seen = searched(cases[k]);
      noticed = !(seen == whole[k]);
      noticed_by = k;
      if (verbose) {
        std::cerr << "  " << cases[k].name << ": states " << whole[k].states << " -> " << seen.states << ", executions "
                  << whole[k].executions << " -> " << seen.executions << ", audit " << whole[k].audit_failed << " -> "
                  << seen.audit_failed << '\n';
      }
    }
    state::dropped_for_tests = nullptr;
    if (!noticed) survived.push_back(name);
    // Progress, and which case noticed each: this test takes long (scripts/digest_drops.sh).
    std::cerr << "digest drops: " << (i + 1) << "/" << catalog.fields.size() << " " << name << ": "
              << (noticed ? "noticed by " + cases[noticed_by].name : std::string("NOT NOTICED")) << '\n';
  }
  std::string list;
  for (const std::string& s : survived) list += "\n  " + s;
  INFO(survived.size() << " of " << catalog.fields.size() << " components dropped unnoticed:" << list);
  CHECK(survived.empty());
}
