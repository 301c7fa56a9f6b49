// `loopsim explore` as a user meets it: exit statuses, the counterexample file, its replay.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>

#include "cli/loopsim_process_for_tests.hpp"

namespace {

using loopsim::testing::Outcome;

Outcome run_cli(const std::string& args) { return loopsim::testing::run_loopsim(args, true); }

const std::string small = std::string(LOOPSIM_SOURCE_DIR) + "/bench/spin/accept-small.toml";

}  // namespace

TEST_CASE("explore exits 1 with nothing owed and writes a counterexample that run replays to 1") {
  std::string out = loopsim::testing::temp_path("explore");
  Outcome found = run_cli("explore " + small + " --set loop.owe_unfinished_batch=false --json --out " + out);
  REQUIRE(found.status == 1);
  auto doc = nlohmann::json::parse(found.output);
  CHECK(doc["verdict"] == "violated");
  std::string cex = doc["counterexample"];
  CHECK(std::filesystem::exists(cex));
  CHECK(std::filesystem::exists(out + "/accept-small-base-counterexample.dot"));
  Outcome replay = run_cli("run " + cex);
  CHECK(replay.status == 1);
  CHECK(replay.output.find("no_stranded_backlog") != std::string::npos);
}

TEST_CASE("shrinking has a budget of its own, and when it runs out the smallest failing case found is written") {
  std::string out = loopsim::testing::temp_path("explore-shrink-budget");
  Outcome found = run_cli("explore " + small + " --set loop.owe_unfinished_batch=false --shrink-time-limit 1us --json --out " + out);
  REQUIRE(found.status == 1);
  auto doc = nlohmann::json::parse(found.output);
  CHECK(doc["shrink_cut"] == "--shrink-time-limit ran out while shrinking: the counterexample is the smallest found so far");
  Outcome replay = run_cli("run " + std::string(doc["counterexample"]));
  CHECK(replay.status == 1);
  // A bad budget is refused before any search.
  Outcome bad = loopsim::testing::run_loopsim("explore " + small + " --shrink-time-limit soon --out " + out);
  CHECK(bad.status == 2);
  CHECK(bad.output.find("--shrink-time-limit") != std::string::npos);
}

TEST_CASE("a default explore finds a shipped defect that needs one non-natural choice early, before depth first does") {
  // scenarios/shutdown-full.toml, arm admission-stops-at-capacity: the shutdown's admission
  // must go on past capacity; the strand needs one choice other than the natural one.
  const std::string file = std::string(LOOPSIM_SOURCE_DIR) + "/scenarios/shutdown-full.toml";
  auto explored = [&](const std::string& strategy) {
    Outcome o = run_cli("explore " + file + " --arm admission-stops-at-capacity --strategy " + strategy +
                        " --json --out " + loopsim::testing::temp_path("explore-shallow-" + strategy));
    INFO(o.output);
    REQUIRE(o.status == 1);
    return nlohmann::json::parse(o.output);
  };
  auto by_deviations = explored("deviations");
  CHECK(by_deviations["choices_not_natural"] == 1);
  CHECK(by_deviations["executions"].get<int>() <= 1000);
  auto depth_first = explored("dfs");
  CHECK(by_deviations["executions"].get<int>() < depth_first["executions"].get<int>());
}

TEST_CASE("explore exits 0 only on an exhaustive search with the rules on") {
  Outcome o = run_cli("explore " + small + " --json");
  REQUIRE(o.status == 0);
  auto doc = nlohmann::json::parse(o.output);
  CHECK(doc["verdict"] == "none_found");
  for (const char* key : {"executions", "states", "transitions", "wall_ns"}) CHECK(doc.contains(key));
}

TEST_CASE("explore --audit compares every state met again, and says how many") {
  // No time limit: a sanitizer build is tens of times slower, and the audit must finish.
  Outcome o = run_cli("explore " + small + " --audit --time-limit 0s --json");
  REQUIRE(o.status == 0);
  auto doc = nlohmann::json::parse(o.output);
  CHECK(doc["verdict"] == "none_found");
  CHECK(doc["audit_compared"].get<std::uint64_t>() > 1000);
  CHECK_FALSE(doc.contains("audit_unwritten"));
  Outcome help = run_cli("explore --help");
  CHECK(help.output.find("4  --audit") != std::string::npos);
}

TEST_CASE("explore exits 3 when a limit cuts the search short, and a random search is a sample") {
  Outcome cut = run_cli("explore " + small + " --max-executions 2 --json");
  CHECK(cut.status == 3);
  auto doc = nlohmann::json::parse(cut.output);
  CHECK(doc["verdict"] == "bound_reached");
  CHECK(doc["bound"] == "max executions");
  Outcome sampled = run_cli("explore " + small + " --strategy random --seeds 1..5 --json");
  CHECK(sampled.status == 3);
  CHECK(nlohmann::json::parse(sampled.output)["bound"] == "seeds");
}

