// `loopsim generate` as a user meets it: exit statuses, the shrunk file, its replay.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli/loopsim_process_for_tests.hpp"

namespace {

using loopsim::testing::Outcome;

Outcome run_cli(const std::string& args) { return loopsim::testing::run_loopsim(args, true); }

}  // namespace

TEST_CASE("generate with a sabotaged rule exits 1 and writes a file that run replays to 1", "[generate]") {
  std::string out = loopsim::testing::temp_path("generate");
  Outcome found = run_cli("generate --runs 200 --seed 1 --set loop.owe_unfinished_batch=false --json --out " + out);
  REQUIRE(found.status == 1);
  auto doc = nlohmann::json::parse(found.output);
  CHECK(doc["verdict"] == "found");
  CHECK(doc["livelock"] == false);
  CHECK(doc["clients_after"].get<int>() <= doc["clients_before"].get<int>());
  std::string file = doc["scenario"];
  CHECK(std::filesystem::exists(file));
  CHECK(std::filesystem::exists(doc["original"].get<std::string>()));
  CHECK(doc["replay"] == "loopsim run " + file);
  Outcome replay = run_cli("run " + file);
  CHECK(replay.status == 1);
  for (const auto& property : doc["violated"]) {
    CHECK(replay.output.find(property.get<std::string>()) != std::string::npos);
  }
  // The finding is told in words: in --json, and as comments in the file written.
  const std::string story = doc["story"].dump();
  INFO(story);
  CHECK(story.find("What the clients did:") != std::string::npos);
  CHECK(story.find("still queued on its listener") != std::string::npos);
  std::ifstream written(file);
  const std::string text((std::istreambuf_iterator<char>(written)), std::istreambuf_iterator<char>());
  CHECK(text.find("# what happened:\n") != std::string::npos);
}

TEST_CASE("generate is deterministic by seed, and says a pass is a sample", "[generate]") {
  std::string out = loopsim::testing::temp_path("generate-same");
  std::string args = "generate --runs 40 --seed 5 --json --out " + out;
  Outcome a = run_cli(args), b = run_cli(args);
  REQUIRE(a.status == 0);
  auto da = nlohmann::json::parse(a.output), db = nlohmann::json::parse(b.output);
  da.erase("wall_ns");
  db.erase("wall_ns");
  CHECK(da == db);
  CHECK(da["verdict"] == "none_found");
  CHECK(da["runs"] == 40);
  Outcome text = run_cli("generate --runs 5 --seed 5 --out " + out);
  CHECK(text.status == 0);
  CHECK(text.output.rfind("seed 5\n", 0) == 0);
  CHECK(text.output.find("not a proof") != std::string::npos);
  CHECK(run_cli("generate --help").output.find("not a proof") != std::string::npos);
}

TEST_CASE("generate rejects bad input with 2, and a time limit that cuts it short with 3", "[generate]") {
  CHECK(run_cli("generate --runs 3 --set loop.acept_batch=1").status == 2);
  CHECK(run_cli("generate --runs 3 --set loop.accept_batch=-1").status == 2);
  CHECK(run_cli("generate --runs 3 --time-limit 10parsecs").status == 2);
  Outcome cut = run_cli("generate --runs 1000000 --time-limit 1ns --json");
  CHECK(cut.status == 3);
  CHECK(nlohmann::json::parse(cut.output)["verdict"] == "limit");
}

TEST_CASE("generate says what it checked: per property, the runs that judged it and why the others left it out") {
  Outcome o = loopsim::testing::run_loopsim("generate --runs 60 --seed 1 --json --out " + loopsim::testing::temp_path("gen-judged"), true);
  REQUIRE((o.status == 0 || o.status == 1));
  auto doc = nlohmann::json::parse(o.output);
  std::uint64_t runs = doc["runs"];
  for (const char* property : {"answered", "no_stranded_backlog", "no_spin", "batch_bound", "shutdown_clean", "post_latency"}) {
    INFO(property);
    REQUIRE(doc["judged"].contains(property));
    const auto& c = doc["judged"][property];
    CHECK(c["judged"].get<std::uint64_t>() + c["left_out"].get<std::uint64_t>() == runs);
    std::uint64_t why = 0;
    for (const auto& [reason, n] : c["why"].items()) why += n.get<std::uint64_t>();
    CHECK(why == c["left_out"].get<std::uint64_t>());
  }
  CHECK(doc["judged"]["no_spin"]["judged"] == runs);       // never left out
  CHECK(doc["judged"]["answered"]["left_out"].get<std::uint64_t>() > 0);  // left out, and said so
}

#ifdef LOOPSIM_SEAM_BUILT  // the two below run a target: not in the sanitizer build

