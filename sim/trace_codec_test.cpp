#include "sim/trace_codec.hpp"

#include <catch2/catch.hpp>
#include <sstream>
#include <stdexcept>

#include "sim/scenario.hpp"
#include "sim/world.hpp"

using namespace loopsim;

namespace {
std::string jsonl(const sim::Trace& trace) {
  std::ostringstream out;
  sim::write_jsonl(trace, out);
  return out.str();
}
}  // namespace

TEST_CASE("a trace passed as bytes comes back whole, every event of every kind it had") {
  for (const char* file : {"/scenarios/accept-burst.toml", "/scenarios/shutdown.toml", "/scenarios/drain-chunk.toml",
                           "/scenarios/emfile.toml"}) {
    INFO(file);
    sim::Trace trace = sim::run(sim::load_scenario(std::string(LOOPSIM_SOURCE_DIR) + file)).trace;
    std::string bytes = sim::encode_trace(trace);
    CHECK(jsonl(sim::decode_trace(bytes)) == jsonl(trace));
    CHECK_THROWS_AS(sim::decode_trace(bytes.substr(0, bytes.size() - 1)), std::runtime_error);
    CHECK_THROWS_AS(sim::decode_trace(bytes + "x"), std::runtime_error);
  }
}