TEST_CASE("an explore --faults counterexample carries its fault budget and replays to 1") {
  std::string out = loopsim::testing::temp_path("explore-faults");
  Outcome found = run_cli("explore " + small + " --faults 1 --set loop.emfile_retry=false --json --out " + out);
  REQUIRE(found.status == 1);
  std::string cex = nlohmann::json::parse(found.output)["counterexample"];
  Outcome replay = run_cli("run " + cex);
  CHECK(replay.status == 1);
  CHECK(replay.output.find("no_stranded_backlog") != std::string::npos);
}

TEST_CASE("a liveness counterexample replays to 1, and its DOT draws the path") {
  // The scenario checks no backlog itself: only the explorer's liveness search sees the strand.
  std::string scenario = loopsim::testing::temp_path("live.toml");
  std::ofstream(scenario) << R"(
name = "live"
horizon = "10s"
[loop]
accept_batch = 2
[[clients]]
name = "burst"
count = 3
connect_at = "50ms..80ms"
requests = [{ at = "50ms", path = "/slow?ms=10" }]
[[expect]]
property = "liveness"
)";
  std::string out = loopsim::testing::temp_path("explore-live");
  Outcome found = run_cli("explore " + scenario + " --set loop.owe_unfinished_batch=false --json --out " + out);
  REQUIRE(found.status == 1);
  auto doc = nlohmann::json::parse(found.output);
  CHECK(doc["violated"] == nlohmann::json::array({"liveness"}));
  Outcome replay = run_cli("run " + std::string(doc["counterexample"]));
  CHECK(replay.status == 1);
  CHECK(replay.output.find("liveness") != std::string::npos);
  std::ifstream dot(out + "/live-base-counterexample.dot");
  std::string text{std::istreambuf_iterator<char>(dot), std::istreambuf_iterator<char>()};
  // A decision graph in words: where the run began, why it fails, and the cycle drawn back.
  CHECK(text.find("the run begins at 0 ms") != std::string::npos);
  CHECK(text.find("liveness: ") != std::string::npos);
  CHECK(text.find("d0 -> d1") != std::string::npos);
  CHECK((text.find("back to the state at") != std::string::npos || text.find("nothing left to happen") != std::string::npos));
  CHECK(text.find("color=red, style=bold") != std::string::npos);  // the cycle that never accepts
}

TEST_CASE("a counterexample whose pinned choices no longer fit is bad input naming the choice") {
  std::string out = loopsim::testing::temp_path("explore-diverge");
  Outcome found = run_cli("explore " + small + " --set loop.owe_unfinished_batch=false --json --out " + out);
  REQUIRE(found.status == 1);
  std::string cex = nlohmann::json::parse(found.output)["counterexample"];
  std::ifstream in(cex);
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  // One more choice than the run makes: the run ends before the record does.
  auto at = text.find("choices = [");
  REQUIRE(at != std::string::npos);
  text.insert(at + std::string("choices = [").size(), " 'order:7:3',");
  std::ofstream(cex) << text;
  Outcome replay = loopsim::testing::run_loopsim("run " + cex);  // with its stderr
  CHECK(replay.status == 2);
  CHECK(replay.output.find("choice 1 of") != std::string::npos);
}

TEST_CASE("explore rejects bad bounds with exit 2") {
  CHECK(run_cli("explore " + small + " --shard 3/2").status == 2);
  CHECK(run_cli("explore " + small + " --seeds 1-5").status == 2);
  CHECK(run_cli("explore " + small + " --strategy bfs").status == 2);
}

TEST_CASE("explore --maximize reports the worst figure over the schedules, and its replay measures it") {
  // /fast is served first in the natural order; the other order puts it behind the blocker.
  std::string scenario = loopsim::testing::temp_path("worst.toml");
  std::ofstream(scenario) << R"(
name = "worst"
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
max = "1s"
)";
  std::string out = loopsim::testing::temp_path("explore-worst");
  Outcome o = run_cli("explore " + scenario + " --maximize latency:fast --json --out " + out);
  REQUIRE(o.status == 0);  // exhaustive, and a worst case is not a violation
  auto doc = nlohmann::json::parse(o.output);
  std::int64_t worst = doc["worst"];
  CHECK(worst >= 600'000'000);  // behind the 600 ms blocker
  CHECK(doc["worst_choices_not_natural"] > 0);
  Outcome replay = run_cli("run " + std::string(doc["worst_replay"]) + " --json");
  REQUIRE(replay.status == 0);
  auto report = nlohmann::json::parse(replay.output);
  bool measured = false;
  for (const auto& v : report["arms"][0]["properties"]) {
    if (v["property"] == "latency") measured = v["measured"] == worst;
  }
  CHECK(measured);
  CHECK(run_cli("explore " + scenario + " --maximize no_spin").status == 2);  // not expected
}

