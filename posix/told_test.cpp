// A target's failing run told as a person reads it: examples/epoll/et-pipelined.toml's planted
// 512-byte read strands a pipelined burst, and the story and the timeline say so in bytes and in
// answers as the client counted them.
#include <catch2/catch.hpp>
#include <string>

#include "checker/suite.hpp"
#include "explore/shrink.hpp"
#include "posix/probe_for_tests.hpp"
#include "reports/timeline.hpp"
#include "sim/world.hpp"

#ifdef LOOPSIM_SEAM_BUILT

using namespace loopsim;

namespace {
const std::string pipelined = std::string(LOOPSIM_SOURCE_DIR) + "/examples/epoll/et-pipelined.toml";

checker::SuiteResult arm(const std::string& name) {
  checker::SuiteOptions options;
  options.only_arm = name;
  return checker::run_suite(pipelined, options);
}
}  // namespace

TEST_CASE("a target's partly drained burst: the story says what one read took and what it left") {
  checker::SuiteResult result = arm("read-512");
  REQUIRE(result.report.arms.size() == 1);
  std::string told;
  for (const std::string& line : result.report.arms.front().story) told += line + "\n";
  INFO(told);
  CHECK(told.find("pipeliner: connected at 10.000 ms; sent 20 requests (\"/p\" x20) all at 10.000 ms.") != std::string::npos);
  CHECK(told.find("the server read 512 bytes in 1 read, and wrote 600 bytes in 15 writes; 15 of 20 answered "
                  "(never answered: \"/p\" \"/p\" \"/p\" and 2 more); 168 bytes it sent were never read.") != std::string::npos);
  // Drained to EAGAIN, the same small buffer takes the burst in two reads, and nothing is told.
  checker::SuiteResult drained = arm("read-512-drained");
  CHECK(drained.report.arms.front().judgement.held);
  CHECK(drained.report.arms.front().story.empty());
}

TEST_CASE("a target's timeline counts the answers as the client did, and the bytes left unread") {
  checker::SuiteResult result = arm("read-512");
  REQUIRE(result.traces.size() == 1);
  std::string svg = reports::render_timeline(result.traces.front(), reports::PictureFormat::svg);
  CHECK(svg.find("answers the clients received: 15") != std::string::npos);
  CHECK(svg.find("read 512 B in 1 read, wrote 600 B in 15 writes") != std::string::npos);
  CHECK(svg.find("left at the end: 168 B sent and never read, 0 B written and never taken, on 1 connection") !=
        std::string::npos);
  // The seam's read-then-write spans are named as its guess: never "served", which 15 answers
  // in one span would contradict.
  CHECK(svg.find("read&#45;then&#45;write spans (the seam&#39;s guess, not a count of answers) 1: pipeliner") != std::string::npos);
  CHECK(svg.find(">served 1") == std::string::npos);
}

TEST_CASE("shrink takes a target's 20 pipelined requests down to the fewest that still strand, 16, and its arguments to those that matter") {
  // 16 requests are 544 bytes, more than the 512-byte read takes; 15 are 510, which it takes
  // whole. Each trial is an explore search of the smaller file.
  sim::Scenario scenario = sim::load_scenario(pipelined, {sim::Override{"target.exec", "[\"et_http\", \"--port\", \"8080\", \"--read-size\", \"512\"]"}});
  explore::ExploreOptions options;
  sim::Shrinks shrinks = explore::shrink(scenario, checker::Costs{}, options);
  CHECK(shrinks.closed_requests == std::map<std::string, std::int64_t>{{"pipeliner", 16}});
  // Of its arguments, --port 8080 is the program's default and goes; the 512-byte read stays.
  // Leaving out "512" alone makes et_http refuse its arguments (exit 2), which also leaves the
  // requests unanswered: for another reason, so it is not taken.
  REQUIRE(shrinks.arguments);
  CHECK(*shrinks.arguments == std::vector<std::string>{"--read-size", "512"});
  CHECK(explore::describe(scenario, shrinks) ==
        "pipeliner: 20 -> 16 requests; arguments: --port 8080 --read-size 512 -> --read-size 512");
  sim::Scenario small = sim::with_shrinks(scenario, shrinks);
  CHECK(small.target->exec == std::vector<std::string>{"et_http", "--read-size", "512"});
}

TEST_CASE("shrink keeps an argument without which the program dies: a failure for another reason is not smaller") {
  // The probe's "dies --stay" holds its one connection unanswered and lives on; without
  // "--stay" it exits 3 after that connection. Both leave the request unanswered, but only the
  // first is the failure being shrunk.
  sim::Scenario scenario = loopsim::testing::probe("dies");
  scenario.target->exec.push_back("--stay");
  sim::Shrinks shrinks = explore::shrink(scenario, checker::Costs{}, explore::ExploreOptions{});
  CHECK_FALSE(shrinks.arguments);
  CHECK(explore::describe(scenario, shrinks).find("arguments") == std::string::npos);
}

TEST_CASE("shrink shortens request bodies to the fewest bytes that still strand") {
  // Two pipelined requests with 1,000-byte bodies and a 512-byte read: et_http answers a request
  // at the end of its head, so the second strands while its head is past the first read. With
  // 500-byte bodies it still is; with 250 it is not (the second head ends at byte 358).
  sim::Scenario scenario = sim::parse_scenario(R"(
name = "body"
horizon = "200ms"
[target]
exec = ["et_http", "--port", "8080", "--read-size", "512"]
port = 8080
[[clients]]
name = "pipeliner"
connect_at = "10ms"
keep_alive = true
requests = 2
pipeline = 2
body = 1000
path = "/p"
[[expect]]
property = "answered"
)", std::string(LOOPSIM_SOURCE_DIR) + "/examples/epoll/body.toml");
  sim::Shrinks shrinks = explore::shrink(scenario, checker::Costs{}, explore::ExploreOptions{});
  CHECK(shrinks.body == std::map<std::string, std::int64_t>{{"pipeliner", 500}});
  CHECK(explore::describe(scenario, shrinks).find("pipeliner: body 1000 -> 500 bytes") != std::string::npos);
  const std::string pinned = sim::pinned_scenario(scenario.source, scenario.file, sim::Arm{"base", {}, {}}, {}, {}, shrinks);
  CHECK(pinned.find("body = 500") != std::string::npos);
}

#endif
