// The explorer on small accept-burst shapes (the burst arrives in a window, while the blocker
// runs or after): it finds the nothing-owed stranding, writes a
// counterexample that replays, finds nothing with the rules on, reports bounds as bounds, and
// its shards add up to the whole search.
#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>

#include "explore/explorer.hpp"

using namespace loopsim;
using namespace loopsim::explore;
using loopsim::checker::Costs;

namespace {

std::string small(int arrivals, bool with_safety = true) {
  std::string text = R"(
name = "small"
horizon = "10s"
[loop]
accept_batch = 2
[[clients]]
name = "blocker"
connect_at = "10ms"
requests = [{ at = "10ms", path = "/slow?ms=600" }]
[[clients]]
name = "burst"
count = )" + std::to_string(arrivals) + R"(
connect_at = "50ms..700ms"
requests = [{ at = "50ms", path = "/slow?ms=10" }]
)";
  if (with_safety) text += "[[expect]]\nproperty = \"answered\"\n[[expect]]\nproperty = \"no_stranded_backlog\"\n";
  else text += "[[expect]]\nproperty = \"liveness\"\n";
  return text;
}

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

sim::Scenario load(const std::string& text, std::vector<sim::Override> set = {}) {
  return sim::parse_scenario(text, "small.toml", set);
}

}  // namespace

TEST_CASE("explore finds the nothing-owed stranding and its counterexample replays") {
  auto scenario = load(small(5), {{"loop.owe_unfinished_batch", "false"}});
  ExploreResult r = search(scenario, Costs{}, ExploreOptions{});
  REQUIRE(r.verdict == ExploreResult::Verdict::violated);
  REQUIRE(r.counterexample);
  CHECK(r.counterexample->violated ==
        std::vector<std::string>{"answered", "no_stranded_backlog"});
  CHECK_FALSE(judge_choices(scenario, Costs{}, r.counterexample->choices).violated.empty());
  // The pinned scenario is a scenario: loaded back, it runs the same choices and fails again.
  std::string pinned = sim::pinned_scenario(small(5), "small.toml", sim::Arm{"base", {}, {}},
                                            {{"loop.owe_unfinished_batch", "false"}},
                                            r.counterexample->choices);
  sim::Scenario again = sim::parse_scenario(pinned, "cex.toml");
  CHECK(again.choices.size() == r.counterexample->choices.size());
  CHECK(again.arms.empty());
  CHECK_FALSE(again.loop.owe_unfinished_batch);
}

TEST_CASE("explore finds nothing when the batch is owed, over every schedule") {
  ExploreResult r = search(load(small(4)), Costs{}, ExploreOptions{});
  CHECK(r.verdict == ExploreResult::Verdict::none_found);
  CHECK(r.executions > 1);  // it branched: connects and handshakes interleave
}

TEST_CASE("symmetry: interchangeable clients' orders are explored once, so states grow polynomially") {
  auto states = [](int arrivals, bool symmetry) {
    ExploreOptions options;
    options.symmetry = symmetry;
    options.depth = 100000;
    options.max_executions = 200000;
    ExploreResult r = search(load(small(arrivals)), Costs{}, options);
    REQUIRE(r.verdict == ExploreResult::Verdict::none_found);
    return double(r.states);
  };
  // With the burst's clients as twins, a state is how many have arrived, been accepted and
  // been answered, where the loop is, and when: polynomial in the arrivals. Each doubling
  // multiplies the states by less than the one before (an exponential's factor would grow),
  // and by less than a cubic's 8.
  double s4 = states(4, true), s8 = states(8, true), s16 = states(16, true);
  CHECK(s16 / s8 < s8 / s4);
  CHECK(s16 / s8 < 8.0);
  // Without it, every order of the same clients is a state of its own.
  CHECK(states(4, false) > 2 * s4);
}

TEST_CASE("symmetry keeps what tells clients apart: the stranding is still found") {
  ExploreOptions options;
  auto r = search(load(small(8), {{"loop.owe_unfinished_batch", "false"}, {"loop.accept_batch", "3"}}),
                  Costs{}, options);
  CHECK(r.verdict == ExploreResult::Verdict::violated);
}

TEST_CASE("explore finds a stranding by liveness when no property checks the backlog") {
  auto scenario = load(small(5, false), {{"loop.owe_unfinished_batch", "false"}});
  ExploreResult r = search(scenario, Costs{}, ExploreOptions{});
  REQUIRE(r.verdict == ExploreResult::Verdict::violated);
  CHECK(r.counterexample->violated == std::vector<std::string>{"liveness"});
  // With the rule on, no such cycle exists.
  CHECK(search(load(small(4, false)), Costs{}, ExploreOptions{}).verdict ==
        ExploreResult::Verdict::none_found);
}

