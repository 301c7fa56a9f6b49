// The walking skeleton end to end in simulation: the accept-burst scenario through the real
// loop, its figures, and determinism.
#include <catch2/catch.hpp>
#include <fstream>
#include <set>
#include <sstream>

#include "checker/suite.hpp"
#include "sim/world.hpp"
#include "target/run.hpp"

using namespace loopsim;
using namespace std::chrono_literals;

namespace {

const std::string accept_burst = std::string(LOOPSIM_SOURCE_DIR) + "/scenarios/accept-burst.toml";

std::string trace_text(const sim::Trace& trace) {
  std::ostringstream out;
  sim::write_jsonl(trace, out);
  return out.str();
}

checker::SuiteResult run_arm(const std::string& arm, std::vector<sim::Override> set = {}) {
  checker::SuiteOptions options;
  options.only_arm = arm;
  options.overrides = std::move(set);
  return checker::run_suite(accept_burst, options);
}

const checker::Verdict& verdict(const checker::ArmReport& arm, const std::string& property) {
  for (const auto& v : arm.verdicts) {
    if (v.property == property) return v;
  }
  FAIL("no verdict for " << property);
  throw;
}

}  // namespace

TEST_CASE("two runs of the same scenario write byte-identical traces") {
  sim::Scenario s = sim::load_scenario(accept_burst);
  std::string first = trace_text(sim::run(s).trace);
  std::string second = trace_text(sim::run(s).trace);
  CHECK(first.size() > 10000);
  CHECK(first == second);
}

TEST_CASE("accept-burst: /fast is answered one batch of the burst after the blocker") {
  auto result = run_arm("base");
  const auto& base = result.report.arms.at(0);
  CHECK(base.judgement.held);
  // The blocker's batch took 15 of the burst at 10 ms each; /fast goes first in the next pass.
  CHECK(verdict(base, "latency").measured == Duration(150ms).count());
  CHECK(verdict(base, "latency").bound == Duration(240ms).count());
  CHECK(verdict(base, "max_gap").measured == Duration(10ms).count());
  CHECK(base.stats.answered == 122);
}

TEST_CASE("accept-burst: every sabotage arm is caught by the property it names") {
  checker::SuiteOptions options;
  auto result = checker::run_suite(accept_burst, options);
  REQUIRE(result.report.arms.size() == 5);
  for (const auto& arm : result.report.arms) {
    INFO(arm.name);
    CHECK(arm.judgement.held);
  }
  CHECK(result.report.held());
}

TEST_CASE("accept-burst: with nothing owed the blocker, /fast and exactly 31 of the burst are answered") {
  auto result = run_arm("nothing-owed");
  const auto& arm = result.report.arms.at(0);
  CHECK(arm.stats.answered == 33);
  CHECK(verdict(arm, "no_stranded_backlog").measured == 89);
}

TEST_CASE("accept-burst: an unbounded drain makes /fast wait for the whole burst") {
  auto result = run_arm("base", {{"loop.accept_batch", "0"}});
  const auto& base = result.report.arms.at(0);
  CHECK_FALSE(result.report.held());
  // The blocker's drain serves the other 119 ... all 120 of the burst before /fast.
  CHECK(verdict(base, "latency").measured == Duration(1200ms).count());
  CHECK_FALSE(verdict(base, "latency").held);
}

TEST_CASE("accept-burst: a wait that blocks while owed opens a gap of the idle timeout") {
  auto result = run_arm("blocking-wait-while-owed");
  const auto& gap = verdict(result.report.arms.at(0), "max_gap");
  CHECK_FALSE(gap.held);
  CHECK(gap.measured == Duration(1010ms).count());
}

namespace {

std::string without_header(const std::string& trace) { return trace.substr(trace.find('\n') + 1); }

}  // namespace

