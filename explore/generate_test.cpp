// The scenario generator: deterministic by seed, every scenario it draws loads and runs, a
// sabotaged rule is found and shrunk, and a run without progress is a livelock, not a hang.
#include "explore/generate.hpp"
#include "explore/shaped.hpp"

#include <catch2/catch.hpp>

using namespace loopsim;
using namespace loopsim::explore;

namespace {

std::vector<std::string> drawn_texts(std::uint64_t seed, int n) {
  rc::Random random(seed);
  auto gen = description_gen();
  std::vector<std::string> texts;
  for (int i = 0; i < n; ++i) {
    texts.push_back(scenario_text(gen(random.split(), rc::kNominalSize).value(), generated_name(seed, i)));
  }
  return texts;
}

// A loop that keeps its door owed after EMFILE, with no retry, and a descriptor limit the
// holders fill for good: every pass is a non-blocking wait that accepts nothing.
const char* spinning = R"(
name = "spin"
horizon = "300ms"
[kernel]
rlimit_nofile = 8
[loop]
owe_after_emfile = true
emfile_retry = false
[[clients]]
name = "holders"
count = 2
keep_alive = true
requests = []
[[clients]]
name = "late"
connect_at = "10ms"
requests = [{ at = "10ms", path = "/fast" }]
[[expect]]
property = "no_spin"
max = 100
)";

}  // namespace

TEST_CASE("generate draws the same scenarios from the same seed, and others from another", "[generate]") {
  auto first = drawn_texts(7, 20);
  CHECK(first == drawn_texts(7, 20));
  CHECK(first != drawn_texts(8, 20));
  GenerateOptions options;
  options.runs = 50;
  options.seed = 3;
  options.overrides = {sim::Override{"loop.owe_unfinished_batch", "false"}};
  GenerateResult a = generate(options), b = generate(options);
  REQUIRE(a.verdict == GenerateResult::Verdict::found);
  CHECK(a.failing_run == b.failing_run);
  CHECK(a.shrunk == b.shrunk);
  CHECK(a.shrink_tries == b.shrink_tries);
}

TEST_CASE("every generated scenario loads, carries its expectations, and holds on the loop as fixed", "[generate][long]") {
  int judged = 0;
  for (const std::string& text : drawn_texts(11, 60)) {
    sim::Scenario scenario = sim::parse_scenario(text, "drawn");
    CHECK_FALSE(scenario.clients.empty());
    CHECK_FALSE(scenario.expect.empty());  // no_spin at least, always
    Judged j = judge_text(text, "drawn", StepBudget{});
    INFO(text << "\n" << j.detail);
    CHECK_FALSE(j.failed());
    ++judged;
  }
  CHECK(judged == 60);
}

TEST_CASE("the expectations leave out what a configuration allows to fail, and say why", "[generate]") {
  sim::Scenario with_shutdown = sim::parse_scenario(R"(
[[clients]]
name = "a"
requests = [{ at = "0ms", path = "/fast" }]
[[actions]]
kind = "shutdown"
at = "5ms"
)", "t");
  std::string text = expectations_text(with_shutdown);
  CHECK(text.find("answered is not judged: a shutdown") != std::string::npos);
  CHECK(text.find("property = \"shutdown_clean\"") != std::string::npos);
  sim::Scenario held_full = sim::parse_scenario(R"(
[loop]
max_connections = 2
[[clients]]
name = "stay"
count = 2
keep_alive = true
requests = []
[[clients]]
name = "b"
requests = [{ at = "0ms", path = "/fast" }]
)", "t");
  text = expectations_text(held_full);
  CHECK(text.find("no_stranded_backlog is not judged: connections that stay (2)") != std::string::npos);
  CHECK(text.find("property = \"no_spin\"") != std::string::npos);
}