TEST_CASE("explore reports a bound it hit as bound_reached, never as a pass") {
  ExploreOptions options;
  options.max_executions = 3;
  CHECK(search(load(small(5)), Costs{}, options).verdict == ExploreResult::Verdict::bound_reached);
  ExploreOptions shallow;
  shallow.depth = 1;
  auto r = search(load(small(5)), Costs{}, shallow);
  CHECK(r.verdict == ExploreResult::Verdict::bound_reached);
  CHECK(r.bound == "depth");
}

namespace {

struct Totals {
  std::uint64_t executions = 0, steps = 0;
};

// The search run as `shards` shards, each result shown to `look`; their counts summed.
template <typename Look>
Totals shard_totals(const sim::Scenario& scenario, const ExploreOptions& whole, std::uint32_t shards, Look look) {
  Totals sum;
  for (std::uint32_t shard = 0; shard < shards; ++shard) {
    ExploreOptions part = whole;
    part.shard = shard;
    part.shards = shards;
    auto r = search(scenario, Costs{}, part);
    look(shard, r);
    sum.executions += r.executions;
    sum.steps += r.steps;
  }
  return sum;
}

}  // namespace

TEST_CASE("explore --shard runs add up to the unsharded run") {
  auto scenario = load(small(3));
  ExploreOptions whole;
  whole.prune = false;
  auto all = search(scenario, Costs{}, whole);
  REQUIRE(all.verdict == ExploreResult::Verdict::none_found);
  // Every shard runs the root execution; only shard 0 counts it.
  Totals sum = shard_totals(scenario, whole, 3, [](std::uint32_t, const ExploreResult& r) {
    CHECK(r.verdict == ExploreResult::Verdict::none_found);
  });
  CHECK(sum.executions == all.executions);
  CHECK(sum.steps == all.steps);
}

TEST_CASE("explore --shard at random deals the seeds out, each once") {
  auto scenario = load(small(3));
  ExploreOptions whole;
  whole.strategy = ExploreOptions::Strategy::random;
  whole.seed_first = 5;
  whole.seed_last = 14;  // 10 seeds: 4, 3 and 3
  auto all = search(scenario, Costs{}, whole);
  Totals sum = shard_totals(scenario, whole, 3, [](std::uint32_t shard, const ExploreResult& r) {
    CHECK(r.executions == (shard == 0 ? 4u : 3u));
  });
  CHECK(sum.executions == all.executions);
  CHECK(sum.steps == all.steps);
  ExploreOptions beyond = whole;  // more shards than seeds: the last have none
  beyond.shard = 11;
  beyond.shards = 12;
  CHECK(search(scenario, Costs{}, beyond).executions == 0);
}

TEST_CASE("explore at random runs one execution a seed, and a sample is never a proof") {
  ExploreOptions options;
  options.strategy = ExploreOptions::Strategy::random;
  options.seed_first = 1;
  options.seed_last = 20;
  auto r = search(load(small(4)), Costs{}, options);
  CHECK(r.verdict == ExploreResult::Verdict::bound_reached);
  CHECK(r.bound == "seeds");
  CHECK(r.executions == 20);
}

// Evidence that the search searches: each defect below is out of reach of the all-natural run
// (first scheduled first, no fault, no slack), which holds; the explorer finds it through one
// kind of choice, and its counterexample fails again when replayed.
namespace {

bool natural_run_holds(const sim::Scenario& scenario) {
  return judge_choices(scenario, Costs{}, {}).violated.empty();
}

void found_off_the_natural_path(const sim::Scenario& scenario, model::ChoiceKind kind) {
  REQUIRE(natural_run_holds(scenario));
  ExploreResult r = search(scenario, Costs{}, ExploreOptions{});
  REQUIRE(r.verdict == ExploreResult::Verdict::violated);
  bool unnatural = false;
  for (const model::Choice& c : r.counterexample->choices) unnatural = unnatural || (c.kind == kind && c.pick != 0);
  CHECK(unnatural);
  CHECK_FALSE(judge_choices(scenario, Costs{}, r.counterexample->choices).violated.empty());
}

}  // namespace

TEST_CASE("the search finds a defect that only a same-instant order reaches") {
  // /fast and a 600 ms blocker connect at the same instant; /fast is listed first, so the
  // natural order serves it first. The other order leaves it behind the blocker.
  auto scenario = load(R"(
name = "order"
horizon = "5s"
[[clients]]
name = "fast"
connect_at = "10ms"
requests = [{ at = "10ms", path = "/fast" }]
[[clients]]
name = "blocker"
connect_at = "10ms"
requests = [{ at = "10ms", path = "/slow?ms=600" }]
[[expect]]
property = "latency"
of = "fast"
max = "100ms"
)");
  found_off_the_natural_path(scenario, model::ChoiceKind::order);
}