TEST_CASE("explore --out that cannot be a folder is bad input, before any search") {
  std::string file = loopsim::testing::temp_path("a-file");
  std::ofstream(file) << "x";
  CHECK(loopsim::testing::run_loopsim("explore " + small + " --out " + file).status == 2);
  CHECK(loopsim::testing::run_loopsim("explore " + small + " --out ''").status == 2);
}

TEST_CASE("explore --judge keeps only the named expectations: a state-decided subset merges, a name not expected is bad input") {
  const std::string burst = std::string(LOOPSIM_SOURCE_DIR) + "/scenarios/accept-burst.toml";
  // latency bounded in batches measures history (a request's cost, from the run's own); max_gap
  // and the rest have monitors.
  Outcome all = run_cli("explore " + burst + " --json");
  REQUIRE(all.status == 0);
  CHECK(nlohmann::json::parse(all.output)["merged"] == false);
  Outcome some = run_cli("explore " + burst + " --judge answered,no_stranded_backlog,max_gap --json");
  REQUIRE(some.status == 0);
  auto doc = nlohmann::json::parse(some.output);
  CHECK(doc["merged"] == true);
  CHECK(doc["search"]["judge"] == "answered,no_stranded_backlog,max_gap");
  Outcome found = run_cli("explore " + burst + " --arm nothing-owed --judge answered --json --out " +
                          loopsim::testing::temp_path("judge"));
  CHECK(found.status == 1);
  // The file names its arm, so that a search of another arm into the same --out keeps it.
  const std::string cex = nlohmann::json::parse(found.output)["counterexample"];
  CHECK(std::filesystem::path(cex).filename() == "accept-burst-nothing-owed-counterexample.toml");
  Outcome bad = loopsim::testing::run_loopsim("explore " + burst + " --judge answered,latenc");
  CHECK(bad.status == 2);
  CHECK(bad.output.find("--judge:1:10: the scenario expects no \"latenc\"") != std::string::npos);
  CHECK(bad.output.find("it expects: answered, no_stranded_backlog, latency, max_gap") != std::string::npos);
}

TEST_CASE("explore finds the nothing-owed strand where the file's own timing never strands, and proves the owed loop") {
  const std::string free = std::string(LOOPSIM_SOURCE_DIR) + "/bench/spin/accept-free.toml";
  // The file's own timing: arrivals one at a time, nothing strands, with the rule or without.
  CHECK(run_cli("run " + free + " --set loop.owe_unfinished_batch=false").status == 0);
  std::string out = loopsim::testing::temp_path("explore-free");
  Outcome found = run_cli("explore " + free + " --set loop.owe_unfinished_batch=false --time-limit 0s --json --out " + out);
  REQUIRE(found.status == 1);
  auto doc = nlohmann::json::parse(found.output);
  CHECK(doc["choices_not_natural"].get<int>() > 0);  // only a search reaches it
  Outcome replay = run_cli("run " + doc["counterexample"].get<std::string>());
  CHECK(replay.status == 1);
  Outcome proved = run_cli("explore " + free + " --time-limit 0s --json");
  CHECK(proved.status == 0);
  auto verified = nlohmann::json::parse(proved.output);
  CHECK(verified["verdict"] == "none_found");
  CHECK(verified["merged"] == true);
  CHECK_FALSE(verified.contains("bounds"));
}

TEST_CASE("explore reaches the request stranded behind a large answer through the send buffer's take choice") {
  // Found by the search, not written into the scenario: the scenario sets only Linux's
  // autotuning ceiling, and whether a write finds the buffer grown is a choice (K11).
  const std::string file = std::string(LOOPSIM_SOURCE_DIR) + "/scenarios/pipelined-large-answer.toml";
  std::string out = loopsim::testing::temp_path("explore-take");
  Outcome found = run_cli("explore " + file + " --set loop.resume_after_flush=false --json --out " + out);
  REQUIRE(found.status == 1);
  auto doc = nlohmann::json::parse(found.output);
  CHECK(doc["violated"].dump().find("answered") != std::string::npos);
  std::ifstream in(doc["counterexample"].get<std::string>());
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("take") != std::string::npos);  // the grown buffer is the one choice it needed
  CHECK(run_cli("run " + doc["counterexample"].get<std::string>()).status == 1);
  Outcome fixed = run_cli("explore " + file + " --json");
  CHECK(fixed.status == 0);
}

