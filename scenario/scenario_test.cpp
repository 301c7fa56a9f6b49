// Scenario files: the DESIGN example loads unchanged; durations, bounds and overrides parse; and
// every bad input is an error at file:line:column with a hint.
#include "scenario/scenario.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/loopsim_process_for_tests.hpp"
#include "scenario/units.hpp"
#include "trace/trace.hpp"

namespace {

using namespace loopsim;
using namespace loopsim::sim;
using namespace std::chrono_literals;

// The example of scenarios/README.md, unchanged (scenarios/accept-burst.toml).
const std::string accept_burst = R"toml(name = "accept-burst"
description = "A 600 ms blocker; 120 queued 10 ms requests; a held keep-alive asks /fast"
seed = 1
horizon = "20s"

[kernel]
poller = "epoll"          # epoll | kqueue
listen_backlog = 128
rlimit_nofile = 1024

[loop]
mode = "loop-only"        # loop-only | pool
workers = 1
accept_batch = 16

[[clients]]
name = "fast"             # connects first and stays connected
connect_at = "0ms"
requests = [{ at = "100ms", path = "/fast" }]
keep_alive = true

[[clients]]
name = "blocker"
connect_at = "10ms"
requests = [{ at = "10ms", path = "/slow?ms=600" }]

[[clients]]
name = "burst"
count = 120
connect_at = "50ms"       # all queue while the loop sleeps in the blocker
requests = [{ at = "50ms", path = "/slow?ms=10" }]

[[expect]]
property = "answered"     # every request answered exactly once
[[expect]]
property = "no_stranded_backlog"
[[expect]]
property = "latency"      # /fast answered within 1.5 batches of the blocker's answer
of = "fast"
after = "blocker"
max = "1.5 batches"       # units: time, or "requests"/"batches" of the measured request cost
[[expect]]
property = "max_gap"      # no two burst answers further apart than this
of = "burst"
max = "500ms"

[[arms]]                  # the negative arm: the probe must see the drain it guards against
name = "unbounded-drain"
set = { "loop.accept_batch" = 0 }
expect_violated = ["latency"]
)toml";