TEST_CASE("the search finds a defect that only where a fault lands reaches") {
  // Without R4's retry, an EMFILE leaves the door waiting for an edge that never comes; one
  // accept in the run may fail, and the natural run is the one where none does.
  auto scenario = load(small(3) + R"(
[[faults]]
kind = "accept_error"
errno = "EMFILE"
at = "0ms"
until = "10s"
count = 1
)", {{"loop.emfile_retry", "false"}});
  found_off_the_natural_path(scenario, model::ChoiceKind::fault);
}

TEST_CASE("the search finds a defect that only timer slack reaches") {
  // A 10 ms request answered within 40 ms, unless its spend oversleeps by 50 ms.
  auto scenario = load(R"(
name = "slack"
horizon = "5s"
[kernel]
timer_slack = ["0ms", "50ms"]
[[clients]]
name = "one"
connect_at = "10ms"
requests = [{ at = "10ms", path = "/slow?ms=10" }]
[[expect]]
property = "latency"
of = "one"
max = "40ms"
)");
  found_off_the_natural_path(scenario, model::ChoiceKind::slack);
}

TEST_CASE("merging states changes no verdict, and cuts executions short") {
  for (int arrivals : {2, 3}) {
    for (bool owed : {true, false}) {
      auto scenario = load(small(arrivals), {{"loop.owe_unfinished_batch", owed ? "true" : "false"}});
      ExploreOptions with, without;
      without.prune = false;
      ExploreResult a = search(scenario, Costs{}, with), b = search(scenario, Costs{}, without);
      INFO(arrivals << " arrivals, owed " << owed);
      CHECK(a.verdict == b.verdict);
      CHECK(a.merged);
      CHECK_FALSE(b.merged);
      if (a.verdict == ExploreResult::Verdict::none_found) {
        CHECK(a.cut > 0);
        CHECK(a.executions < b.executions);
      }
    }
  }
}

TEST_CASE("a limit met inside an execution cuts the search short, and its last state is no dead end") {
  ExploreOptions options;
  std::int64_t clock = 0;
  options.wall_ns = [&clock] { return clock += 1'000'000; };  // every reading, a millisecond on
  // Read at the start, before the first execution, then at every state: the limit falls
  // inside the first execution, which is thousands of steps long.
  options.time_limit_ns = 3'000'000;
  ExploreResult r = search(load(small(1000)), Costs{}, options);
  CHECK(r.verdict == ExploreResult::Verdict::bound_reached);
  CHECK(std::find(r.bounds.begin(), r.bounds.end(), "time limit") != r.bounds.end());
  CHECK(r.executions == 1);
  ExploreOptions steps;
  steps.max_steps = 20;
  ExploreResult s = search(load(small(5)), Costs{}, steps);
  CHECK(s.verdict == ExploreResult::Verdict::bound_reached);
  CHECK(s.bound == "max steps");
}

TEST_CASE("snapshots and replays reach the same states, executions and verdict") {
  for (bool owed : {true, false}) {
    auto scenario = load(small(4), {{"loop.owe_unfinished_batch", owed ? "true" : "false"}});
    ExploreOptions restoring, replaying, tight;
    replaying.snapshots = false;
    tight.snapshot_bytes = 1;  // one snapshot at most: the rest restore it and replay
    ExploreResult a = search(scenario, Costs{}, restoring), b = search(scenario, Costs{}, replaying),
                  c = search(scenario, Costs{}, tight);
    INFO("owed " << owed);
    CHECK(a.snapshots > 0);
    CHECK(b.snapshots == 0);
    if (owed) {  // without the rule the first execution strands: nothing to resume
      CHECK(a.restores > 0);
      CHECK(b.replayed_steps > 0);
      CHECK(c.replayed_steps > 0);
    }
    for (const ExploreResult* other : {&b, &c}) {
      CHECK(other->verdict == a.verdict);
      CHECK(other->states == a.states);
      CHECK(other->executions == a.executions);
      CHECK(other->transitions == a.transitions);
      auto picks = [](const ExploreResult& r) {
        std::vector<std::uint32_t> out;
        if (r.counterexample) {
          for (const model::Choice& c : r.counterexample->choices) out.push_back(c.pick);
        }
        return out;
      };
      CHECK(picks(*other) == picks(a));
    }
  }
}