TEST_CASE("a run replays from its recorded choices alone, whatever the seed") {
  // drain-chunk: posts from foreign threads at the instants clients' requests arrive, a run
  // with a thousand same-instant choices.
  sim::Scenario s = sim::load_scenario(std::string(LOOPSIM_SOURCE_DIR) + "/scenarios/drain-chunk.toml");
  s.seed = 7;
  sim::RunResult first = sim::run(s);
  auto choices = sim::choices_of(first.trace);
  REQUIRE(choices.size() > 100);
  s.seed = 999;  // the seed's own choices would differ; the replay's take their place
  model::ReplayChooser replay(choices);
  sim::RunResult again = sim::run(s, "base", &replay);
  CHECK(replay.divergences() == 0);
  CHECK(replay.exhausted());
  CHECK(without_header(trace_text(again.trace)) == without_header(trace_text(first.trace)));
  sim::RunResult other = sim::run(s);
  CHECK(without_header(trace_text(other.trace)) != without_header(trace_text(first.trace)));
}

TEST_CASE("faults land where the scenario puts them") {
  std::string text = R"(
horizon = "3s"
[kernel]
rlimit_nofile = 64
[[clients]]
name = "c"
count = 6
connect_at = "10ms"
rate = 100
keep_alive = true
requests = [{ at = "10ms", path = "/fast" }]
[[faults]]
kind = "accept_error"
nth = 2
errno = "ENOBUFS"
[[faults]]
kind = "rlimit"
at = "1s"
value = 3
[[faults]]
kind = "reset"
of = "c"
at = "500ms"
count = 2
)";
  sim::RunResult r = sim::run(sim::parse_scenario(text, "faults.toml"));
  std::string trace = trace_text(r.trace);
  CHECK(trace.find("\"outcome\":\"ENOBUFS\"") != std::string::npos);
  CHECK(trace.find("{\"t\":1000000000,\"ev\":\"rlimit\",\"value\":3}") != std::string::npos);
  CHECK(trace.find("{\"t\":500000000,\"ev\":\"reset\",\"client\":\"c#0\"}") != std::string::npos);
  CHECK(trace.find("{\"t\":500000000,\"ev\":\"reset\",\"client\":\"c#1\"}") != std::string::npos);
  CHECK(trace.find("\"reset\",\"client\":\"c#2\"") == std::string::npos);
  // The loop sees the reset: it closes those two connections.
  CHECK(trace.find("{\"t\":500000000,\"ev\":\"close\",\"worker\":0,\"fd\":6,\"client\":\"c#0\"}") !=
        std::string::npos);
  CHECK(r.stats.answered == 6);  // ENOBUFS left the connection queued; the next pass took it
}

namespace {

// Two arrivals at 5 ms and a third free to land from 5 ms to 20 ms, accept batch 4.
const char* const windowed = R"(
horizon = "100ms"
[loop]
accept_batch = 4
[[clients]]
name = "pair"
count = 2
connect_at = "5ms"
requests = [{ at = "0ms", path = "/fast" }]
[[clients]]
name = "late"
count = 3
connect_at = "5ms..20ms"
requests = [{ at = "0ms", path = "/fast" }]
)";

// The instant each client of `group` connected, in client order.
std::vector<std::int64_t> connects(const std::string& trace, const std::string& group) {
  std::vector<std::int64_t> out;
  std::istringstream lines(trace);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("\"ev\":\"connect\"") == std::string::npos) continue;
    if (line.find("\"client\":\"" + group + "#") == std::string::npos) continue;
    out.push_back(std::stoll(line.substr(line.find("\"t\":") + 4)));
  }
  return out;
}

// Lands open windows at kernel calls at random (one offer in three), from a seed: a sample of
// the placements the explorer enumerates.
struct LandAtRandom final : model::Chooser {
  explicit LandAtRandom(std::uint64_t seed) : state(seed) {}
  std::uint32_t choose(model::ChoiceKind kind, std::uint32_t options) override {
    if (kind != model::ChoiceKind::land || model::splitmix64(state) % 3 != 0) return 0;
    return 1 + std::uint32_t(model::splitmix64(state) % (options - 1));
  }
  bool explores_windows() const override { return true; }
  std::uint64_t state;
};

}  // namespace