TEST_CASE("a target is drawn what goes wrong apart: resets, a budget of failing accepts, a SIGTERM, each judged as any server must hold", "[generate]") {
  const std::vector<sim::Override> target = {{"target.exec", "[\"/bin/true\"]"}, {"target.port", "8080"}};
  Description d;
  d.groups = {GenGroup{}};
  d.groups[0].requests = {GenRequest{0, GenRequest::Route::fast, 0}};
  auto drawn = [&](GenTrouble::Kind kind) {
    d.trouble = GenTrouble{kind, 20, 50, EMFILE, 0, 2};
    return scenario_text(d, "t", target);
  };
  const std::string plain = drawn(GenTrouble::Kind::none);
  INFO(plain);
  CHECK(plain.find("[[faults]]") == std::string::npos);
  CHECK(plain.find("property = \"answered\"") != std::string::npos);
  // The workload starts at 10 ms: a program may wait before it listens.
  CHECK(plain.find("connect_at = \"10ms\"") != std::string::npos);
  const std::string reset = drawn(GenTrouble::Kind::reset);
  CHECK(reset.find("kind = \"reset\"\nat = \"30ms\"") != std::string::npos);
  CHECK(reset.find("answered is not judged: clients reset their connections") != std::string::npos);
  CHECK(reset.find("property = \"no_stranded_backlog\"") != std::string::npos);
  const std::string accepts = drawn(GenTrouble::Kind::accept_window);
  CHECK(accepts.find("kind = \"accept_error\"\nat = \"30ms\"\nuntil = \"80ms\"\nerrno = \"EMFILE\"\ncount = 2") != std::string::npos);
  CHECK(accepts.find("answered is not judged: a server may shed") != std::string::npos);
  CHECK(accepts.find("property = \"no_stranded_backlog\"") != std::string::npos);
  const std::string sigterm = drawn(GenTrouble::Kind::sigterm);
  CHECK(sigterm.find("kind = \"signal\"\nsignal = \"SIGTERM\"\nat = \"30ms\"") != std::string::npos);
  CHECK(sigterm.find("property = \"answered\"") == std::string::npos);
  CHECK(sigterm.find("property = \"no_stranded_backlog\"") == std::string::npos);
  CHECK(sigterm.find("property = \"shutdown_clean\"") == std::string::npos);  // a fast stop is allowed
  CHECK(sigterm.find("property = \"no_spin\"") != std::string::npos);
  // The built-in loop is never drawn a target's trouble.
  CHECK(scenario_text(d, "t", {}).find("SIGTERM") == std::string::npos);
}

TEST_CASE("a sabotaged rule is found and shrunk to a scenario that fails the same way", "[generate]") {
  GenerateOptions options;
  options.runs = 200;
  options.seed = 1;
  options.overrides = {sim::Override{"loop.owe_unfinished_batch", "false"}};
  GenerateResult result = generate(options);
  REQUIRE(result.verdict == GenerateResult::Verdict::found);
  CHECK(result.clients_after <= result.clients_before);
  CHECK(result.shrink_steps > 0);
  CHECK(result.shrunk.find("owe_unfinished_batch = false") != std::string::npos);
  Judged again = judge_text(result.shrunk, "shrunk", StepBudget{});
  CHECK(again.failed());
  CHECK(again.violated == result.judged.violated);
}

TEST_CASE("generate reaches R13 sabotaged: a large answer to a slow reader, a request behind it never resumed", "[generate]") {
  // resume_after_flush = false: once a large answer's tail is flushed, the loop does not go back
  // to the request pipelined behind it. Drawn large answers (/bytes?n=N) to slow readers reach
  // it: seed 2 at run 23, shrunk to one client.
  GenerateOptions options;
  options.runs = 30;
  options.seed = 2;
  options.overrides = {sim::Override{"loop.resume_after_flush", "false"}};
  GenerateResult result = generate(options);
  REQUIRE(result.verdict == GenerateResult::Verdict::found);
  CHECK(result.failing_run == 23);
  CHECK(result.clients_after == 1);
  CHECK(result.shrunk.find("/bytes?n=") != std::string::npos);
  CHECK(result.shrunk.find("read_rate = ") != std::string::npos);
  CHECK(result.judged.violated == std::vector<std::string>{"answered"});
  // With the rule on, the same draws hold.
  options.overrides.clear();
  CHECK(generate(options).verdict == GenerateResult::Verdict::none_found);
}