TEST_CASE("a window that ends at the horizon may not land: the merged search finds what the tree finds") {
  // A request (or a connection) due somewhere in the last 100 ms lands at the horizon, which is
  // after the run, when each offer to land earlier is declined. The run's last offer was asked
  // twice in one state (World::finish steps once more), the second a revisit to the merged
  // search, which then never judged that run's end and passed.
  for (const char* key : {"requests", "connect_at"}) {
    std::string text = R"(
name = "edge"
horizon = "10s"
[[clients]]
name = "a"
)";
    text += std::string(key) == "requests" ? "connect_at = \"0ms\"\nkeep_alive = true\nrequests = [{ at = \"9900ms..10s\", path = \"/\" }]\n"
                                           : "connect_at = \"9900ms..10s\"\nrequests = [{ at = \"9900ms\", path = \"/\" }]\n";
    text += "[[expect]]\nproperty = \"answered\"\n";
    INFO(key);
    sim::Scenario scenario = load(text);
    ExploreOptions merged, tree, audited;
    tree.prune = false;
    audited.audit = true;
    ExploreResult a = search(scenario, Costs{}, merged), b = search(scenario, Costs{}, tree), c = search(scenario, Costs{}, audited);
    CHECK(b.verdict == ExploreResult::Verdict::violated);
    CHECK(a.verdict == b.verdict);
    CHECK(a.merged);
    CHECK(c.audit_failure.empty());
    CHECK(c.verdict == b.verdict);
    REQUIRE(a.counterexample);
    CHECK(judge_choices(scenario, Costs{}, a.counterexample->choices).violated == std::vector<std::string>{"answered"});
  }
}

TEST_CASE("by deviations: a defect that needs k non-natural choices is found at level k, before any execution with more") {
  auto scenario = load(small(5), {{"loop.owe_unfinished_batch", "false"}});
  ExploreOptions by_deviations, dfs;
  dfs.strategy = ExploreOptions::Strategy::dfs;
  ExploreResult a = search(scenario, Costs{}, by_deviations), b = search(scenario, Costs{}, dfs);
  REQUIRE(a.verdict == ExploreResult::Verdict::violated);
  REQUIRE(b.verdict == ExploreResult::Verdict::violated);
  const std::size_t k = model::not_natural(a.counterexample->choices);
  // Every level below k was searched whole and held; none above k was started.
  CHECK(a.deviations_completed == std::int64_t(k) - 1);
  CHECK(a.deviations_max == k);
  CHECK(k <= model::not_natural(b.counterexample->choices));
  CHECK_FALSE(judge_choices(scenario, Costs{}, a.counterexample->choices).violated.empty());
  // Found with no more executions than the depth-first search took.
  CHECK(a.executions <= b.executions);
}

TEST_CASE("by deviations: an exhaustive search reaches the states depth first reaches, and says every level is done") {
  for (int arrivals : {2, 3, 4}) {
    INFO(arrivals << " arrivals");
    auto scenario = load(small(arrivals));
    ExploreOptions by_deviations, dfs, tree;
    dfs.strategy = ExploreOptions::Strategy::dfs;
    tree.prune = false;
    ExploreResult a = search(scenario, Costs{}, by_deviations), b = search(scenario, Costs{}, dfs);
    REQUIRE(a.verdict == ExploreResult::Verdict::none_found);
    CHECK(b.verdict == a.verdict);
    CHECK(a.states == b.states);
    CHECK(a.deviations_completed == std::int64_t(a.deviations_max));
    CHECK(a.deviations_max > 0);
    if (arrivals == 2) {
      // As a tree, every execution is run once whichever order: the same count.
      ExploreOptions dfs_tree = tree;
      dfs_tree.strategy = ExploreOptions::Strategy::dfs;
      ExploreResult c = search(scenario, Costs{}, tree), d = search(scenario, Costs{}, dfs_tree);
      CHECK(c.executions == d.executions);
      CHECK(c.states == d.states);
    }
  }
}

TEST_CASE("by deviations: a search cut short names the last level it finished, and proves nothing") {
  auto scenario = load(small(4));
  ExploreOptions few;
  few.max_executions = 20;
  ExploreResult r = search(scenario, Costs{}, few);
  CHECK(r.verdict == ExploreResult::Verdict::bound_reached);
  CHECK(r.bound == "max executions");
  CHECK(r.executions == 20);
  CHECK(r.deviations_completed >= 0);
  CHECK(r.deviations_completed < std::int64_t(r.deviations_max));
}