TEST_CASE("run draws each client's instant in its window from the seed: the same seed, the same instants") {
  sim::Scenario s = sim::parse_scenario(windowed, "windowed.toml");
  std::set<std::int64_t> seen;
  for (std::uint64_t seed : {1, 2, 3, 4, 5, 6, 7, 8}) {
    s.seed = seed;
    std::string a = trace_text(sim::run(s).trace), b = trace_text(sim::run(s).trace);
    CHECK(a == b);
    auto late = connects(a, "late");
    REQUIRE(late.size() == 3);
    for (std::int64_t t : late) {
      CHECK(t >= 5'000'000);
      CHECK(t <= 20'000'000);
      seen.insert(t);
    }
    CHECK(connects(a, "pair") == std::vector<std::int64_t>{5'000'000, 5'000'000});  // no window: fixed
  }
  CHECK(seen.size() > 8);  // drawn, not all at one end of the window
}

TEST_CASE("a windowed arrival may land between two accepts of one batch, where virtual time stands still") {
  sim::Scenario s = sim::parse_scenario(windowed, "windowed.toml");
  bool between = false;
  for (std::uint64_t seed = 1; seed <= 200 && !between; ++seed) {
    LandAtRandom chooser(seed);
    std::string text = trace_text(sim::run(s, "base", &chooser).trace);
    // Within one batch: an accept that succeeded, then a late client's connect, then an accept
    // of that client, with no wait in between.
    std::istringstream lines(text);
    int state = 0;
    for (std::string line; std::getline(lines, line);) {
      bool accept_ok = line.find("\"ev\":\"accept\"") != std::string::npos && line.find("\"outcome\":\"ok\"") != std::string::npos;
      if (line.find("\"ev\":\"events\"") != std::string::npos || line.find("\"ev\":\"batch_end\"") != std::string::npos) state = 0;
      else if (state == 0 && accept_ok) state = 1;
      else if (state == 1 && line.find("\"ev\":\"connect\"") != std::string::npos && line.find("late#") != std::string::npos) state = 2;
      else if (state == 2 && accept_ok && line.find("late#") != std::string::npos) between = true;
    }
  }
  CHECK(between);
}

TEST_CASE("SIGTERM and SIGINT reach the built-in loop as its shutdown, as loopsim live takes them") {
  std::ifstream in(std::string(LOOPSIM_SOURCE_DIR) + "/scenarios/shutdown-backlog.toml");
  std::stringstream text;
  text << in.rdbuf();
  const std::string original = text.str();
  const auto at = original.find("kind = \"shutdown\"");
  REQUIRE(at != std::string::npos);
  std::ostringstream asked;
  sim::write_jsonl(sim::run(sim::parse_scenario(original, "s.toml")).trace, asked);
  for (const char* signal : {"SIGTERM", "SIGINT"}) {
    std::string changed = original;
    changed.replace(at, std::string("kind = \"shutdown\"").size(), std::string("kind = \"signal\"\nsignal = \"") + signal + "\"");
    std::ostringstream signalled;
    sim::write_jsonl(sim::run(sim::parse_scenario(changed, "s.toml")).trace, signalled);
    CHECK(signalled.str() == asked.str());
  }
}

TEST_CASE("the kept digest is this pause's alone: once a step runs, the audit's transcript asks for a new one") {
  sim::Scenario scenario = sim::parse_scenario(R"(
[[clients]]
name = "one"
requests = [{ at = "1ms", path = "/fast" }]
)", "kept.toml");
  sim::World world(scenario, "base", nullptr);
  bool beyond = false;
  const std::uint64_t first = world.horizon_digest(beyond);
  CHECK(world.horizon_digest_kept(beyond) == first);
  CHECK(world.horizon_transcript().values().size() > 0);  // taken at this pause: it may be written down
  std::uint64_t steps = 0;
  while (steps < 3 && world.step()) ++steps;
  REQUIRE(steps == 3);
  // The world has left the pause that digest was taken at (a step began): nothing kept stands for it.
  CHECK_FALSE(world.horizon_digest_kept(beyond).has_value());
  CHECK_THROWS_WITH(world.horizon_transcript(), Catch::Contains("no horizon digest taken at this step"));
  // Asked again, the digest is taken afresh, and agrees with a walk made apart from it.
  bool fresh_beyond = false;
  CHECK(world.horizon_digest(beyond) == world.horizon_digest_afresh(fresh_beyond));
  CHECK(world.horizon_digest_kept(beyond).has_value());
}
