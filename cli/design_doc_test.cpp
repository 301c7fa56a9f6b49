// docs/design.md names the test behind each rule; every name it quotes must be a test that
// exists, so that the contract cannot point at a test that was renamed or removed.
#include <catch2/catch.hpp>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

TEST_CASE("every test docs/design.md names exists, by its exact name") {
  std::ifstream in(std::string(LOOPSIM_SOURCE_DIR) + "/docs/design.md");
  REQUIRE(in);
  std::string text, line;
  while (std::getline(in, line)) text += line + ' ';  // names are wrapped across lines
  std::set<std::string> tests;
  for (const Catch::TestCase& t : Catch::getRegistryHub().getTestCaseRegistry().getAllTests()) tests.insert(t.name);
  int cited = 0;
  bool code = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '`') code = !code;
    if (code || text[i] != '"') continue;
    std::size_t end = text.find('"', i + 1);
    if (end == std::string::npos) break;
    std::string quoted = text.substr(i + 1, end - i - 1);
    i = end;
    if (quoted.size() < 20 || quoted.find(' ') == std::string::npos) continue;  // not a test's name
    std::string name;
    for (char c : quoted) {  // a wrapped name has one space where the line broke
      if (c == ' ' && !name.empty() && name.back() == ' ') continue;
      name += c;
    }
    INFO(name);
    CHECK(tests.count(name) == 1);
    ++cited;
  }
  CHECK(cited > 50);
}
