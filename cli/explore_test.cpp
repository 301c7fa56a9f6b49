// `loopsim explore` as a user meets it: exit statuses, the counterexample file, its replay.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

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
  CHECK(std::filesystem::exists(out + "/accept-small-counterexample.dot"));
  Outcome replay = run_cli("run " + cex);
  CHECK(replay.status == 1);
  CHECK(replay.output.find("no_stranded_backlog") != std::string::npos);
}

TEST_CASE("explore exits 0 with the rules on, and says which verdict it reached") {
  Outcome o = run_cli("explore " + small + " --json");
  REQUIRE(o.status == 0);
  auto doc = nlohmann::json::parse(o.output);
  CHECK((doc["verdict"] == "none_found" || doc["verdict"] == "bound_reached"));
  for (const char* key : {"executions", "states", "transitions", "wall_ns"}) CHECK(doc.contains(key));
}

TEST_CASE("explore rejects bad bounds with exit 2") {
  CHECK(run_cli("explore " + small + " --shard 3/2").status == 2);
  CHECK(run_cli("explore " + small + " --seeds 1-5").status == 2);
  CHECK(run_cli("explore " + small + " --strategy bfs").status == 2);
}
