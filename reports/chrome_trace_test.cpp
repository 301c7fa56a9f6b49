// The Chrome trace: valid JSON that Perfetto and chrome://tracing open, with passes, requests,
// accepts and names where the format wants them.
#include "reports/chrome_trace.hpp"

#include <catch2/catch.hpp>
#include <map>

#include "scenario/scenario.hpp"
#include "sim/world.hpp"
#include "target/run.hpp"

namespace {

using namespace loopsim;

nlohmann::json accept_burst_chrome_trace() {
  auto trace = sim::run(sim::load_scenario(LOOPSIM_SOURCE_DIR "/scenarios/accept-burst.toml")).trace;
  // Through text, as a viewer reads it.
  return nlohmann::json::parse(reports::chrome_trace(trace).dump());
}

}  // namespace

TEST_CASE("every Chrome trace event has ph, ts, pid, tid and name") {
  auto doc = accept_burst_chrome_trace();
  REQUIRE(doc.is_object());
  REQUIRE(doc["traceEvents"].is_array());
  for (const auto& e : doc["traceEvents"]) {
    INFO(e.dump());
    CHECK(e["ph"].is_string());
    CHECK(e["ts"].is_number());
    CHECK(e["pid"].is_number_integer());
    CHECK(e["tid"].is_number_integer());
    CHECK(e["name"].is_string());
  }
}

TEST_CASE("accept-burst's passes are complete events on worker 0 with their batches in args") {
  auto doc = accept_burst_chrome_trace();
  std::vector<nlohmann::json> passes;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "X" && e["cat"] == "pass") passes.push_back(e);
  }
  REQUIRE(passes.size() == 28);
  const auto& second = passes[1];
  CHECK(second["tid"] == 0);
  CHECK(second["ts"] == 0);
  CHECK(second["dur"] == 760000);  // microseconds
  CHECK(second["args"]["accepted"] == 16);
  CHECK(second["args"]["stop"] == "listener:count");
  CHECK(second["args"]["owed"] == true);
}

TEST_CASE("each request is one async span from its send to its answer, ids unique") {
  auto doc = accept_burst_chrome_trace();
  std::map<std::int64_t, int> open;
  std::size_t spans = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "b") {
      CHECK(e["cat"] == "request");
      CHECK(++open[e["id"].get<std::int64_t>()] == 1);
      ++spans;
      if (e["args"]["client"] == "fast") CHECK(e["ts"] == 100000);
    } else if (e["ph"] == "e") {
      CHECK(--open[e["id"].get<std::int64_t>()] == 0);
      CHECK(e["args"]["answered"] == true);
    }
  }
  CHECK(spans == 122);
}

TEST_CASE("accepts and batch ends are instant events, and the process and worker are named") {
  auto doc = accept_burst_chrome_trace();
  int accepts = 0, batch_ends = 0, thread_names = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "i" && e["name"] == "accept") ++accepts;
    if (e["ph"] == "i" && e["name"] == "batch_end") ++batch_ends;
    if (e["ph"] == "M" && e["name"] == "thread_name") {
      ++thread_names;
      CHECK(e["args"]["name"] == "worker 0");
    }
  }
  CHECK(accepts == 124);  // 122 connections and two EAGAINs
  CHECK(batch_ends == 9);
  CHECK(thread_names == 1);
}
