#include "target/run.hpp"
#include "trace/trace_codec.hpp"

#include <catch2/catch.hpp>
#include <sstream>
#include <stdexcept>

#include "scenario/scenario.hpp"
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

TEST_CASE("a wait with no timeout crosses as bytes as none, a timeout below -1 is refused") {
  sim::Trace trace;
  trace.events.push_back(sim::ev::PassBegin{Instant{Duration(1)}, 0, 1, std::nullopt});
  trace.events.push_back(sim::ev::PassBegin{Instant{Duration(2)}, 0, 2, Duration(5)});
  const sim::Trace back = sim::decode_trace(sim::encode_trace(trace));
  REQUIRE(back.events.size() == 2);
  CHECK_FALSE(std::get<sim::ev::PassBegin>(back.events[0]).timeout);
  CHECK(std::get<sim::ev::PassBegin>(back.events[1]).timeout == Duration(5));
  // A target's process may send anything: -2 is no timeout and no "none".
  trace.events[1] = sim::ev::PassBegin{Instant{Duration(2)}, 0, 2, Duration(-2)};
  CHECK_THROWS_AS(sim::decode_trace(sim::encode_trace(trace)), std::runtime_error);
}
