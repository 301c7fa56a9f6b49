// `loopsim merge`: shards run as processes of their own, merged, equal the unsharded search.
#include <catch2/catch.hpp>
#include <fstream>
#include <regex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli/loopsim_process_for_tests.hpp"

namespace {

using loopsim::testing::Outcome;
using Json = nlohmann::json;

const std::string small = std::string(LOOPSIM_SOURCE_DIR) + "/bench/spin/accept-small.toml";
// Small enough to search as a tree (--no-prune), every execution counted.
const std::string tiny = std::string(LOOPSIM_SOURCE_DIR) + "/tests/data/explore/two-arrivals.toml";

Outcome run_cli(const std::string& args) { return loopsim::testing::run_loopsim(args, true); }

// Runs `command` once whole and as `n` shards, each shard's --json into a file; returns the
// whole run's document and the merge's.
struct Sharded {
  Json whole, merged;
  int whole_status = -1, merged_status = -1;
  std::string dir;
};

Sharded shard_and_merge(const std::string& command, int n, const std::string& name) {
  Sharded s;
  s.dir = loopsim::testing::temp_path("merge-" + name);
  Outcome whole = run_cli(command + " --json --out " + s.dir + "/whole");
  s.whole_status = whole.status;
  s.whole = Json::parse(whole.output);
  std::string files;
  for (int i = 0; i < n; ++i) {
    std::string shard = std::to_string(i) + "/" + std::to_string(n);
    std::string out = s.dir + "/shard-" + std::to_string(i);
    Outcome part = run_cli(command + " --shard " + shard + " --json --out " + out);
    REQUIRE(part.status != 2);
    std::ofstream(out + ".json") << part.output;
    files += " " + out + ".json";
  }
  Outcome merged = run_cli("merge" + files + " --json --out " + s.dir + "/merged");
  s.merged_status = merged.status;
  s.merged = Json::parse(merged.output);
  return s;
}

std::string body(const std::string& path) {  // a written scenario less its comment lines
  std::ifstream in(path);
  std::string line, text;
  while (std::getline(in, line))
    if (line.rfind("#", 0) != 0) text += line + "\n";
  return text;
}

}  // namespace

TEST_CASE("merge: explore's shards, pruning off, add up to the unsharded search, by deviations and depth first") {
  for (const std::string strategy : {"deviations", "dfs"}) {
    INFO(strategy);
    Sharded s = shard_and_merge("explore " + tiny + " --no-prune --strategy " + strategy, 3, strategy);
    CHECK(s.whole_status == 0);
    CHECK(s.merged_status == s.whole_status);
    CHECK(s.merged["verdict"] == s.whole["verdict"]);
    for (const char* key : {"executions", "cut"}) {
      INFO(key);
      CHECK(s.merged[key] == s.whole[key]);
    }
    // Depth first replays the same prefixes sharded or not; by deviations a shard restores
    // snapshots of its own, and replays what they do not hold.
    if (strategy == "dfs") CHECK(s.merged["steps"] == s.whole["steps"]);
    CHECK(s.merged["shards"] == 3);
    // Shards share no visited set: they count at least the states of the whole.
    CHECK(s.merged["states_summed"].get<std::uint64_t>() >= s.whole["states"].get<std::uint64_t>());
    if (strategy == "deviations") {
      CHECK(s.whole["deviations_completed"] == s.whole["deviations_max"]);
      CHECK(s.merged["deviations_completed"] == s.whole["deviations_completed"]);
      CHECK(s.merged["deviations_max"] == s.whole["deviations_max"]);
    } else {
      CHECK_FALSE(s.merged.contains("deviations_completed"));
    }
  }
}

TEST_CASE("merge: explore --maximize finds the unsharded search's worst case, which replays") {
  std::string burst = std::string(LOOPSIM_SOURCE_DIR) + "/scenarios/accept-burst.toml";
  Sharded s = shard_and_merge("explore " + burst + " --no-prune --depth 5 --maximize latency:fast", 2, "worst");
  CHECK(s.merged["executions"] == s.whole["executions"]);
  CHECK(s.merged["judged"] == s.whole["judged"]);
  REQUIRE(s.whole["worst"].is_number());
  CHECK(s.merged["worst"] == s.whole["worst"]);
  std::string replay = s.merged["worst_replay"];
  CHECK(replay.rfind(s.dir + "/merged/", 0) == 0);  // carried into merge --out
  CHECK(run_cli("run " + replay).status != 2);
}