#ifdef LOOPSIM_SEAM_BUILT
TEST_CASE("explore proves a target with windowed arrivals, and finds its planted defect with a counterexample that replays") {
  // examples/libevent/ev-windows.toml: three connects free in 10..20 ms. The fixed program
  // accepts everything whatever lands where: exit 0, every execution searched. Without --fixed
  // (one accept per edge-triggered event) two connects between two waits strand one.
  const std::string file = std::string(LOOPSIM_SOURCE_DIR) + "/examples/libevent/ev-windows.toml";
  Outcome proved = run_cli("explore " + file + " --json --time-limit 600s");
  INFO(proved.output);
  REQUIRE(proved.status == 0);
  auto doc = nlohmann::json::parse(proved.output);
  CHECK(doc["verdict"] == "none_found");
  CHECK(doc["executions"].get<int>() > 100);  // the windows were searched, not one run
  std::string out = loopsim::testing::temp_path("explore-ev-windows");
  Outcome found = run_cli("explore " + file + " --set 'target.exec=[\"ev_http\",\"--port\",\"8080\"]' --json --out " + out);
  INFO(found.output);
  REQUIRE(found.status == 1);
  const auto found_doc = nlohmann::json::parse(found.output);
  const std::string cex = found_doc["counterexample"];
  Outcome replay = loopsim::testing::run_loopsim("run " + cex);
  INFO(replay.output);
  CHECK(replay.status == 1);
  CHECK(replay.output.find("no_stranded_backlog") != std::string::npos);
  // Its story, in the file, in --json and under run: the connection never accepted, and its
  // request's 52 bytes never read.
  const std::string stranded = "its handshake completed, and the server never accepted it; 0 of 1 answered "
                               "(never answered: \"/\"); 52 bytes it sent were never read.";
  std::ifstream written(cex);
  const std::string text((std::istreambuf_iterator<char>(written)), std::istreambuf_iterator<char>());
  CHECK(text.find("# what happened:\n#   What the clients did:\n") != std::string::npos);
  CHECK(text.find(stranded) != std::string::npos);
  CHECK(found_doc["story"].dump().find("52 bytes it sent were never read") != std::string::npos);
  CHECK(replay.output.find(stranded) != std::string::npos);
}

TEST_CASE("explore's counterexample for a target keeps its relative arguments working where it is written") {
  // exec names its script relatively ("poll_http.py"): the target runs in the scenario's folder,
  // and the counterexample, written elsewhere, says so with target.dir.
  const std::string file = std::string(LOOPSIM_SOURCE_DIR) + "/examples/python/py-poll.toml";
  std::string out = loopsim::testing::temp_path("explore-target-dir");
  Outcome found = run_cli("explore " + file + " --arm keep-alive --json --out " + out);
  REQUIRE(found.status == 1);
  auto doc = nlohmann::json::parse(found.output);
  const std::string cex = doc["counterexample"];
  std::ifstream in(cex);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("dir = ") != std::string::npos);
  CHECK(text.find("poll_http.py") != std::string::npos);
  Outcome replay = loopsim::testing::run_loopsim("run " + cex);
  INFO(replay.output);
  CHECK(replay.status == 1);  // the failure again, not "the target never listened" (exit 2)
  CHECK(replay.output.find("caught") == std::string::npos);
  CHECK(replay.output.find("answered") != std::string::npos);
}
#endif

TEST_CASE("explore --maximize refuses an empty group, and names --judge when it left the property out") {
  const std::string burst = std::string(LOOPSIM_SOURCE_DIR) + "/scenarios/accept-burst.toml";
  Outcome empty = loopsim::testing::run_loopsim("explore " + burst + " --maximize latency:");
  CHECK(empty.status == 2);
  CHECK(empty.output.find("error: --maximize:1:9: \"latency:\" names no group after the colon") != std::string::npos);
  Outcome judged = loopsim::testing::run_loopsim("explore " + burst + " --maximize latency --judge answered");
  CHECK(judged.status == 2);
  CHECK(judged.output.find("error: --maximize:1:1: --judge answered leaves out latency, which the scenario expects") !=
        std::string::npos);
  CHECK(judged.output.find("the scenario expects no") == std::string::npos);
  Outcome absent = loopsim::testing::run_loopsim("explore " + burst + " --maximize latency:nobody");
  CHECK(absent.status == 2);
  CHECK(absent.output.find("the scenario expects no latency:nobody") != std::string::npos);
}