namespace {

// A monitored property's file, searched: the tree's worst case first (--maximize), then the
// merged search at that bound (it must hold) and one unit (a nanosecond, or an accept) under it
// (it must fail). `bound_was` is the file's `max` as written.
void turns_at_the_worst_case(const std::string& name, const std::string& property, const std::string& bound_was,
                             bool count = false) {
  const std::string file = std::string(LOOPSIM_SOURCE_DIR) + "/tests/data/explore/" + name;
  ExploreOptions worst;
  worst.maximize = property;
  ExploreResult tree = search(sim::load_scenario(file), Costs{}, worst);
  REQUIRE(tree.verdict == ExploreResult::Verdict::none_found);
  REQUIRE(tree.worst);
  const std::int64_t w = tree.worst->measured;
  CHECK(w > 0);
  for (auto strategy : {ExploreOptions::Strategy::deviations, ExploreOptions::Strategy::dfs}) {
    INFO(name << ", strategy " << int(strategy) << ", worst " << w << " ns");
    ExploreOptions options;
    options.strategy = strategy;
    auto at_bound = [&](std::int64_t bound) {
      std::string text = text_of(file);
      const std::string was = count ? "max = " + bound_was : "max = \"" + bound_was + "\"";
      REQUIRE(text.find(was) != std::string::npos);
      text.replace(text.find(was), was.size(),
                   count ? "max = " + std::to_string(bound) : "max = \"" + std::to_string(bound) + "ns\"");
      return search(sim::parse_scenario(text, file), Costs{}, options);
    };
    ExploreResult proved = at_bound(w);
    CHECK(proved.verdict == ExploreResult::Verdict::none_found);
    CHECK(proved.merged);  // the monitor's state lets it merge
    CHECK(proved.executions < tree.executions);
    ExploreResult found = at_bound(w - 1);
    CHECK(found.verdict == ExploreResult::Verdict::violated);
  }
}

}  // namespace

TEST_CASE("latency merges on its monitor, and its verdict turns exactly at the worst case the tree measures") {
  turns_at_the_worst_case("latency-windows.toml", "latency", "4ms");
}

TEST_CASE("max_gap merges on its monitor, and its verdict turns exactly at the worst case the tree measures") {
  turns_at_the_worst_case("gap-windows.toml", "max_gap", "40ms");
}

TEST_CASE("batch_bound merges on its monitor, and its verdict turns exactly at the worst case the tree measures") {
  turns_at_the_worst_case("batch-windows.toml", "batch_bound", "16", true);
}

TEST_CASE("latency after another group merges on its monitor, and its verdict turns exactly at the worst case the tree measures") {
  turns_at_the_worst_case("after-windows.toml", "latency", "20ms");
}

TEST_CASE("no_stranded_backlog with a time merges on its monitor, and its verdict turns exactly at the worst case the tree measures") {
  turns_at_the_worst_case("idle-wait-windows.toml", "no_stranded_backlog", "20ms");
}

TEST_CASE("no_spin merges on its monitor, and its verdict turns exactly at the worst case the tree measures", "[long]") {
  turns_at_the_worst_case("spin-windows.toml", "no_spin", "100000", true);
}

TEST_CASE("post_latency merges on its monitor, and its verdict turns exactly at the worst case the tree measures") {
  turns_at_the_worst_case("post-windows.toml", "post_latency", "50ms");
}

TEST_CASE("shutdown_clean merges on its monitor: a drain the tree does not finish is proved, and its sabotage is found") {
  const std::string file = std::string(LOOPSIM_SOURCE_DIR) + "/scenarios/shutdown-handoff-full.toml";
  ExploreResult proved = search(sim::load_scenario(file), Costs{}, ExploreOptions{});
  CHECK(proved.verdict == ExploreResult::Verdict::none_found);
  CHECK(proved.merged);
  // The same question as a tree: ten times the executions do not finish it.
  ExploreOptions tree;
  tree.prune = false;
  tree.max_executions = proved.executions * 10;
  ExploreResult cut = search(sim::load_scenario(file), Costs{}, tree);
  CHECK(cut.verdict == ExploreResult::Verdict::bound_reached);
  sim::Arm sabotage;
  for (const sim::Arm& arm : sim::load_scenario(file).arms) {
    if (arm.name == "admission-stops-at-capacity") sabotage = arm;
  }
  REQUIRE(sabotage.name == "admission-stops-at-capacity");
  ExploreResult found = search(sim::scenario_for_arm(text_of(file), file, sabotage), Costs{}, ExploreOptions{});
  CHECK(found.merged);
  CHECK(found.verdict == ExploreResult::Verdict::violated);
  REQUIRE(found.counterexample);
  CHECK(found.counterexample->violated == std::vector<std::string>{"shutdown_clean"});
}
