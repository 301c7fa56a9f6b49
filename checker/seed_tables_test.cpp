// The seed tables: loopsim's figures beside the notes', and the live column when asked for.
#include "checker/seed_tables.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <set>
#include <sstream>

using namespace loopsim;

namespace {
const std::string scenarios = std::string(LOOPSIM_SOURCE_DIR) + "/scenarios";
}

TEST_CASE("seed tables: the simulated figures, and no live column unless asked") {
  std::ostringstream out;
  checker::write_seed_tables(scenarios, out);
  const std::string text = out.str();
  CHECK(text.find("| /fast after the blocker's answer | 153-154 ms | 150.00 ms | `loopsim run") != std::string::npos);
  CHECK(text.find("| 31 of 120 | 31 of 120 |") != std::string::npos);
  CHECK(text.find("loopsim live") == std::string::npos);
}

TEST_CASE("seed tables with a live column: every row asks, naming its scenario, arm and measure") {
  std::vector<checker::LiveAsk> asked;
  std::ostringstream out;
  checker::write_seed_tables(scenarios, out, [&asked](const checker::LiveAsk& ask) {
    asked.push_back(ask);
    return std::string("L");
  });
  const std::string text = out.str();
  CHECK(text.find("| row | seed | loopsim | loopsim live | command | why they differ |") != std::string::npos);
  CHECK(text.find("| 150.00 ms | L | `loopsim run scenarios/accept-burst.toml --arm base`") != std::string::npos);
  REQUIRE(asked.size() == 20);
  std::set<std::string> arms;
  bool group_count = false;
  for (const auto& a : asked) {
    arms.insert(a.arm);
    if (a.answers_of_group) group_count = a.property == "burst" && a.arm == "nothing-owed";
  }
  CHECK(group_count);
  CHECK(arms.count("blocking-wait-while-owed") == 1);
  CHECK(asked.front().scenario == scenarios + "/accept-burst-5ms.toml");
}

TEST_CASE("seed tables: a row whose arm the scenario lacks is an error, not a blank") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("loopsim-seeds-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::copy(scenarios, dir);
  std::ifstream in(dir / "accept-burst.toml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  const std::string arm = "name = \"unbounded-drain\"";
  REQUIRE(text.find(arm) != std::string::npos);
  text.replace(text.find(arm), arm.size(), "name = \"renamed\"");
  std::ofstream(dir / "accept-burst.toml") << text;
  std::ostringstream out;
  CHECK_THROWS_WITH(checker::write_seed_tables(dir.string(), out),
                    Catch::Contains("names the arm unbounded-drain, which the scenario does not have"));
  fs::remove_all(dir);
}
