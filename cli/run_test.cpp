// `loopsim run` as a user meets it: exit statuses, the table, --json, --trace, bad input.
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/loopsim_process_for_tests.hpp"

namespace {

using loopsim::testing::Outcome;

Outcome run_cli(const std::string& args) { return loopsim::testing::run_loopsim(args); }

const std::string scenario = std::string(LOOPSIM_SOURCE_DIR) + "/scenarios/accept-burst.toml";

std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = std::string("/tmp/loopsim-test-") + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("run exits 0 on accept-burst, prints the seed first and every arm caught") {
  Outcome o = run_cli("run " + scenario);
  CHECK(o.status == 0);
  CHECK(o.output.rfind("seed 1\n", 0) == 0);
  CHECK(o.output.find("nothing-owed: caught by answered no_stranded_backlog") != std::string::npos);
  CHECK(o.output.find("verdict: held") != std::string::npos);
}

TEST_CASE("run exits 1 with an unbounded drain and prints the command that reproduces it") {
  Outcome o = run_cli("run " + scenario + " --set loop.accept_batch=0");
  CHECK(o.status == 1);
  CHECK(o.output.find("reproduce: loopsim run") != std::string::npos);
  CHECK(o.output.find("--set loop.accept_batch=0 --arm base") != std::string::npos);
}

TEST_CASE("the command that reproduces an arm is quoted for the shell, and runs that arm") {
  // An arm named like a shell command: printed raw, pasting it would run `touch`.
  const std::string dir = loopsim::testing::temp_path("quoted dir");
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/q.toml";
  std::ofstream(file) << "[[clients]]\nname = \"c\"\nrequests = [{ path = \"/fast\" }]\n"
                         "[[expect]]\nproperty = \"answered\"\n"
                         "[[arms]]\nname = \"x y; touch it's\"\nset = { \"loop.accept_batch\" = 2 }\n"
                         "expect_violated = [\"answered\"]\n";
  Outcome o = run_cli("run '" + file + "'");
  CHECK(o.status == 1);
  auto at = o.output.find("reproduce: ");
  REQUIRE(at != std::string::npos);
  std::string command = o.output.substr(at + 11, o.output.find('\n', at) - at - 11);
  CHECK_THAT(command, Catch::Contains("--arm 'x y; touch it'\\''s'"));
  CHECK_THAT(command, Catch::Contains("'" + file + "'"));
  // The shell hands the arm's name back whole: the run is of that arm alone.
  Outcome again = run_cli(command.substr(std::string("loopsim ").size()));
  INFO(again.output);
  CHECK(again.output.find("x y; touch it's: NOT CAUGHT") != std::string::npos);
  CHECK(again.output.find("base:") == std::string::npos);
}

TEST_CASE("run --json prints the documented shape") {
  Outcome o = run_cli("run " + scenario + " --json --arm base");
  REQUIRE(o.status == 0);
  auto doc = nlohmann::json::parse(o.output);
  CHECK(doc["scenario"] == "accept-burst");
  CHECK(doc["seed"] == 1);
  CHECK(doc["verdict"] == "held");
  const auto& arm = doc["arms"][0];
  CHECK(arm["name"] == "base");
  CHECK(arm["stats"]["answered"] == 122);
  bool found = false;
  for (const auto& p : arm["properties"]) {
    if (p["property"] != "latency") continue;
    found = true;
    CHECK(p["of"] == "fast");
    CHECK(p["measured"] == 150000000);
    CHECK(p["bound"] == 240000000);
    CHECK(p["unit"] == "ns");
  }
  CHECK(found);
}

TEST_CASE("run --trace writes JSON Lines, one parseable event a line") {
  std::string path = "/tmp/loopsim-test-trace.jsonl";
  Outcome o = run_cli("run " + scenario + " --arm base --trace " + path);
  REQUIRE(o.status == 0);
  std::ifstream in(path);
  std::string line;
  int lines = 0, accepts = 0;
  while (std::getline(in, line)) {
    auto event = nlohmann::json::parse(line);
    if (lines++ == 0) {
      CHECK(event["loopsim_trace"] == 1);
      continue;
    }
    CHECK(event.contains("t"));
    if (event["ev"] == "accept" && event["outcome"] == "ok") ++accepts;
  }
  CHECK(accepts == 122);
}

TEST_CASE("a bad scenario exits 2 naming file, line and column") {
  std::string path = write_temp("bad.toml", "name = \"x\"\n[loop]\naccept_bach = 3\n");
  Outcome o = run_cli("run " + path);
  CHECK(o.status == 2);
  CHECK(o.output.find(path + ":3:1:") != std::string::npos);
  CHECK(o.output.find("hint:") != std::string::npos);
}

TEST_CASE("a bad --set and a missing file exit 2") {
  CHECK(run_cli("run " + scenario + " --set loop.nope=1").status == 2);
  CHECK(run_cli("run " + scenario + " --set justakey").status == 2);
  CHECK(run_cli("run /nonexistent.toml").status == 2);
  CHECK(run_cli("run " + scenario + " --arm no-such-arm").status == 2);
  CHECK(run_cli("frobnicate").status == 2);
}

TEST_CASE("run shows a time that could not be measured as none, not as a negative time") {
  std::string path = write_temp("never-answered.toml", R"(horizon = "1s"
[loop]
max_connections = 1
[[clients]]
name = "holder"
keep_alive = true
requests = [{ at = "0ms", path = "/fast" }]
[[clients]]
name = "late"
connect_at = "10ms"
requests = [{ at = "10ms", path = "/fast" }]
[[expect]]
property = "latency"
of = "late"
max = "10ms"
)");
  Outcome o = run_cli("run " + path);
  CHECK(o.status == 1);
  CHECK(o.output.find("latency              late    none") != std::string::npos);
  CHECK(o.output.find("-0.0 ms") == std::string::npos);
  CHECK(o.output.find("\"late\" was never answered") != std::string::npos);

  // A count with nothing to count (no shutdown was asked for) is none too, not -1.
  std::string no_shutdown = write_temp("no-shutdown.toml", R"([[clients]]
name = "c"
requests = [{ path = "/fast" }]
[[expect]]
property = "shutdown_clean"
)");
  Outcome s = run_cli("run " + no_shutdown);
  CHECK(s.output.find("shutdown_clean") != std::string::npos);
  CHECK(s.output.find(" -1 ") == std::string::npos);
  CHECK(s.output.find("none") != std::string::npos);
}

TEST_CASE("run --trace-level verdicts: the same table, a trace of what answered reads, no pictures") {
  const std::string steady = std::string(LOOPSIM_SOURCE_DIR) + "/scenarios/keepalive-active.toml";
  const std::string path = loopsim::testing::temp_path("verdicts.jsonl");
  Outcome full = run_cli("run " + steady);
  Outcome verdicts = run_cli("run " + steady + " --trace-level verdicts --trace " + path);
  CHECK(verdicts.status == full.status);
  CHECK(verdicts.output == full.output);  // every figure, the passes and accepts counted all the same
  std::ifstream in(path);
  std::string line, kinds;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) kinds += nlohmann::json::parse(line)["ev"].get<std::string>() + " ";
  CHECK(kinds == "connect answer answer answer run_end ");
  Outcome picture = run_cli("run " + scenario + " --trace-level verdicts --timeline x.svg");
  CHECK(picture.status == 2);
  CHECK(picture.output.find("--timeline draws the whole trace") != std::string::npos);
  CHECK(run_cli("run " + scenario + " --trace-level some").status == 2);
}