// The error parse_scenario throws for `text` (named "t.toml"); fails the test if none.
ScenarioError error_for(const std::string& text, const std::vector<Override>& overrides = {}) {
  try {
    parse_scenario(text, "t.toml", overrides);
  } catch (const ScenarioError& e) {
    return e;
  }
  FAIL("no ScenarioError for:\n" << text);
  return ScenarioError("", "");
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("The DESIGN example loads with every value it states and the defaults it omits") {
  const Scenario s = parse_scenario(accept_burst, "scenarios/accept-burst.toml");
  CHECK(s.file == "scenarios/accept-burst.toml");
  CHECK(s.name == "accept-burst");
  CHECK(s.seed == 1);
  CHECK(s.horizon == Instant{20s});
  CHECK(s.kernel.poller == PollerFlavour::epoll);
  CHECK(s.kernel.listen_backlog == 128);
  CHECK(s.kernel.somaxconn == 4096);
  CHECK(s.kernel.rlimit_nofile == 1024);
  CHECK(s.loop.mode == HandlerMode::loop_only);
  CHECK(s.workers == 1);
  CHECK(s.loop.accept_batch == 16);
  CHECK(s.loop.idle_timeout == 1s);

  REQUIRE(s.clients.size() == 3);
  CHECK(s.clients[0].name == "fast");
  CHECK(s.clients[0].keep_alive);
  CHECK(s.clients[0].connect_at == Window{Instant{0ms}, Instant{0ms}});
  REQUIRE(s.clients[0].requests.size() == 1);
  CHECK(s.clients[0].requests[0].at == Window{Instant{100ms}, Instant{100ms}});
  CHECK(s.clients[0].requests[0].path == "/fast");
  CHECK(s.clients[1].name == "blocker");
  CHECK(s.clients[1].count == 1);
  CHECK_FALSE(s.clients[1].keep_alive);
  CHECK(s.clients[2].name == "burst");
  CHECK(s.clients[2].count == 120);
  CHECK(s.clients[2].connect_at == Window{Instant{50ms}, Instant{50ms}});
  CHECK(s.clients[2].requests[0].path == "/slow?ms=10");
}

TEST_CASE("The DESIGN example's expectations and arm keep their bounds and overrides") {
  const Scenario s = parse_scenario(accept_burst, "accept-burst.toml");
  REQUIRE(s.expect.size() == 4);
  CHECK(s.expect[0].property == "answered");
  CHECK(s.expect[1].property == "no_stranded_backlog");
  CHECK(s.expect[2].property == "latency");
  CHECK(s.expect[2].of == "fast");
  CHECK(s.expect[2].after == "blocker");
  CHECK(s.expect[2].line == 37);
  REQUIRE(s.expect[2].max.has_value());
  CHECK(s.expect[2].max->unit == Bound::Unit::batches);
  CHECK(s.expect[2].max->value == 1.5);
  CHECK(s.expect[2].max->text == "1.5 batches");
  CHECK_FALSE(s.expect[2].min.has_value());
  REQUIRE(s.expect[3].max.has_value());
  CHECK(s.expect[3].max->unit == Bound::Unit::time);
  CHECK(s.expect[3].max->value == 500'000'000.0);

  REQUIRE(s.arms.size() == 1);
  CHECK(s.arms[0].name == "unbounded-drain");
  REQUIRE(s.arms[0].set.size() == 1);
  CHECK(s.arms[0].set[0].key == "loop.accept_batch");
  CHECK(s.arms[0].set[0].value == "0");
  CHECK(s.arms[0].expect_violated == std::vector<std::string>{"latency"});
}

TEST_CASE("load_scenario reads a file and names an unreadable one at line 1 column 1") {
  const auto path = std::filesystem::temp_directory_path() / "loopsim_scenario_test.toml";
  std::ofstream(path) << accept_burst;
  const Scenario s = load_scenario(path.string(), {parse_override("seed=7")});
  std::filesystem::remove(path);
  CHECK(s.file == path.string());
  CHECK(s.seed == 7);
  try {
    load_scenario("/nonexistent/x.toml");
    FAIL("no error");
  } catch (const ScenarioError& e) {
    CHECK(std::string(e.what()) == "/nonexistent/x.toml:1:1: no such scenario file");
  }
}

TEST_CASE("Durations parse into whole nanoseconds with integer arithmetic") {
  CHECK(parse_duration("600ms") == Duration{600'000'000});
  CHECK(parse_duration("80us") == Duration{80'000});
  CHECK(parse_duration("1.5s") == Duration{1'500'000'000});
  CHECK(parse_duration("250ns") == Duration{250});
  CHECK(parse_duration("0us") == Duration{0});
  CHECK(parse_duration("0.000000001s") == Duration{1});
  CHECK(parse_duration("2.50ms") == Duration{2'500'000});
  CHECK(parse_duration("1000000s") == duration_max);
}

TEST_CASE("a duration is written exactly, in the largest unit that divides it, and reads back the same") {
  CHECK(duration_text(Duration{0}) == "0s");
  CHECK(duration_text(Duration{1500}) == "1500ns");
  CHECK(duration_text(Duration{20'000}) == "20us");
  CHECK(duration_text(Duration{2'500'000}) == "2500us");
  CHECK(duration_text(Duration{20'000'000}) == "20ms");
  CHECK(duration_text(Duration{3'000'000'000}) == "3s");
  CHECK(duration_text(duration_max) == "1000000s");
  for (std::int64_t ns : {1ll, 999ll, 1'001ll, 123'456'789ll, 999'999'999'999'999ll}) {
    CHECK(parse_duration(duration_text(Duration{ns})) == Duration{ns});
  }
}

TEST_CASE("Malformed, negative, unitless and oversized durations are rejected with a reason") {
  CHECK_THROWS_WITH(parse_duration("10"), Catch::Contains("has no unit"));
  CHECK_THROWS_WITH(parse_duration("ms"), Catch::Contains("has no number"));
  CHECK_THROWS_WITH(parse_duration("-1ms"), Catch::Contains("negative"));
  CHECK_THROWS_WITH(parse_duration("1h"), Catch::Contains("unknown unit \"h\""));
  CHECK_THROWS_AS(parse_duration(""), std::invalid_argument);
  CHECK_THROWS_AS(parse_duration("1.s"), std::invalid_argument);
  CHECK_THROWS_AS(parse_duration("1..5s"), std::invalid_argument);
  CHECK_THROWS_AS(parse_duration("10 ms"), std::invalid_argument);
  CHECK_THROWS_WITH(parse_duration("1.5ns"), Catch::Contains("finer than one nanosecond"));
  CHECK_THROWS_WITH(parse_duration("1000000.000000001s"), Catch::Contains("too long (at most 1000000s"));
  CHECK_THROWS_WITH(parse_duration("9223372037s"), Catch::Contains("too long"));
  CHECK_THROWS_WITH(parse_duration("99999999999999999999ns"), Catch::Contains("too large"));
}

TEST_CASE("An unknown key is reported at the key's line and column with the known keys") {
  const ScenarioError e = error_for("name = \"x\"\n[loop]\n  acept_batch = 1\n");
  CHECK(std::string(e.what()) == "t.toml:3:3: unknown key \"acept_batch\" in [loop]");
  CHECK_THAT(e.hint, Catch::StartsWith("known keys in [loop]: mode, workers, accept_batch"));
  const ScenarioError top = error_for("seed = 1\nsede = 2\n");
  CHECK(std::string(top.what()) == "t.toml:2:1: unknown key \"sede\" in the top-level table");
  const ScenarioError request =
      error_for("[[clients]]\nname = \"a\"\nrequests = [{ at = \"1ms\", pth = \"/fast\" }]\n");
  CHECK(std::string(request.what()) == "t.toml:3:27: unknown key \"pth\" in a request");
}

TEST_CASE("A value of the wrong type is reported at the value") {
  const ScenarioError e = error_for("[kernel]\nlisten_backlog = \"128\"\n");
  CHECK(std::string(e.what()) ==
        "t.toml:2:18: kernel.listen_backlog must be an integer, not a string");
  CHECK(error_for("[loop]\naccept_after_events = 1\n").hint ==
        "write true or false, without quotes");
  CHECK_THAT(error_for("[[clients]]\nname = 7\n").what(), Catch::StartsWith("t.toml:2:8: "));
  CHECK_THAT(error_for("loop = 3\n").what(), Catch::Contains("loop must be a table"));
}

TEST_CASE("A bad unit in horizon names the unit and hints at the duration syntax") {
  const ScenarioError e = error_for("horizon = \"20h\"\n");
  CHECK(std::string(e.what()) ==
        "t.toml:1:11: horizon: \"20h\" has an unknown unit \"h\" (use ns, us, ms or s)");
  CHECK(e.hint == "durations look like \"600ms\", \"80us\", \"1.5s\", \"250ns\"");
  CHECK_THAT(error_for("horizon = 20\n").what(),
             Catch::Equals("t.toml:1:11: horizon must be a duration string, not an integer"));
  CHECK_THAT(error_for("horizon = \"0s\"\n").what(), Catch::Contains("longer than zero"));
}

TEST_CASE("A target's spin_limit of zero is refused at its value, as no program makes a call in no time") {
  // "0s" once meant a watchdog that fired at the first instruction between two calls.
  CHECK_THAT(error_for("[target]\nexec = [\"sh\"]\nport = 8080\nspin_limit = \"0s\"\n").what(),
             Catch::Equals("t.toml:4:14: target.spin_limit must be longer than zero"));
}

TEST_CASE("A TOML syntax error keeps its file, line and column") {
  const ScenarioError e = error_for("seed = 1\nhorizon = 20s\n");
  CHECK_THAT(e.what(), Catch::StartsWith("t.toml:2:"));
  CHECK_THAT(e.hint, Catch::Contains("strings need quotes"));
}

TEST_CASE("Bounds are times, counts, requests or batches and keep their text") {
  const std::string base =
      "[[clients]]\nname = \"a\"\n[[expect]]\nproperty = \"max_gap\"\nof = \"a\"\n";
  const auto max_of = [&](const std::string& bound) {
    return *parse_scenario(base + "max = " + bound + "\n", "t.toml").expect[0].max;
  };
  const auto count_of = [](const std::string& bound) {
    return *parse_scenario("[[expect]]\nproperty = \"no_spin\"\nmax = " + bound + "\n", "t.toml").expect[0].max;
  };
  CHECK(count_of("3").unit == Bound::Unit::count);
  CHECK(count_of("3").value == 3);
  // A time property's bound needs its unit; a count property's is a whole number.
  CHECK_THAT(error_for(base + "max = 3\n").what(), Catch::Contains("t.toml:6:7: expect.max: max_gap measures time"));
  CHECK_THAT(error_for("[[expect]]\nproperty = \"no_spin\"\nmax = \"3ms\"\n").what(),
             Catch::Contains("t.toml:3:7: expect.max: no_spin counts"));
  CHECK_THAT(error_for("[[expect]]\nproperty = \"capacity\"\nmin = 5\nmax = 4\n").what(),
             Catch::Contains("t.toml:3:7: min (5) is greater than max (4)"));
  CHECK_THAT(error_for("[[expect]]\nproperty = \"no_spin\"\nmax = 1000000000000001\n").what(),
             Catch::Contains("at most 1000000000000000"));
  CHECK_THAT(error_for(base + "max = \"1000001 requests\"\n").what(), Catch::Contains("at most 1000000 requests"));
  CHECK(max_of("\"2 requests\"").unit == Bound::Unit::requests);
  CHECK(max_of("\"1 batch\"").unit == Bound::Unit::batches);
  CHECK(max_of("\"80us\"").value == 80'000.0);
  CHECK(max_of("\"80us\"").text == "80us");
  CHECK_THAT(error_for(base + "max = \"1.5 batchs\"\n").what(),
             Catch::Equals("t.toml:6:7: expect.max: \"1.5 batchs\": unknown unit \"batchs\""));
  CHECK_THAT(error_for(base + "max = 1.5\n").what(), Catch::Contains("not a float"));
  CHECK_THAT(error_for(base + "min = -1\n").what(), Catch::Contains("at least 0"));
}

TEST_CASE("A --set override changes the value after the same checks as the file") {
  CHECK(parse_override("loop.accept_batch=0").key == "loop.accept_batch");
  CHECK(parse_override("loop.accept_batch = 0").value == "0");
  CHECK(parse_override("description=a=b").value == "a=b");
  // A malformed one points where the missing piece belongs.
  for (const auto& [text, says] : {std::pair{"loop.workers", "--set:1:13: expected key=value"},
                                   std::pair{"=4", "--set:1:1: the key is missing"},
                                   std::pair{"loop.workers= ", "--set:1:14: the value is missing"}}) {
    try {
      parse_override(text);
      FAIL(text);
    } catch (const ScenarioError& e) {
      CHECK_THAT(e.what(), Catch::StartsWith(says));
    }
  }
  const std::vector<Override> overrides = {
      parse_override("loop.accept_batch=0"), parse_override("kernel.poller=kqueue"),
      parse_override("horizon=10s"),         parse_override("loop.owe_unfinished_batch=false"),
      parse_override("kernel.somaxconn=64"), parse_override("name=\"renamed\"")};
  const Scenario s = parse_scenario(accept_burst, "accept-burst.toml", overrides);
  CHECK(s.loop.accept_batch == 0);
  CHECK(s.kernel.poller == PollerFlavour::kqueue);
  CHECK(s.horizon == Instant{10s});
  CHECK_FALSE(s.loop.owe_unfinished_batch);
  CHECK(s.kernel.somaxconn == 64);
  CHECK(s.name == "renamed");
  CHECK(s.clients.size() == 3);
}

TEST_CASE("A bad --set key or value is an error naming the override, at its column") {
  // A key no scenario has is refused as the --set is read, before any file is.
  const auto refused = [](const char* text) {
    try {
      parse_override(text);
    } catch (const ScenarioError& e) {
      return e;
    }
    return ScenarioError(std::string("not refused: ") + text, "");
  };
  const ScenarioError e = refused("loop.acept_batch=1");
  CHECK(std::string(e.what()) ==
        "--set:1:1: --set loop.acept_batch: unknown key \"acept_batch\" in [loop]");
  CHECK_THAT(e.hint, Catch::Contains("accept_batch"));
  // One that came from no command line (a program's own) is checked where it is applied.
  CHECK_THAT(error_for(accept_burst, {Override{"loop.acept_batch", "1"}}).what(),
             Catch::Equals("t.toml:1:1: --set loop.acept_batch: unknown key \"acept_batch\" in [loop]"));
  CHECK_THAT(error_for(accept_burst, {parse_override("loop.accept_batch=many")}).what(),
             Catch::Equals("--set:1:19: --set loop.accept_batch: loop.accept_batch must be an "
                           "integer, not a string"));
  CHECK_THAT(error_for(accept_burst, {parse_override("loop.accept_batch =  many")}).what(),
             Catch::StartsWith("--set:1:22: "));
  // An override that came from no command line (a program's own) is placed in the file.
  CHECK_THAT(error_for(accept_burst, {Override{"loop.accept_batch", "many"}}).what(),
             Catch::StartsWith("t.toml:1:1: --set loop.accept_batch: "));
  CHECK_THAT(error_for(accept_burst, {parse_override("kernel.poller=select")}).hint,
             Catch::Equals("one of: epoll, kqueue"));
  CHECK_THAT(refused("clients.count=2").what(), Catch::Contains("array of tables"));
  CHECK_THAT(refused("loop=1").what(), Catch::Contains("name a key inside [loop]"));
  CHECK_THAT(refused("seed.x=1").what(), Catch::Contains("seed is not a table"));
  CHECK_THAT(refused("a.b.c=1").what(), Catch::Contains("top-level key or section.key"));
  CHECK_THROWS_AS(parse_override("loop.accept_batch"), ScenarioError);
  CHECK_THROWS_AS(parse_override("=1"), ScenarioError);
  CHECK_THROWS_AS(parse_override("seed="), ScenarioError);
}

TEST_CASE("An arm's set applies on top of the base and --set wins over it") {
  const Scenario base = parse_scenario(accept_burst, "accept-burst.toml");
  const Scenario arm = scenario_for_arm(accept_burst, "accept-burst.toml", base.arms[0]);
  CHECK(arm.loop.accept_batch == 0);
  CHECK(arm.arms.size() == 1);
  CHECK(arm.clients.size() == 3);
  const Scenario pinned = scenario_for_arm(accept_burst, "accept-burst.toml", base.arms[0],
                                           {parse_override("loop.accept_batch=4")});
  CHECK(pinned.loop.accept_batch == 4);
}

TEST_CASE("An arm's set may use bare dotted keys and an override may create its section") {
  const std::string text =
      "[[expect]]\nproperty = \"answered\"\n[[arms]]\nname = \"kq\"\n"
      "set = { kernel.poller = \"kqueue\", loop.accept_batch = 2 }\n"
      "expect_violated = [\"answered\"]\n";
  const Scenario base = parse_scenario(text, "t.toml", {parse_override("loop.workers=1")});
  REQUIRE(base.arms[0].set.size() == 2);
  CHECK(base.arms[0].set[0].key == "kernel.poller");
  CHECK(base.arms[0].set[1].key == "loop.accept_batch");
  const Scenario arm = scenario_for_arm(text, "t.toml", base.arms[0]);
  CHECK(arm.kernel.poller == PollerFlavour::kqueue);
  CHECK(arm.loop.accept_batch == 2);
  CHECK_THAT(error_for("kernel = 5\n", {parse_override("kernel.poller=kqueue")}).what(),
             Catch::Equals("t.toml:1:10: kernel must be a table, not an integer"));
}

TEST_CASE("A bad key in an arm's set is reported where the arm writes it") {
  const std::string text = replaced(accept_burst, "\"loop.accept_batch\"", "\"loop.acept_batch\"");
  const ScenarioError e = error_for(text);
  CHECK(std::string(e.what()) ==
        "t.toml:49:9: arm \"unbounded-drain\" set loop.acept_batch: unknown key \"acept_batch\" "
        "in [loop]");
  const std::string bad_value =
      replaced(accept_burst, "\"loop.accept_batch\" = 0", "\"loop.accept_batch\" = \"all\"");
  CHECK_THAT(error_for(bad_value).what(),
             Catch::StartsWith("t.toml:49:9: arm \"unbounded-drain\" set loop.accept_batch: "));
}

TEST_CASE("The loop's rule knobs, posters and actions load") {
  auto s = parse_scenario(
      "[loop]\nworkers = 3\nmode = \"pool\"\npool_threads = 2\ndrain_chunk = 32\nyield_batch = 4\n"
      "emfile_retry = false\nemfile_backoff = \"50ms\"\nowe_after_emfile = true\n"
      "max_handles = 4096\nhandle_policy = \"fixed\"\non_full = \"refuse\"\n"
      "inverted = true\ninverted_owed_passes = false\naccept_share = false\n"
      "shutdown_clears_owed = false\nshutdown_admits_handoffs = false\n"
      "[[posters]]\nname = \"job\"\nat = \"100200us\"\ncost = \"5us\"\ncount = 3\nevery = \"1ms\"\n"
      "[[actions]]\nkind = \"shutdown\"\nat = \"2s\"\n",
      "t.toml");
  CHECK(s.workers == 3);
  CHECK(s.loop.mode == HandlerMode::pool);
  CHECK(s.loop.pool_threads == 2);
  CHECK(s.loop.drain_chunk == 32);
  CHECK(s.loop.yield_batch == 4);
  CHECK_FALSE(s.loop.emfile_retry);
  CHECK(s.loop.emfile_backoff == 50ms);
  CHECK(s.loop.owe_after_emfile);
  CHECK(s.loop.max_handles == 4096);
  CHECK(s.loop.handle_policy == HandlePolicy::fixed);
  CHECK(s.loop.on_full == OnFull::refuse);
  CHECK(s.loop.inverted);
  CHECK_FALSE(s.loop.inverted_owed_passes);
  CHECK_FALSE(s.loop.accept_share);
  CHECK_FALSE(s.loop.shutdown_clears_owed);
  CHECK_FALSE(s.loop.shutdown_admits_handoffs);
  REQUIRE(s.posters.size() == 1);
  CHECK(s.posters[0].at == Window{Instant{100200us}, Instant{100200us}});
  CHECK(s.posters[0].count == 3);
  REQUIRE(s.actions.size() == 1);
  CHECK(s.actions[0].at == Window{Instant{2s}, Instant{2s}});
  CHECK_THAT(error_for("[loop]\nhandle_policy = \"huge\"\n").what(),
             Catch::Contains("unknown value \"huge\""));
  CHECK_THAT(error_for("[[actions]]\nkind = \"reboot\"\n").what(), Catch::Contains("unknown value"));
}

TEST_CASE("An action the run ends before is refused where it is written, not left never to happen") {
  // A run stops at its horizon: what falls due there or later does not happen.
  CHECK_THAT(error_for("horizon = \"1s\"\n[[actions]]\nkind = \"shutdown\"\nat = \"1s\"\n").what(),
             Catch::Equals("t.toml:4:6: actions.at: 1s is not before the horizon (1s): the run ends first, and the "
                           "action would never happen"));
  CHECK_THAT(error_for("horizon = \"1s\"\n[[actions]]\nkind = \"shutdown\"\nat = \"2s..3s\"\n").what(),
             Catch::Contains("2s is not before the horizon"));
  // Just before it, or a window that opens before it, happens.
  CHECK(sim::parse_scenario("horizon = \"1s\"\n[[actions]]\nkind = \"shutdown\"\nat = \"999ms\"\n", "t.toml")
            .actions.size() == 1);
  CHECK(sim::parse_scenario("horizon = \"1s\"\n[[actions]]\nkind = \"shutdown\"\nat = \"900ms..2s\"\n", "t.toml")
            .actions.size() == 1);
  // An arm that moves the horizon is checked with its own.
  CHECK_THAT(error_for("horizon = \"5s\"\n[[actions]]\nkind = \"shutdown\"\nat = \"2s\"\n"
                       "[[arms]]\nname = \"short\"\nset = { horizon = \"1s\" }\n").what(),
             Catch::Contains("not before the horizon (1s)"));
}

TEST_CASE("Required keys, counts and enum values are checked") {
  CHECK_THAT(error_for("seed = 1\n\n[[clients]]\ncount = 2\n").what(),
             Catch::Equals("t.toml:3:1: [[clients]] needs name"));
  CHECK_THAT(error_for("[[expect]]\nof = \"a\"\n").what(), Catch::Contains("needs property"));
  CHECK_THAT(error_for("[[arms]]\nset = {}\n").what(), Catch::Contains("needs name"));
  CHECK_THAT(error_for("[[arms]]\nname = \"base\"\n").what(),
             Catch::StartsWith("t.toml:2:8: the arm name \"base\" is reserved"));
  CHECK_THAT(error_for("[[clients]]\nname = \"a\"\ncount = 0\n").what(),
             Catch::Equals("t.toml:3:9: clients.count must be at least 1, not 0"));
  const ScenarioError mode = error_for("[loop]\nmode = \"threads\"\n");
  CHECK(std::string(mode.what()) == "t.toml:2:8: loop.mode: unknown value \"threads\"");
  CHECK(mode.hint == "one of: loop-only, pool");
  CHECK_THAT(error_for("format = 2\n").what(), Catch::Contains("format 2 is not supported"));
  CHECK(parse_scenario("format = 1\n", "t.toml").name == "t");
}

TEST_CASE("References to client groups, properties and names are checked") {
  CHECK_THAT(error_for(replaced(accept_burst, "of = \"fast\"", "of = \"fsat\"")).what(),
             Catch::Equals("t.toml:39:6: no [[clients]] group or [[posters]] entry is named \"fsat\""));
  CHECK_THAT(error_for(replaced(accept_burst, "[\"latency\"]", "[\"latncy\"]")).what(),
             Catch::Contains("no [[expect]] checks the property \"latncy\""));
  CHECK_THAT(
      error_for(replaced(accept_burst, "\"blocker\"\nconnect_at", "\"fast\"\nconnect_at")).what(),
      Catch::Contains("[[clients]] \"fast\" is defined twice"));
}

TEST_CASE("Faults load with the keys their kind takes, and refuse the others") {
  const std::string base = "[[clients]]\nname = \"burst\"\n";
  auto s = parse_scenario(base +
                              "[[faults]]\nkind = \"accept_error\"\nnth = 3\nerrno = \"EMFILE\"\n"
                              "[[faults]]\nkind = \"accept_error\"\nat = \"1s\"\nuntil = \"2s\"\n"
                              "errno = \"ECONNABORTED\"\ncount = 2\n"
                              "[[faults]]\nkind = \"rlimit\"\nat = \"1s\"\nvalue = 64\n"
                              "[[faults]]\nkind = \"reset\"\nat = \"700ms\"\nof = \"burst\"\n",
                          "t.toml");
  REQUIRE(s.faults.size() == 4);
  CHECK(s.faults[0].nth == 3);
  CHECK(s.faults[0].error == EMFILE);
  CHECK(s.faults[1].until == Instant{std::chrono::seconds(2)});
  CHECK(s.faults[1].count == 2);
  CHECK(s.faults[2].value == 64);
  CHECK(s.faults[3].of == "burst");

  auto error = [&](const std::string& fault) {
    try {
      parse_scenario(base + "[[faults]]\n" + fault, "t.toml");
    } catch (const ScenarioError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(error("kind = \"accept_error\"\nerrno = \"EMFILE\"\n"),
             Catch::Contains("needs either nth or at"));
  CHECK_THAT(error("kind = \"accept_error\"\nerrno = \"EMFILE\"\nnth = 2\nat = \"1s\"\nuntil = \"2s\"\n"),
             Catch::Contains("t.toml:7:6: an accept_error fault takes nth or at, not both"));
  // A window's end without its start is placed at the until, whatever else the fault holds.
  CHECK_THAT(error("kind = \"accept_error\"\nerrno = \"EMFILE\"\nuntil = \"2s\"\n"),
             Catch::StartsWith("t.toml:6:9: until closes a window that at opens"));
  CHECK_THAT(error("kind = \"accept_error\"\nerrno = \"EMFILE\"\nnth = 2\nuntil = \"2s\"\n"),
             Catch::StartsWith("t.toml:7:9: until closes a window that at opens"));
  CHECK_THAT(error("kind = \"rlimit\"\nat = \"1s\"\n"), Catch::Contains("rlimit faults need value"));
  CHECK_THAT(error("kind = \"accept_error\"\nerrno = \"EMFILE\"\nnth = 2\ncount = 3\n"),
             Catch::StartsWith("t.toml:7:9: count bounds the failures in an at/until window"));
  CHECK_THAT(error("kind = \"rlimit\"\nat = \"1s\"\nvalue = 3\nof = \"burst\"\n"),
             Catch::StartsWith("t.toml:7:6: of means nothing to rlimit faults"));
  CHECK_THAT(error("kind = \"reset\"\nat = \"1s\"\nof = \"nobody\"\n"),
             Catch::Contains("no [[clients]] group is named \"nobody\""));
  CHECK_THAT(error("kind = \"accept_error\"\nnth = 1\nerrno = \"EPERM\"\n"),
             Catch::Contains("unknown value \"EPERM\""));
  CHECK_THAT(error("kind = \"accept_error\"\nat = \"2s\"\nuntil = \"1s\"\nerrno = \"EMFILE\"\n"),
             Catch::Contains("until must come after at"));
}

TEST_CASE("timer_slack takes one duration or a set of them") {
  auto s = parse_scenario("[kernel]\ntimer_slack = [\"0us\", \"50us\"]\n", "t.toml");
  CHECK(s.kernel.timer_slack == std::vector<Duration>{Duration(0), std::chrono::microseconds(50)});
  s = parse_scenario("[kernel]\ntimer_slack = \"2ms\"\n", "t.toml");
  CHECK(s.kernel.timer_slack == std::vector<Duration>{std::chrono::milliseconds(2)});
}

TEST_CASE("A target table names a program found from the file's folder or on PATH, and a port") {
  const std::string target = "[target]\nexec = [\"sh\", \"-c\", \"true\"]\nport = 8080\n";
  Scenario s = parse_scenario(target, "t.toml");
  REQUIRE(s.target);
  CHECK(s.target->exec == std::vector<std::string>{"sh", "-c", "true"});
  CHECK(s.target->program.ends_with("/sh"));
  CHECK(s.target->port == 8080);
  CHECK(s.target->call_cost == 1us);
  CHECK(s.source.find("[target]") != std::string::npos);  // the text its process reads back
  CHECK(std::string(error_for("[target]\nexec = []\nport = 1\n").what()) == "t.toml:2:8: target.exec must name a program");
  CHECK(std::string(error_for("[target]\nexec = [\"./no-such\"]\nport = 1\n").what()).find(
            "t.toml:2:8: target.exec: no program \"./no-such\" (a relative path is taken from the target's folder)") == 0);
  CHECK(std::string(error_for("[target]\nexec = [\"sh\"]\n").what()) == "t.toml:1:1: [target] needs port, where the program listens");
  CHECK(std::string(error_for("[target]\nexec = [\"sh\"]\nport = 0\n").what()) == "t.toml:3:8: target.port must be at least 1, not 0");
  CHECK(std::string(error_for("[target]\nexec = [\"sh\"]\nport = 70000\n").what()) == "t.toml:3:8: target.port must be at most 65535, not 70000");
  // --set target.exec=[...] overrides it, checked like the file.
  Scenario other = parse_scenario(target, "t.toml", {Override{"target.exec", "[\"env\"]"}});
  CHECK(other.target->program.ends_with("/env"));
}

TEST_CASE("A target runs in its dir, taken from the file's folder, and exec[0]'s relative path starts there") {
  namespace fs = std::filesystem;
  const std::string folder = loopsim::testing::temp_path("target-dir");
  fs::create_directories(folder + "/sub/bin");
  { std::ofstream(folder + "/sub/bin/prog") << "#!/bin/sh\n"; }
  const std::string file = folder + "/t.toml";
  Scenario s = parse_scenario("[target]\nexec = [\"bin/prog\", \"a.conf\"]\nport = 1\ndir = \"sub\"\n", file);
  CHECK(s.target->folder == fs::path(folder + "/sub").lexically_normal().string());
  CHECK(s.target->program == fs::path(folder + "/sub/bin/prog").lexically_normal().string());
  Scenario plain = parse_scenario("[target]\nexec = [\"sh\"]\nport = 1\n", file);
  CHECK(plain.target->folder == fs::path(folder).lexically_normal().string());
  try {
    parse_scenario("[target]\nexec = [\"sh\"]\nport = 1\ndir = \"nowhere\"\n", file);
    FAIL("a dir that does not exist was taken");
  } catch (const ScenarioError& e) {
    CHECK(std::string(e.what()).find(file + ":4:7: target.dir: no folder ") == 0);
  }
}

TEST_CASE("A target is its own loop: a loop knob, a poster or an action is an error at its key") {
  const std::string target = "[target]\nexec = [\"sh\"]\nport = 8080\n";
  ScenarioError knob = error_for(target + "[loop]\naccept_batch = 4\n");
  CHECK(std::string(knob.what()) == "t.toml:5:16: loop.accept_batch is a knob of the built-in loop, and the scenario runs a [target]");
  ScenarioError set = error_for(target, {Override{"loop.accept_batch", "4"}});
  CHECK(std::string(set.what()).find("--set loop.accept_batch: loop.accept_batch is a knob of the built-in loop") != std::string::npos);
  ScenarioError poster = error_for(target + "[[posters]]\nname = \"p\"\nat = \"1ms\"\n");
  CHECK(std::string(poster.what()).find("[[posters]] cannot reach into a target program yet") != std::string::npos);
}

TEST_CASE("A fault scoped to arms is injected only in them, and names only arms that exist") {
  const std::string text = R"toml(
[[clients]]
name = "c"
[[faults]]
kind = "accept_error"
errno = "EMFILE"
nth = 1
arms = ["window"]
[[arms]]
name = "window"
[[arms]]
name = "other"
)toml";
  Scenario base = parse_scenario(text, "t.toml");
  CHECK(base.faults.empty());
  Scenario window = scenario_for_arm(text, "t.toml", base.arms[0]);
  REQUIRE(window.faults.size() == 1);
  CHECK(window.faults[0].arms.empty());
  CHECK(scenario_for_arm(text, "t.toml", base.arms[1]).faults.empty());
  std::string pinned = pinned_scenario(text, "t.toml", base.arms[0], {}, {});
  CHECK(parse_scenario(pinned, "p.toml").faults.size() == 1);  // the counterexample keeps it
  ScenarioError typo = error_for(replaced(text, "arms = [\"window\"]", "arms = [\"windwo\"]"));
  CHECK(std::string(typo.what()).find("t.toml:8:9: no [[arms]] entry is named \"windwo\"") == 0);
}

TEST_CASE("pinned choices are read whole: junk, a sign or a pick out of range is an error at the entry") {
  for (const char* bad : {"order:3:1:junk", "order:3x:1", "slack:2:1zz", "order:-3:1", "order:3:+1", "order:3:3",
                          "order::1", "stir:3:1", "order:3"}) {
    INFO(bad);
    const ScenarioError e = error_for(std::string("choices = [\"order:2:0\", \"") + bad + "\"]\n" + accept_burst);
    CHECK_THAT(e.what(), Catch::StartsWith(std::string("t.toml:1:25: choices: \"") + bad + "\" is not a choice"));
  }
  CHECK(parse_scenario("choices = [\"order:2:0\", \"fault:4:3\"]\n" + accept_burst, "t.toml").choices.size() == 2);
}

TEST_CASE("a key nested past any scenario's need is refused before the TOML parser recurses on it") {
  std::string deep;
  for (int i = 0; i < 60000; ++i) deep += "a.";
  for (const std::string& text : {deep + "a = 1\n", "[" + deep + "a]\n", "v = {" + deep + "a = 1}\n"}) {
    const ScenarioError e = error_for(text);
    CHECK_THAT(e.what(), Catch::Contains("more than 256 dots in one line"));
  }
  // Dots in strings and comments are text, not keys.
  std::string dots(1000, '.');
  const std::string group = "[[clients]]\nname = \"c\"\n";
  CHECK(parse_scenario("description = \"" + dots + "\" # " + dots + "\n" + group, "t.toml").description.size() == 1000);
  CHECK(parse_scenario("description = '''\n" + dots + "\n'''\n" + group, "t.toml").description.size() == 1001);
  CHECK_THROWS_WITH(parse_override("loop.x={" + deep + "a=1}"), Catch::StartsWith("--set:1:"));
}

TEST_CASE("Workload keys load: a closed loop, its mix, bodies and Poisson arrivals") {
  const Scenario s = parse_scenario(R"toml([[clients]]
name = "wrk"
count = 4
requests = 100
think = "1ms"
pipeline = 2
paths = [{ path = "/fast", weight = 9 }, { path = "/slow?us=10" }]
body = 64
rate = 100
arrivals = "poisson"

[[clients]]
name = "timed"
duration = "2s"
)toml", "t.toml");
  const ClientGroup& wrk = s.clients.at(0);
  CHECK(wrk.closed_loop());
  CHECK(wrk.closed_requests == 100);
  CHECK(wrk.think == 1ms);
  CHECK(wrk.pipeline == 2);
  REQUIRE(wrk.paths.size() == 2);
  CHECK(wrk.paths[0].weight == 9);
  CHECK(wrk.paths[1].weight == 1);
  CHECK(wrk.body == 64);
  CHECK(wrk.arrivals == ClientGroup::Arrivals::poisson);
  const ClientGroup& timed = s.clients.at(1);
  CHECK(timed.closed_loop());
  CHECK(timed.duration == 2s);
  CHECK(timed.path == "/fast");
  CHECK(!s.clients.empty());
}

TEST_CASE("Workload keys that do not fit together are errors at the key that breaks it") {
  const std::string head = "[[clients]]\nname = \"a\"\n";
  CHECK_THAT(error_for(head + "think = \"1ms\"\n").what(),
             Catch::Equals("t.toml:3:9: clients.think belongs to a closed loop, and \"a\" is not one"));
  CHECK_THAT(error_for(head + "requests = [{ at = \"0s\", path = \"/fast\" }]\nduration = \"1s\"\n").what(),
             Catch::Equals("t.toml:4:12: clients.duration runs a closed loop, and \"a\" scripts its requests"));
  CHECK_THAT(error_for(head + "requests = 3\npath = \"/fast\"\npaths = [{ path = \"/fast\" }]\n").what(),
             Catch::StartsWith("t.toml:5:9: clients.paths and clients.path are both set"));
  CHECK_THAT(error_for(head + "requests = 3\npaths = [{ path = \"fast\" }]\n").what(),
             Catch::Contains("clients.paths.path must start with '/'"));
  CHECK_THAT(error_for(head + "requests = 3\npaths = [{ path = \"/fast\", weight = 0 }]\n").what(),
             Catch::Contains("clients.paths.weight must be at least 1"));
  CHECK_THAT(error_for(head + "requests = 0\n").what(), Catch::Contains("clients.requests must be at least 1"));
  CHECK_THAT(error_for(head + "requests = \"many\"\n").what(),
             Catch::Equals("t.toml:3:12: clients.requests must be a list of requests or a whole number"));
  CHECK_THAT(error_for(head + "requests = 3\npipeline = 0\n").what(), Catch::Contains("clients.pipeline must be at least 1"));
  CHECK_THAT(error_for(head + "duration = \"0s\"\n").what(), Catch::Contains("clients.duration must be longer than zero"));
  CHECK_THAT(error_for(head + "body = 2000000\n").what(), Catch::Contains("clients.body must be at most 1048576"));
  CHECK_THAT(error_for(head + "body = 8\nstall = \"body\"\n").what(), Catch::StartsWith("t.toml:3:8: clients.body and stall"));
  CHECK_THAT(error_for(head + "arrivals = \"poisson\"\n").what(),
             Catch::Equals("t.toml:3:12: clients.arrivals = \"poisson\" needs a rate"));
  CHECK_THAT(error_for(head + "arrivals = \"bursty\"\n").what(), Catch::Contains("unknown value \"bursty\""));
  CHECK_THAT(error_for(head + "reads = false\nread_rate = 100\n").what(),
             Catch::StartsWith("t.toml:4:13: clients.read_rate is how fast a client reads"));
  CHECK_THAT(error_for(head + "read_rate = -1\n").what(), Catch::Contains("clients.read_rate must be at least 0"));
  CHECK_THAT(error_for(head + "count = 100\nrequests = 100000\n").what(),
             Catch::Contains("past 5000000 requests in all"));
}

TEST_CASE("A time may be a window A..B wherever a happening has an instant, and a bad one is refused at its value") {
  Scenario s = parse_scenario(R"(
[[clients]]
name = "c"
count = 2
connect_at = "1ms..41ms"
requests = [{ at = "5ms..6ms", path = "/fast" }]
[[faults]]
kind = "reset"
of = "c"
at = "10ms..20ms"
[[posters]]
name = "p"
at = "2ms..3ms"
[[actions]]
kind = "shutdown"
at = "100ms..200ms"
)", "t.toml");
  CHECK(s.clients[0].connect_at.lo == Instant{1ms});
  CHECK(s.clients[0].connect_at.hi == Instant{41ms});
  CHECK_FALSE(s.clients[0].connect_at.fixed());
  CHECK(s.clients[0].requests[0].at.hi == Instant{6ms});
  CHECK(s.faults[0].at.lo == Instant{10ms});
  CHECK(s.posters[0].at.hi == Instant{3ms});
  CHECK(s.actions[0].at.lo == Instant{100ms});
  CHECK(parse_scenario("[[clients]]\nname = \"c\"\nconnect_at = \"7ms..7ms\"\n", "t.toml").clients[0].connect_at.fixed());

  auto at = [](const std::string& value) {
    return std::string(error_for("[[clients]]\nname = \"c\"\nconnect_at = \"" + value + "\"\n").what());
  };
  CHECK_THAT(at("41ms..1ms"), Catch::StartsWith("t.toml:3:14: ") && Catch::Contains("ends before it starts"));
  CHECK_THAT(at("..5ms"), Catch::StartsWith("t.toml:3:14: ") && Catch::Contains("no start"));
  CHECK_THAT(at("5ms.."), Catch::StartsWith("t.toml:3:14: ") && Catch::Contains("no end"));
  CHECK_THAT(at("1ms..2ms..3ms"), Catch::Contains("more than one"));
  CHECK_THAT(at("1ms..5"), Catch::Contains("has no unit"));
  CHECK_THAT(at("1ms...5ms"), Catch::StartsWith("t.toml:3:14: "));
  CHECK_THAT(error_for("[[clients]]\nname = \"c\"\nrequests = [{ at = \"9ms..1ms\", path = \"/fast\" }]\n").what(),
             Catch::StartsWith("t.toml:3:20: ") && Catch::Contains("ends before it starts"));
}

TEST_CASE("bytes hold any byte: a hex escape in a literal string is one byte, a doubled backslash one, others refused") {
  auto bytes_of = [](const std::string& written) {
    return parse_scenario("name = \"p\"\n[[clients]]\nname = \"m\"\nframing = \"mqtt\"\nrequests = [{ at = \"1ms\", bytes = " +
                              written + " }]\n",
                          "t.toml")
        .clients[0]
        .requests[0]
        .path;
  };
  CHECK(bytes_of(R"('\xC0\x00')") == std::string("\xC0\x00", 2));  // MQTT's PINGREQ
  CHECK(bytes_of(R"('a\\b\x7e')") == "a\\b~");
  CHECK(bytes_of(R"("\\xff")") == "\xff");  // a basic string's doubled backslash
  CHECK(bytes_of(R"("PING\r\n")") == "PING\r\n");  // TOML's own escapes, as before
  // And for a person, as a report shows them.
  CHECK(shown_bytes(std::string("PING\r\n\xc0\x00\\", 9)) == R"(PING\r\n\xc0\x00\\)");
  const ScenarioError bad = error_for("name = \"p\"\n[[clients]]\nname = \"m\"\nrequests = [{ at = \"1ms\", bytes = '\\xZ0' }]\n");
  CHECK_THAT(bad.what(), Catch::StartsWith("t.toml:4:35: ") && Catch::Contains("backslash at character 1"));
  // TOML's basic strings have no \x: the parser refuses it, and the hint says how to write it.
  const ScenarioError basic = error_for("name = \"p\"\n[[clients]]\nname = \"m\"\nrequests = [{ at = \"1ms\", bytes = \"\\xC0\" }]\n");
  CHECK_THAT(basic.what(), Catch::StartsWith("t.toml:4:"));
  CHECK_THAT(basic.hint, Catch::Contains("single quotes"));
}

TEST_CASE("raw requests and framings load, and keys that disagree are refused where they are written") {
  const std::string base = "name = \"p\"\n[[clients]]\nname = \"r\"\nframing = \"resp\"\n"
                           "requests = [{ at = \"1ms\", bytes = \"PING\\r\\n\" }]\n";
  const Scenario s = parse_scenario(base, "t.toml");
  CHECK(s.clients[0].raw);
  CHECK(s.clients[0].requests[0].path == "PING\r\n");
  CHECK(s.clients[0].framing == ClientGroup::Framing::resp);
  const Scenario closed = parse_scenario(
      "name = \"p\"\n[[clients]]\nname = \"m\"\nframing = \"terminator\"\nterminator = \"END\\r\\n\"\nrequests = 3\n"
      "bytes = \"get k\\r\\n\"\n",
      "t.toml");
  CHECK(closed.clients[0].raw);
  CHECK(closed.clients[0].path == "get k\r\n");
  CHECK(closed.clients[0].terminator == "END\r\n");
  struct Bad {
    std::string text, where, says;
  };
  for (const Bad& bad : std::vector<Bad>{
           {replaced(base, "bytes = \"PING\\r\\n\" }]", "bytes = \"PING\\r\\n\" }, { at = \"2ms\", path = \"/\" }]"),
            "t.toml:5:12:", "mix paths and bytes"},
           {replaced(base, "bytes = \"PING\\r\\n\"", "bytes = \"PING\\r\\n\", path = \"/\""), "t.toml:5:13:",
            "path (an HTTP GET) or bytes"},
           {replaced(base, "bytes = \"PING\\r\\n\"", "bytes = \"\""), "t.toml:5:35:", "is empty"},
           {base + "terminator = \"END\"\n", "t.toml:6:14:", "terminator goes with framing = \"terminator\""},
           {replaced(base, "\"resp\"", "\"length\""), "t.toml:4:11:", "answer_bytes goes with framing = \"length\""},
           {base + "body = 10\n", "t.toml:6:8:", "shapes HTTP requests"},
           {replaced(base, "\"resp\"", "\"smtp\""), "t.toml:4:11:", "framing"},
       }) {
    INFO(bad.text);
    const std::string message = error_for(bad.text).what();
    CHECK(message.rfind(bad.where, 0) == 0);
    CHECK(message.find(bad.says) != std::string::npos);
  }
}

TEST_CASE("a signal action loads with its signal, the built-in loop takes only SIGTERM and SIGINT") {
  const std::string base = "name = \"p\"\n[[actions]]\nkind = \"signal\"\nsignal = \"SIGINT\"\nat = \"1s\"\n";
  const Scenario s = parse_scenario(base, "t.toml");
  REQUIRE(s.actions.size() == 1);
  CHECK(s.actions[0].kind == ActionSpec::Kind::signal);
  CHECK(s.actions[0].signal == 2);
  struct Bad {
    std::string text, where, says;
  };
  for (const Bad& bad : std::vector<Bad>{
           {replaced(base, "SIGINT", "SIGHUP"), "t.toml:4:10:", "the built-in loop takes SIGTERM and SIGINT"},
           {replaced(base, "SIGINT", "SIGKILL"), "t.toml:4:10:", "signal"},
           {replaced(base, "signal = \"SIGINT\"\n", ""), "t.toml:2:1:", "actions.signal goes with kind = \"signal\""},
           {replaced(base, "kind = \"signal\"", "kind = \"shutdown\""), "t.toml:4:10:", "goes with kind = \"signal\""},
       }) {
    INFO(bad.text);
    const std::string message = error_for(bad.text).what();
    CHECK(message.rfind(bad.where, 0) == 0);
    CHECK(message.find(bad.says) != std::string::npos);
  }
}
