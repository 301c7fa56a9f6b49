// The layers (docs/architecture.md): each folder's sources, tests aside, include only their own
// folder and the layers beneath it, so that data flows one way. Checked on every #include line.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

// What each layer may include besides itself: the layers beneath it, spelled out.
const std::map<std::string, std::set<std::string>>& beneath() {
  static const std::map<std::string, std::set<std::string>> table = [] {
    std::map<std::string, std::set<std::string>> t;
    t["base"] = {};
    t["realloop"] = {"base"};
    t["realloop/live"] = {"base", "realloop"};
    t["model"] = {"base", "realloop"};
    t["scenario"] = {"base", "realloop", "model"};
    t["trace"] = {"base", "realloop", "model", "scenario"};
    t["sim"] = {"base", "realloop", "model", "scenario", "trace"};
    t["target"] = {"base", "realloop", "model", "scenario", "trace", "sim"};
    t["checker"] = {"base", "realloop", "model", "scenario", "trace", "sim", "target"};
    for (const char* side : {"explore", "probe", "reports"}) {  // side by side: none includes another
      t[side] = t["checker"];
      t[side].insert("checker");
    }
    t["probe"].insert("realloop/live");
    t["posix"] = t["target"];
    t["posix"].insert("target");
    return t;
  }();
  return table;
}

// The layer a path inside the tree belongs to: "realloop/live" for realloop/live/x.hpp.
std::string layer_of(const std::string& relative) {
  if (relative.rfind("realloop/live/", 0) == 0) return "realloop/live";
  return relative.substr(0, relative.find('/'));
}

std::vector<std::string> violations() {
  const fs::path root = LOOPSIM_SOURCE_DIR;
  const std::regex include(R"re(^\s*#\s*include\s+"([a-z_]+/[a-z_/]+\.hpp)")re");
  std::vector<std::string> found;
  for (const auto& [layer, allowed] : beneath()) {
    for (const auto& entry : fs::directory_iterator(root / layer)) {
      const std::string name = entry.path().filename().string();
      const bool source = name.ends_with(".cpp") || name.ends_with(".hpp");
      if (!entry.is_regular_file() || !source || name.ends_with("_test.cpp") || name.ends_with("_for_tests.hpp"))
        continue;
      std::ifstream in(entry.path());
      std::string line;
      for (int number = 1; std::getline(in, line); ++number) {
        std::smatch m;
        if (!std::regex_search(line, m, include)) continue;
        const std::string to = layer_of(m[1]);
        if (to == layer || allowed.contains(to)) continue;
        std::ostringstream where;
        where << layer << "/" << name << ":" << number << " includes " << m[1];
        found.push_back(where.str());
      }
    }
  }
  return found;
}

}  // namespace

TEST_CASE("layers: no source includes a layer above its own or beside it") {
  const std::vector<std::string> found = violations();
  for (const std::string& v : found) UNSCOPED_INFO(v);
  CHECK(found.empty());
  // Each layer is a folder that holds sources: a renamed folder fails here, not in silence.
  for (const auto& [layer, allowed] : beneath()) CHECK(fs::is_directory(fs::path(LOOPSIM_SOURCE_DIR) / layer));
}