#ifdef LOOPSIM_SEAM_BUILT
namespace {

// A scenario for the seam's probe program in `mode`, asked to listen on `port`. Its horizon leaves
// room for generate --shape, which moves the clients up to 300 ms later.
std::string probe_scenario(const std::string& name, const std::string& mode, int port, const std::string& clients) {
  const std::string file = loopsim::testing::temp_path(name + ".toml");
  std::ofstream(file) << "name = \"" << name << "\"\nhorizon = \"1s\"\n[target]\nexec = [\"" << LOOPSIM_PROBES_DIR
                      << "/seam_probe_dynamic\", \"" << mode << "\"]\nport = " << port << "\n"
                      << clients << "[[expect]]\nproperty = \"answered\"\n";
  return file;
}

const std::string one_client = "[[clients]]\nname = \"c\"\nconnect_at = \"10ms\"\nrequests = [{ at = \"10ms\", path = \"/\" }]\n";

// The "error: ..." line a command printed (its hint names the command's own stderr file).
std::string error_line(const std::string& output) {
  const std::size_t at = output.find("error: ");
  return at == std::string::npos ? std::string() : output.substr(at, output.find('\n', at) - at);
}

}  // namespace

TEST_CASE("explore and generate report a target's error as run does: exit 2 and run's message, not an abort") {
  // A fiber's exception used to reach the explorer as a bare std::runtime_error, which nothing
  // caught: every target error, from a wrong port to a refused call, aborted explore (134).
  const std::string out = loopsim::testing::temp_path("explore-target-errors");
  for (auto [mode, port, says] : {std::tuple{"elsewhere", 8081, "never listened on port 8081"},
                                  std::tuple{"unserved", 8080, "the target called fcntl(F_SETOWN)"}}) {
    INFO(mode);
    const std::string file = probe_scenario(std::string("target-") + mode, mode, port, one_client);
    Outcome run = loopsim::testing::run_loopsim("run " + file);
    REQUIRE(run.status == 2);
    CHECK(run.output.find(says) != std::string::npos);
    Outcome explore = loopsim::testing::run_loopsim("explore " + file + " --out " + out);
    INFO(explore.output);
    CHECK(explore.status == 2);
    CHECK(!error_line(run.output).empty());
    CHECK(error_line(explore.output) == error_line(run.output));
    Outcome generate = loopsim::testing::run_loopsim("generate --shape " + file + " --runs 2 --out " + out);
    INFO(generate.output);
    CHECK(generate.status == 2);
    CHECK(error_line(generate.output) == error_line(run.output));
  }
}

TEST_CASE("a target that crashes under one schedule is explore's finding, and its counterexample replays the crash to 1") {
  // Two clients at one instant: the program dies of a bad access when the second is accepted
  // first. Some seeds' orders serve both, others kill it, which `loopsim run` (no pinned
  // choices) reports as the target's error. The search used to abort on the dying branch.
  const std::string clients =
      "[[clients]]\nname = \"first\"\nconnect_at = \"10ms\"\nrequests = [{ at = \"10ms\", path = \"/first\" }]\n"
      "[[clients]]\nname = \"second\"\nconnect_at = \"10ms\"\nrequests = [{ at = \"10ms\", path = \"/second\" }]\n";
  const std::string file = probe_scenario("crash-on-order", "crash-on-order", 8080, clients);
  REQUIRE(loopsim::testing::run_loopsim("run " + file + " --seed 2").status == 0);
  Outcome seeded = loopsim::testing::run_loopsim("run " + file + " --seed 1");
  CHECK(seeded.status == 2);
  CHECK(seeded.output.find("killed by signal 11 (Segmentation fault)") != std::string::npos);
  const std::string out = loopsim::testing::temp_path("explore-crash");
  Outcome found = run_cli("explore " + file + " --json --out " + out);
  INFO(found.output);
  REQUIRE(found.status == 1);
  auto doc = nlohmann::json::parse(found.output);
  CHECK(doc["verdict"] == "violated");
  CHECK(doc["violated"] == nlohmann::json::array({"target_died"}));
  const std::string cex = doc["counterexample"];
  std::ifstream in(cex);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("# loopsim explore found this: the target died: killed by signal 11") != std::string::npos);
  CHECK(text.find("choices = [") != std::string::npos);
  Outcome replay = loopsim::testing::run_loopsim("run " + cex);
  INFO(replay.output);
  CHECK(replay.status == 1);
  CHECK(replay.output.find("target_died: under the pinned choices: ") != std::string::npos);
  CHECK(replay.output.find("killed by signal 11") != std::string::npos);
}
#endif
