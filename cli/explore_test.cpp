// `loopsim explore` as a user meets it: exit statuses, the counterexample file, its replay.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace {

struct Outcome {
  int status = -1;
  std::string output;
};

Outcome loopsim(const std::string& args) {
  std::string command = std::string(LOOPSIM_BINARY) + " " + args + " 2>/dev/null";
  Outcome outcome;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) outcome.output.append(buffer, n);
  int status = pclose(pipe);
  outcome.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return outcome;
}

const std::string small = std::string(LOOPSIM_SOURCE_DIR) + "/bench/spin/accept-small.toml";

}  // namespace

TEST_CASE("explore exits 1 with nothing owed and writes a counterexample that run replays to 1") {
  std::string out = "/tmp/loopsim-test-explore-" + std::to_string(getpid());
  Outcome found = loopsim("explore " + small + " --set loop.owe_unfinished_batch=false --json --out " + out);
  REQUIRE(found.status == 1);
  auto doc = nlohmann::json::parse(found.output);
  CHECK(doc["verdict"] == "violated");
  std::string cex = doc["counterexample"];
  CHECK(std::filesystem::exists(cex));
  CHECK(std::filesystem::exists(out + "/accept-small-counterexample.dot"));
  Outcome replay = loopsim("run " + cex);
  CHECK(replay.status == 1);
  CHECK(replay.output.find("no_stranded_backlog") != std::string::npos);
  std::filesystem::remove_all(out);
}

TEST_CASE("explore exits 0 with the rules on, and says which verdict it reached") {
  Outcome o = loopsim("explore " + small + " --json");
  REQUIRE(o.status == 0);
  auto doc = nlohmann::json::parse(o.output);
  CHECK((doc["verdict"] == "none_found" || doc["verdict"] == "bound_reached"));
  for (const char* key : {"executions", "states", "transitions", "wall_ns"}) CHECK(doc.contains(key));
}

TEST_CASE("explore rejects bad bounds with exit 2") {
  CHECK(loopsim("explore " + small + " --shard 3/2").status == 2);
  CHECK(loopsim("explore " + small + " --seeds 1-5").status == 2);
  CHECK(loopsim("explore " + small + " --strategy bfs").status == 2);
}
