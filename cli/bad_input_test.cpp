// Every input in tests/data/bad-input/ once broke loopsim (a crash, an abort, a wrapped number,
// a false verdict). Each must now end as the contract says: exit 2 with "FILE:LINE:COLUMN:
// message" and a hint, or a `limit` (exit 3), never a signal.
#include <catch2/catch.hpp>

#include <regex>

#include "cli/loopsim_process_for_tests.hpp"

using loopsim::testing::run_loopsim;

namespace {

const std::string data = std::string(LOOPSIM_SOURCE_DIR) + "/tests/data/bad-input/";

struct Case {
  const char* file;
  int status;
  const char* says;  // a piece of the message
};

}  // namespace

TEST_CASE("every bad input ends in a contract message or a limit, never a crash") {
  const Case cases[] = {
      {"bound-max.toml", 2, "is too long"},
      {"bound-requests.toml", 2, "is too large"},
      {"nospin-max.toml", 2, "must be at most"},
      {"latency-count.toml", 2, "measures time"},
      {"slack.toml", 2, "kernel.timer_slack"},
      {"poster-cost.toml", 2, "posters.cost"},
      {"horizon-292y.toml", 2, "horizon"},
      {"max-events.toml", 2, "loop.max_events"},
      {"rlimit5.toml", 2, "the server cannot start"},
      {"pool-rlimit10.toml", 2, "the server cannot start"},
      {"pool-256.toml", 2, "the server cannot start"},
      {"poster-worker.toml", 2, "posters.worker"},
      {"choices-misfit.toml", 2, "do not fit"},
      {"choices-garbage.toml", 2, "do not fit"},
      {"newline-in-value.toml", 2, "horizon"},
      {"nul-in-value.toml", 2, "horizon"},
      {"idle-1ns.toml", 3, "limit: the run's trace passed"},
  };
  for (const Case& c : cases) {
    INFO(c.file);
    auto out = run_loopsim("run " + data + c.file);
    CHECK(out.status == c.status);
    CHECK(out.output.find(c.says) != std::string::npos);
    if (c.status == 2) {
      std::regex located("(^|\n)error: " + std::regex_replace(data, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                         c.file + R"(:[0-9]+:[0-9]+: )");
      CHECK(std::regex_search(out.output, located));
      CHECK(out.output.find("hint: ") != std::string::npos);
    }
  }
}

TEST_CASE("a trace with a client-side event that names no client, or time out of range, is refused") {
  for (const char* file : {"send-no-client.jsonl", "send-no-client-2.jsonl", "neg-t.jsonl"}) {
    INFO(file);
    for (const char* format : {"dot", "svg", "json"}) {
      auto out = run_loopsim(std::string("render ") + data + file + " --out " +
                             loopsim::testing::temp_path(std::string("bad.") + format));
      CHECK(out.status == 2);
      CHECK(out.output.find(data + file + ":") != std::string::npos);
    }
  }
}