TEST_CASE("a run over its total step budget is only long: a bound, judged on what it did so far", "[generate]") {
  // The spin is already certain when the budget runs out: the limit does not hide it.
  Judged cut = judge_text(spinning, "spin", StepBudget{1'000'000, 20'000});
  CHECK(cut.verdict == Judged::Verdict::violated);
  CHECK(cut.violated == std::vector<std::string>{"no_spin"});
  CHECK(cut.detail.find("the run took 20000 steps (its budget)") != std::string::npos);
  CHECK(cut.virtual_time < std::chrono::milliseconds(300));
  // A run that is only long, with nothing against it: a bound, not a failure.
  Judged quiet = judge_text(R"(
name = "long"
horizon = "1s"
[[clients]]
name = "c"
count = 50
rate = 100
requests = [{ at = "0ms", path = "/fast" }]
[[expect]]
property = "answered"
)", "long", StepBudget{1'000'000, 100});
  CHECK(quiet.verdict == Judged::Verdict::bound);
  CHECK_FALSE(quiet.failed());
  CHECK(quiet.detail.find("the run took 100 steps (its budget)") != std::string::npos);
  // With room for the whole run, the same spin reaches its horizon and no_spin judges it.
  Judged judged = judge_text(spinning, "spin", StepBudget{1'000'000, 50'000'000});
  CHECK(judged.verdict == Judged::Verdict::violated);
  CHECK(judged.violated == std::vector<std::string>{"no_spin"});
}

TEST_CASE("steps at one virtual instant have their own budget", "[generate]") {
  Judged cut = judge_text(spinning, "spin", StepBudget{2, 50'000'000});
  CHECK(cut.verdict == Judged::Verdict::livelock);
  CHECK(cut.detail.find("livelock: virtual time stood still for 2 steps") != std::string::npos);
}

TEST_CASE("generate --shape varies a file's counts and times, keeps its workload, and finds what the file's loop breaks", "[generate]") {
  using namespace std::chrono_literals;
  const std::string shape = R"(name = "shape"
horizon = "2s"
[[clients]]
name = "raw"
count = 3
connect_at = "20ms"
keep_alive = true
framing = "http"
requests = [{ at = "20ms", bytes = "GET /fast HTTP/1.1\r\nHost: x\r\n\r\n" }, { at = "30ms", bytes = "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n" }]
[[faults]]
kind = "accept_error"
errno = "EMFILE"
at = "25ms"
until = "26ms"
[[expect]]
property = "answered"
[[arms]]
name = "never-drawn"
set = { "loop.accept_batch" = 0 }
expect_violated = []
)";
  for (std::uint64_t run = 0; run < 20; ++run) {
    INFO(run);
    const std::string text = explore::shaped_text(shape, "shape.toml", 7, run);
    CHECK(text == explore::shaped_text(shape, "shape.toml", 7, run));  // the same seed, the same file
    const sim::Scenario s = sim::parse_scenario(text, "shape.toml");
    REQUIRE(s.clients.size() == 1);
    const sim::ClientGroup& g = s.clients[0];
    CHECK(g.count >= 1);
    CHECK(g.count <= 6);
    CHECK(g.keep_alive);
    CHECK(g.raw);
    REQUIRE(g.requests.size() == 2);
    CHECK(g.requests[0].path == "GET /fast HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(g.connect_at.lo >= Instant{20ms});                                   // never earlier than written
    CHECK(g.connect_at.lo < Instant{320ms});
    CHECK(g.requests[1].at.lo - g.requests[0].at.lo == 10ms);         // the workload keeps its shape
    CHECK(s.arms.empty());                                            // a run is the base
    CHECK(s.faults.size() <= 1);
    for (const sim::FaultSpec& f : s.faults) CHECK(f.until - f.at.lo == 1ms);
  }
  CHECK(explore::shaped_text(shape, "shape.toml", 7, 0) != explore::shaped_text(shape, "shape.toml", 8, 0));

  explore::GenerateOptions options;
  options.runs = 30;
  explore::GenerateResult none = explore::generate_shaped(shape, "shape.toml", options);
  CHECK(none.verdict == explore::GenerateResult::Verdict::none_found);
  CHECK(none.runs == 30);

  // The file's loop holds one connection and refuses the rest: with two clients or more, one
  // is reset. generate finds it within the shape, and shrinks it to two.
  std::string broken = shape;
  broken.replace(broken.find("[[faults]]"), 0, "[loop]\nmax_connections = 1\non_full = \"refuse\"\n");
  explore::GenerateResult found = explore::generate_shaped(broken, "shape.toml", options);
  REQUIRE(found.verdict == explore::GenerateResult::Verdict::found);
  CHECK(found.judged.violated == std::vector<std::string>{"answered"});
  CHECK(found.clients_after == 2);
  CHECK(found.clients_after < found.clients_before);
  CHECK(explore::judge_text(found.shrunk, "shape.toml", {}).violated == std::vector<std::string>{"answered"});
}

TEST_CASE("a shape's variation moves every window with its workload: a request's after its connection, a fault's as a whole", "[generate]") {
  const std::string shape = R"(name = "x"
horizon = "5s"
[[clients]]
name = "a"
connect_at = "10ms"
requests = [{ at = "10ms..20ms", path = "/" }, { at = "30ms", path = "/" }]
[[clients]]
name = "w"
connect_at = "40ms..50ms"
requests = [{ at = "60ms..70ms", path = "/" }]
[[faults]]
kind = "accept_error"
errno = "EMFILE"
at = "100ms..110ms"
until = "150ms"
)";
  bool fault_seen = false, fault_moved = false;
  for (std::uint64_t run = 0; run < 20; ++run) {
    INFO(run);
    const sim::Scenario v = sim::parse_scenario(explore::shaped_text(shape, "shape.toml", 1, run), "varied.toml");
    const Duration moved = v.clients[0].connect_at.lo - Instant{Duration(10'000'000)};
    CHECK(moved >= Duration(0));
    CHECK(v.clients[0].requests[0].at.lo == Instant{Duration(10'000'000) + moved});  // with its connection
    CHECK(v.clients[0].requests[0].at.hi == Instant{Duration(20'000'000) + moved});
    CHECK(v.clients[0].requests[1].at.lo == Instant{Duration(30'000'000) + moved});
    // A windowed connection stays as written, and its windowed request with it.
    CHECK(v.clients[1].connect_at == model::Window{Instant{Duration(40'000'000)}, Instant{Duration(50'000'000)}});
    CHECK(v.clients[1].requests[0].at == model::Window{Instant{Duration(60'000'000)}, Instant{Duration(70'000'000)}});
    for (const sim::FaultSpec& f : v.faults) {  // a fault may be left out of a run
      fault_seen = true;
      CHECK(f.at.hi - f.at.lo == Duration(10'000'000));
      CHECK(f.until - f.at.hi == Duration(40'000'000));
      CHECK(f.at.lo >= Instant{Duration(100'000'000)});
      fault_moved = fault_moved || f.at.lo > Instant(Duration(100'000'000));
    }
  }
  CHECK(fault_seen);
  CHECK(fault_moved);  // with the workload, later
}

TEST_CASE("a shape's variation keeps times exact and within a file's limit: every run's file loads", "[generate]") {
  // fuzz/findings/shape-1: a window narrower than a microsecond lost its width; shape-2: a time
  // near the limit was moved past it. Each run's file did not load.
  const std::string narrow = R"(name = "x"
horizon = "1s"
[[clients]]
name = "a"
connect_at = "10ms"
requests = [{ at = "20ms", path = "/" }]
[[faults]]
kind = "accept_error"
errno = "EMFILE"
at = "1500ns"
until = "1900ns"
)";
  const std::string late = R"(name = "x"
horizon = "1000000s"
[[clients]]
name = "a"
connect_at = "999999s"
requests = [{ at = "999999.9s", path = "/" }]
)";
  // fuzz/findings/shape-3: the drawn count took the requests past 5,000,000. And a rate's last
  // connection must start within a file's times, whether the first's is fixed or a window.
  const std::string many = "name = \"x\"\nhorizon = \"100s\"\n[[clients]]\nname = \"wrk\"\ncount = 41\nrequests = 100002\n";
  const std::string rated = "name = \"x\"\nhorizon = \"1000000s\"\n[[clients]]\nname = \"a\"\nconnect_at = \"999999.99s\"\n"
                            "rate = 1000\ncount = 5\n[[clients]]\nname = \"b\"\nconnect_at = \"999999s..999999.99s\"\nrate = 1000\ncount = 10\n";
  // fuzz/findings/shape-4: an action near the horizon (a SIGTERM 22 ms before it) was moved
  // past it, and an action at or after the horizon does not load. Fixed
  // times and windows alike stay before it.
  const std::string stopped = "name = \"x\"\nhorizon = \"1s\"\n[[clients]]\nname = \"a\"\nconnect_at = \"100ms\"\n"
                              "[[actions]]\nkind = \"signal\"\nsignal = \"SIGTERM\"\nat = \"978ms\"\n"
                              "[[actions]]\nkind = \"shutdown\"\nat = \"990ms..999ms\"\n";
  bool kept_late = false;
  for (std::uint64_t run = 0; run < 20; ++run) {
    INFO(run);
    const sim::Scenario s = sim::parse_scenario(explore::shaped_text(stopped, "shape.toml", 1, run), "varied.toml");
    for (const sim::ActionSpec& a : s.actions) {
      CHECK(a.at.lo < s.horizon);
      kept_late = kept_late || a.at.lo >= Instant{Duration{990'000'000}};
    }
    const sim::Scenario m = sim::parse_scenario(explore::shaped_text(many, "shape.toml", 1, run), "varied.toml");
    CHECK(std::int64_t(m.clients[0].count) * m.clients[0].closed_requests <= sim::total_requests_max);
    const sim::Scenario r = sim::parse_scenario(explore::shaped_text(rated, "shape.toml", 1, run), "varied.toml");
    CHECK(r.clients[0].connect_at.lo >= Instant{Duration{999'999'990'000'000}});  // never earlier than written
    const sim::Scenario n = sim::parse_scenario(explore::shaped_text(narrow, "shape.toml", 1, run), "varied.toml");
    for (const sim::FaultSpec& f : n.faults) CHECK(f.until - f.at.lo == Duration{400});
    const sim::Scenario l = sim::parse_scenario(explore::shaped_text(late, "shape.toml", 1, run), "varied.toml");
    REQUIRE(l.clients.size() == 1);
    CHECK(l.clients[0].connect_at.lo <= Instant{sim::duration_max});
    CHECK(l.clients[0].requests[0].at.lo >= Instant{Duration{999'999'900'000'000}});
    CHECK(l.clients[0].requests[0].at.lo <= Instant{sim::duration_max});
  }
  CHECK(kept_late);  // the clamp applied: some run's action stood just before the horizon
}