TEST_CASE("generate without a shape finds a target's 512-byte read strand at its fourth run, and its drained twin holds", "[generate]") {
  // examples/epoll/et_http.c reads a connection once per edge. generate draws pipelined bursts
  // past common read sizes; seed 1 draws one that strands at run 3 (RapidCheck's draws are the
  // seed's: of runs 0 to 2, two drew clients that reset, which leaves `answered` out, and one
  // no burst that strands).
  const std::string out = loopsim::testing::temp_path("generate-et");
  const std::string target = " --set 'target.exec=[\"et_http\",\"--port\",\"8080\",\"--read-size\",\"512\"";
  Outcome found = run_cli("generate --runs 2000 --seed 1 --json --out " + out + target + "]' --set target.port=8080");
  INFO(found.output);
  REQUIRE(found.status == 1);
  auto doc = nlohmann::json::parse(found.output);
  CHECK(doc["failing_run"] == 3);
  CHECK(doc["violated"] == nlohmann::json::array({"answered"}));
  CHECK(doc["story"].dump().find("bytes it sent were never read") != std::string::npos);
  Outcome replay = run_cli("run " + doc["scenario"].get<std::string>());
  CHECK(replay.status == 1);
  // Read to EAGAIN, the same buffer holds every burst drawn (a sample, not a proof).
  Outcome drained = run_cli("generate --runs 100 --seed 1 --json --out " + out + target + ",\"--drain\"]' --set target.port=8080");
  INFO(drained.output);
  CHECK(drained.status == 0);
}

TEST_CASE("generate --shape runs a target's own file varied, and refuses --set beside it", "[generate]") {
  const std::string out = loopsim::testing::temp_path("generate-shape");
  const std::string shape = std::string(LOOPSIM_SOURCE_DIR) + "/examples/python/py-poll.toml";
  Outcome held = run_cli("generate --shape " + shape + " --runs 5 --json --out " + out);
  INFO(held.output);
  CHECK(held.status == 0);
  CHECK(held.output.find("\"runs\": 5") != std::string::npos);
  // What the runs judged: the file's properties, each in every run (its JSON said {} once).
  CHECK(held.output.find("\"answered\": {\n      \"judged\": 5,\n      \"left_out\": 0") != std::string::npos);
  Outcome both = loopsim::testing::run_loopsim("generate --shape " + shape + " --set seed=2 --out " + out);
  CHECK(both.status == 2);
  CHECK(both.output.find("--set and --shape do not go together") != std::string::npos);
  Outcome missing = loopsim::testing::run_loopsim("generate --shape /nonexistent.toml --out " + out);
  CHECK(missing.status == 2);
  CHECK(missing.output.find("error: /nonexistent.toml:1:1: no such scenario file") != std::string::npos);
}

TEST_CASE("generate --shape says which runs judged shutdown_clean, and why the others left it out", "[generate]") {
  const std::string shape = std::string(LOOPSIM_SOURCE_DIR) + "/scenarios/shutdown-backlog.toml";
  Outcome two = run_cli("generate --shape " + shape + " --runs 2 --seed 1 --out " + loopsim::testing::temp_path("shape-judged"));
  INFO(two.output);
  CHECK(two.output.find("  shutdown_clean: judged in 1 of 2 runs, left out in 1 (1: no stop left in the run") !=
        std::string::npos);
}

TEST_CASE("generate --shape's finding on a target replays from where it is written, relative arguments and all", "[generate]") {
  // py-poll with HTTP/1.1: one idle keep-alive client holds the server, and a later one waits.
  // The shape names its script relatively (poll_http.py), from its own folder.
  const std::string examples = std::string(LOOPSIM_SOURCE_DIR) + "/examples/python";
  std::ifstream in(examples + "/py-poll.toml");
  std::stringstream text;
  text << in.rdbuf();
  std::string shape = text.str();
  shape = shape.substr(0, shape.find("[[arms]]"));
  const std::string exec = "exec = [\"/usr/bin/python3\", \"poll_http.py\", \"--port\", \"8080\"]";
  REQUIRE(shape.find(exec) != std::string::npos);
  shape.replace(shape.find(exec), exec.size(), exec.substr(0, exec.size() - 1) + ", \"--http11\"]\ndir = \"" + examples + "\"");
  const std::string file = loopsim::testing::temp_path("shape-http11") + ".toml";
  std::ofstream(file) << shape;
  const std::string out = loopsim::testing::temp_path("shape-found");
  Outcome found = run_cli("generate --shape " + file + " --runs 20 --json --out " + out);
  INFO(found.output);
  REQUIRE(found.status == 1);
  nlohmann::json doc = nlohmann::json::parse(found.output);
  const std::string scenario = doc["scenario"].get<std::string>();
  CHECK(scenario.rfind(out, 0) == 0);
  Outcome replay = run_cli("run " + scenario);
  INFO(replay.output);
  CHECK(replay.status == 1);
}

#endif  // LOOPSIM_SEAM_BUILT
