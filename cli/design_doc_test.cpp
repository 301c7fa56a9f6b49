// docs/design.md names the test behind each rule; every name it quotes must be a test that
// exists, so that the contract cannot point at a test that was renamed or removed.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

// Every TEST_CASE name in the tree's sources, whatever this build compiled (a sanitizer build
// leaves the seam's tests out): the string literals after "TEST_CASE(", joined.
std::set<std::string> test_names_in_sources() {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(LOOPSIM_SOURCE_DIR)) {
    std::string path = entry.path().string();
    if (!entry.is_regular_file() || !path.ends_with("_test.cpp") || path.find("/build") != std::string::npos) continue;
    std::ifstream in(path);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (std::size_t at = text.find("TEST_CASE("); at != std::string::npos; at = text.find("TEST_CASE(", at + 1)) {
      std::size_t i = at + 10;
      std::string name;
      for (;;) {
        while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
        if (i >= text.size() || text[i] != '"') break;
        for (++i; i < text.size() && text[i] != '"'; ++i) {
          if (text[i] == '\\' && i + 1 < text.size()) ++i;
          name += text[i];
        }
        ++i;
      }
      if (!name.empty()) names.insert(name);
    }
  }
  return names;
}

}  // namespace

TEST_CASE("every test docs/design.md names exists, by its exact name") {
  std::ifstream in(std::string(LOOPSIM_SOURCE_DIR) + "/docs/design.md");
  REQUIRE(in);
  std::string text, line;
  while (std::getline(in, line)) text += line + ' ';  // names are wrapped across lines
  std::set<std::string> tests = test_names_in_sources();
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

// ctest registers each test under its name, and CMake splits a name at a semicolon into two that
// match nothing: Catch2 ran no test for either half and ctest counted both as passed.
TEST_CASE("no test's name holds a semicolon, so that ctest runs each test by its whole name") {
  const std::vector<Catch::TestCase>& tests = Catch::getRegistryHub().getTestCaseRegistry().getAllTests();
  CHECK(tests.size() > 100);
  for (const Catch::TestCase& test : tests) {
    INFO(test.name);
    CHECK(test.name.find(';') == std::string::npos);
  }
}