TEST_CASE("generate's time limit stops a run under way, not only between runs: reported as a limit", "[generate]") {
  // A shape's one run (20,000 signal actions, 3,000 groups) could take minutes: a limit read
  // only between runs let it finish first. Here a clock that moves 1 ms at each reading passes
  // a 4 ms limit inside the first run (the readings: the start, before the run, after loading,
  // after the costs, then at step 1,024 or, for a shorter run, before its end), which must be
  // cut there and counted as no run.
  std::int64_t readings = 0;
  GenerateOptions options;
  options.runs = 5;
  options.time_limit_ns = 4'000'000;
  options.wall_ns = [&readings] { return readings++ * 1'000'000; };
  GenerateResult shaped = generate_shaped(spinning, "spin.toml", options);
  CHECK(shaped.verdict == GenerateResult::Verdict::limit);
  CHECK(shaped.out_of_time);
  CHECK(shaped.runs == 0);
  readings = 0;
  GenerateResult drawn = generate(options);
  CHECK(drawn.verdict == GenerateResult::Verdict::limit);
  CHECK(drawn.out_of_time);
  CHECK(drawn.runs == 0);

  int asked = 0;
  StepBudget budget{1'000'000, 50'000'000, [&asked] { return ++asked > 2; }};
  Judged cut = judge_text(spinning, "spin", budget);
  CHECK(cut.verdict == Judged::Verdict::out_of_time);
  CHECK_FALSE(cut.failed());
  CHECK(asked == 3);
}