TEST_CASE("merge: explore --strategy random shards deal the seeds out") {
  Sharded s = shard_and_merge("explore " + small + " --strategy random --seeds 1..25", 4, "random");
  CHECK(s.whole_status == 3);
  CHECK(s.merged_status == 3);
  CHECK(s.merged["executions"] == s.whole["executions"]);
  CHECK(s.merged["steps"] == s.whole["steps"]);
}

TEST_CASE("merge: a shard's violation is the merge's, and its counterexample replays") {
  Sharded s = shard_and_merge("explore " + small + " --set loop.owe_unfinished_batch=false", 2, "violated");
  CHECK(s.whole_status == 1);
  CHECK(s.merged_status == 1);
  CHECK(s.merged["verdict"] == "violated");
  CHECK(s.merged["violated"] == s.whole["violated"]);
  std::string cex = s.merged["counterexample"];
  CHECK(run_cli("run " + cex).status == 1);
}

TEST_CASE("merge: generate's shards find the unsharded failure, the same scenario", "[long]") {
  Sharded s = shard_and_merge("generate --runs 300 --seed 5 --set loop.owe_unfinished_batch=false", 3, "generate");
  REQUIRE(s.whole_status == 1);
  CHECK(s.merged_status == 1);
  CHECK(s.merged["failing_run"] == s.whole["failing_run"]);
  CHECK(s.merged["violated"] == s.whole["violated"]);
  CHECK(body(s.merged["scenario"]) == body(s.whole["scenario"]));
  CHECK(run_cli("run " + s.merged["scenario"].get<std::string>()).status == 1);
}

TEST_CASE("merge: generate's shards with nothing found judge every run once") {
  Sharded s = shard_and_merge("generate --runs 30 --seed 2", 4, "generate-held");
  CHECK(s.whole_status == 0);
  CHECK(s.merged_status == 0);
  CHECK(s.merged["runs"] == s.whole["runs"]);
}

TEST_CASE("merge refuses what is not one whole search, saying where") {
  std::string dir = loopsim::testing::temp_path("merge-bad");
  std::filesystem::create_directories(dir);
  auto shard = [&](const std::string& options, const std::string& name) {
    std::string file = dir + "/" + name + ".json";
    std::ofstream(file) << run_cli("explore " + small + " --json --out " + dir + " " + options).output;
    return file;
  };
  std::string a = shard("--shard 0/2", "a"), b = shard("--shard 1/2", "b"), other = shard("--shard 1/2 --depth 3", "other");
  auto refused = [](const Outcome& o, const std::string& said) {
    INFO(o.output);
    CHECK(o.status == 2);
    CHECK(o.output.find(said) != std::string::npos);
  };
  refused(loopsim::testing::run_loopsim("merge " + a), "1 of 2 shards missing: 1");
  refused(loopsim::testing::run_loopsim("merge " + a + " " + a + " " + b), "shard 0 again");
  refused(loopsim::testing::run_loopsim("merge " + a + " " + other), "depth 3 against 1024");
  std::ofstream(dir + "/broken.json") << "{\n  \"verdict\": \n";
  refused(loopsim::testing::run_loopsim("merge " + dir + "/broken.json"), "broken.json:3:1: not JSON");
  std::ofstream(dir + "/check.json") << "{\"scenarios\": []}";
  refused(loopsim::testing::run_loopsim("merge " + dir + "/check.json"), "not a shard's result");
  refused(loopsim::testing::run_loopsim("merge " + dir + "/none.json"), "cannot read the file");
  CHECK(loopsim::testing::run_loopsim("merge " + a + " " + b).status == 0);
}

TEST_CASE("merge: the cluster scripts' default time limits are ones explore reads") {
  // Their first real run (bench/slurm_cluster.sh) found `25m`, which explore refuses: every task
  // exited 2 and the merge was cancelled. Each default, taken from the scripts as they are.
  const std::string root = LOOPSIM_SOURCE_DIR;
  std::smatch m;
  const std::string sbatch = loopsim::testing::file_text(root + "/deploy/slurm/explore.sbatch");
  REQUIRE(std::regex_search(sbatch, m, std::regex(R"(LOOPSIM_TIME_LIMIT:-([^}]+)\})")));
  const std::string slurm = m[1];
  const std::string job = loopsim::testing::file_text(root + "/deploy/k8s/explore-job.yaml");
  REQUIRE(std::regex_search(job, m, std::regex(R"(name: LOOPSIM_TIME_LIMIT[^\n]*\n\s*value: (\S+))")));
  const std::string k8s = m[1];
  for (const std::string& limit : {slurm, k8s}) {
    INFO(limit);
    Outcome ran = run_cli("explore " + tiny + " --time-limit " + limit + " --max-executions 1");
    CHECK(ran.status != 2);
  }
}
