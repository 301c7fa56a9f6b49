// `loopsim render` and run's --timeline / --chrome-trace: the format from the extension, bad
// input as exit 2 with a hint.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/loopsim_process_for_tests.hpp"

namespace {

namespace fs = std::filesystem;
using loopsim::testing::run_loopsim;

std::string temp(const std::string& name) { return loopsim::testing::temp_path("render-" + name); }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// accept-burst's base trace, written once.
const std::string& trace_file() {
  static const std::string path = [] {
    std::string p = temp("trace.jsonl");
    run_loopsim("run " + loopsim::testing::accept_burst + " --arm base --trace " + p);
    return p;
  }();
  return path;
}

}  // namespace

TEST_CASE("render writes each format the extension names") {
  for (const char* ext : {".svg", ".png", ".dot", ".json"}) {
    std::string out = temp(std::string("out") + ext);
    fs::remove(out);
    auto o = run_loopsim("render " + trace_file() + " --out " + out);
    INFO(ext << ": " << o.output);
    CHECK(o.status == 0);
    CHECK(fs::file_size(out) > 100);
  }
  CHECK(read_file(temp("out.svg")).find("<svg") != std::string::npos);
  CHECK(read_file(temp("out.png")).rfind("\x89PNG", 0) == 0);
  CHECK(nlohmann::json::parse(read_file(temp("out.json"))).contains("traceEvents"));
}

TEST_CASE("render refuses an unknown extension with exit 2 and a hint") {
  auto o = run_loopsim("render " + trace_file() + " --out " + temp("out.gif"));
  CHECK(o.status == 2);
  CHECK(o.output.find("hint: name the file F.svg, F.png, F.dot or F.json") != std::string::npos);
}

TEST_CASE("render exits 2 naming the line of a bad trace, and for a missing one") {
  std::string bad = temp("bad.jsonl");
  std::string text = read_file(trace_file());
  std::ofstream(bad) << text.substr(0, text.find('\n') + 1) << "{\"t\":0,\"ev\":\"nonsense\"}\n";
  auto o = run_loopsim("render " + bad + " --out " + temp("bad.svg"));
  CHECK(o.status == 2);
  CHECK(o.output.find(bad + ":2:8: unknown event kind") != std::string::npos);
  CHECK(run_loopsim("render /no/such.jsonl --out " + temp("x.svg")).status == 2);
}

TEST_CASE("run --timeline and --chrome-trace write the first arm's pictures") {
  std::string svg = temp("run.svg"), json = temp("run.json");
  auto o = run_loopsim("run " + loopsim::testing::accept_burst + " --timeline " + svg + " --chrome-trace " + json);
  CHECK(o.status == 0);
  CHECK(read_file(svg).find("burst · base") != std::string::npos);  // SVG writes "-" as &#45;
  CHECK(nlohmann::json::parse(read_file(json))["otherData"]["arm"] == "base");
}

TEST_CASE("run refuses a picture it cannot write before running") {
  auto o = run_loopsim("run " + loopsim::testing::accept_burst + " --timeline " + temp("x.json"));
  CHECK(o.status == 2);
  CHECK(o.output.find("hint: name the file F.svg, F.png or F.dot") != std::string::npos);
  CHECK(o.output.find("seed 1") == std::string::npos);
  CHECK(run_loopsim("run " + loopsim::testing::accept_burst + " --chrome-trace " + temp("x.svg")).status == 2);
}
