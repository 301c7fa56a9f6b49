// The story of a failing run: told from its trace, with the bytes each connection moved and what
// was left, and the reasons its properties give.
#include "checker/story.hpp"

#include <catch2/catch.hpp>
#include <numeric>
#include <string>

#include "checker/suite.hpp"
#include "sim/world.hpp"
#include "target/run.hpp"

using namespace loopsim;

namespace {

std::string joined(const std::vector<std::string>& lines) {
  return std::accumulate(lines.begin(), lines.end(), std::string(), [](std::string a, const std::string& b) { return a + b + "\n"; });
}

checker::ArmReport arm_of(const std::string& file, const std::string& arm, bool verdicts_only = false) {
  checker::SuiteOptions options;
  options.only_arm = arm;
  options.verdicts_only = verdicts_only;
  auto result = checker::run_suite(std::string(LOOPSIM_SOURCE_DIR) + file, options);
  REQUIRE(result.report.arms.size() == 1);
  return result.report.arms.front();
}

}  // namespace

TEST_CASE("story: a stranded backlog is told as connections never accepted, their bytes never read") {
  checker::ArmReport arm = arm_of("/scenarios/accept-burst.toml", "nothing-owed");
  const std::string told = joined(arm.story);
  INFO(told);
  CHECK(told.find("What the clients did:\nfast: connected at 0.000 ms; sent 1 request (\"/fast\") at 100.000 ms.") != std::string::npos);
  CHECK(told.find("burst (120 clients): connected all at 50.000 ms; sent 120 requests (\"/slow?ms=10\" x120)") != std::string::npos);
  CHECK(told.find("connections were still queued on its listener") != std::string::npos);
  // The 89 stranded members of the burst, alike, are told in one line.
  CHECK(told.find("89 of burst (burst#31, burst#32, ...), each: its handshake completed, and the server never accepted it; "
                  "0 of 1 answered (never answered: \"/slow?ms=10\"); 62 bytes it sent were never read.") != std::string::npos);
  CHECK(told.find("Why it fails:\nanswered: 89 request(s) never answered") != std::string::npos);
  // Drawn from the seed, its choices off the natural path are counted, not told one by one.
  CHECK(told.find("2 choices drawn from the seed took another than the natural option") != std::string::npos);
}

TEST_CASE("story: a pipelined request left behind is named, with what the server read and wrote") {
  checker::ArmReport arm = arm_of("/scenarios/pipelined-large-answer.toml", "no-resume-after-flush");
  const std::string told = joined(arm.story);
  INFO(told);
  CHECK(told.find("pipeliner: connected at 0.000 ms; sent 2 requests (\"/bytes?n=1000000\", \"/fast\")") != std::string::npos);
  CHECK(told.find("1 of 2 answered (never answered: \"/fast\")") != std::string::npos);
  // R14: the one read came back short of what it asked, so none followed it to find EAGAIN.
  CHECK(told.find("the server read 85 bytes in 1 read, and") != std::string::npos);
  // The base holds: it has no story.
  CHECK(arm_of("/scenarios/pipelined-large-answer.toml", "base").story.empty());
}

TEST_CASE("story: each choice off the natural path is told with what came of it") {
  sim::Trace trace;
  trace.groups = {"c"};
  trace.group_sizes = {2};
  trace.clients = {{0, 0, 1}, {0, 1, 1}};
  trace.add(sim::ev::Choice{Instant{Duration(5'000'000)}, std::uint8_t(model::ChoiceKind::land), 3, 2});
  trace.add(sim::ev::Connect{Instant{Duration(5'000'000)}, 1});
  trace.add(sim::ev::Choice{Instant{Duration(6'000'000)}, std::uint8_t(model::ChoiceKind::order), 2, 0});
  trace.add(sim::ev::Accept{Instant{Duration(7'000'000)}, 0, Door::listener, 6, 1});
  trace.add(sim::ev::Read{Instant{Duration(7'000'000)}, 1, 512, 512});
  trace.add(sim::ev::Read{Instant{Duration(7'000'000)}, 1, 512, -EAGAIN});
  trace.add(sim::ev::Wrote{Instant{Duration(7'000'000)}, 1, 70000, 16384});
  trace.add(sim::ev::Left{Instant{Duration(9'000'000)}, 1, 100, 53616});
  const std::string told = joined(checker::story(trace, {}));
  INFO(told);
  CHECK(told.find("1 choice took another than the natural option:\nat 5.000 ms, land 2 of 3: a windowed happening "
                  "was placed here, not at its natural moment; next, c#1 connected.") != std::string::npos);
  CHECK(told.find("wrote 16384 bytes in 1 write (1 short)") != std::string::npos);
  CHECK(told.find("100 bytes it sent were never read; 53616 bytes the server wrote never reached it") != std::string::npos);
  CHECK(told.find("c#0: never connected; 0 of 0 answered; 1 request it meant to send never went out.") != std::string::npos);
  // A connection queued and then reset is told as both, with what it lost.
  trace.add(sim::ev::Established{Instant{Duration(1)}, 0});
  trace.add(sim::ev::Send{Instant{Duration(1)}, 0, "/q"});
  trace.add(sim::ev::Refused{Instant{Duration(8'000'000)}, 0, ECONNRESET});
  CHECK(joined(checker::story(trace, {})).find("c#0: its handshake completed, and the server never accepted it; then it "
                                                "was reset (ECONNRESET at 8.000 ms); 0 of 1 answered (never answered: \"/q\")") !=
        std::string::npos);
  CHECK(told.find("Why it fails") == std::string::npos);  // no verdict was given
  const std::string drawn = joined(checker::story(trace, {}, false));
  CHECK(drawn.find("1 choice drawn from the seed took another than the natural option") != std::string::npos);
  CHECK(drawn.find("land 2 of 3") == std::string::npos);
}

TEST_CASE("decision graph: each choice off the natural path a red node, natural ones folded, edges say what happened") {
  sim::Trace trace;
  trace.groups = {"c"};
  trace.group_sizes = {1};
  trace.clients = {{0, 0, 1}};
  trace.add(sim::ev::Choice{Instant{Duration(1'000'000)}, std::uint8_t(model::ChoiceKind::order), 2, 0});
  trace.add(sim::ev::Choice{Instant{Duration(2'000'000)}, std::uint8_t(model::ChoiceKind::order), 2, 0});
  trace.add(sim::ev::Connect{Instant{Duration(2'000'000)}, 0});
  trace.add(sim::ev::Choice{Instant{Duration(5'000'000)}, std::uint8_t(model::ChoiceKind::land), 3, 2});
  trace.add(sim::ev::Send{Instant{Duration(5'000'000)}, 0, "/q"});
  trace.add(sim::ev::Accept{Instant{Duration(7'000'000)}, 0, Door::listener, 6, 0});
  trace.add(sim::ev::Read{Instant{Duration(7'000'000)}, 0, 512, 34});
  trace.add(sim::ev::Wrote{Instant{Duration(7'000'000)}, 0, 100, 60});
  trace.add(sim::ev::Lasso{Instant{Duration(9'000'000)}, Instant{Duration(6'000'000)}, 1, false});
  checker::Verdict bad;
  bad.property = "answered";
  bad.held = false;
  bad.detail = "1 request(s) never answered";
  const std::string dot = checker::decision_graph(trace, {bad});
  INFO(dot);
  CHECK(dot.find("d0 [label=\"the run begins at 0 ms\\n\"];") != std::string::npos);
  CHECK(dot.find("2 choices took the natural option\\nfrom 1.000 ms to 2.000 ms") != std::string::npos);
  CHECK(dot.find("d0 -> d1;") != std::string::npos);  // nothing happened before the first choice
  CHECK(dot.find("d1 -> d2 [label=\"1 connect\"];") != std::string::npos);  // after the natural ones
  CHECK(dot.find("at 5.000 ms: land 2 of 3") != std::string::npos);
  CHECK(dot.find(R"(next: c sent \"/q\")") != std::string::npos);  // quotes escaped for dot
  CHECK(dot.find("1 accept\\nread 34 bytes in 1 read\\nwrote 60 bytes in 1 write (1 short)") != std::string::npos);
  CHECK(dot.find("shape=doubleoctagon, color=red") != std::string::npos);
  CHECK(dot.find("answered: 1 request(s) never answered") != std::string::npos);
  // The cycle, from the end back to the last decision made by 6 ms: the land at 5 ms.
  CHECK(dot.find("d3 -> d2 [label=\"back to the state at 6.000 ms") != std::string::npos);
  // With every property held, the end says so, and is not red.
  CHECK(checker::decision_graph(trace, {}).find("every property held") != std::string::npos);
}

TEST_CASE("story: connections alike but for when they were accepted are one line, with the span") {
  checker::ArmReport arm = arm_of("/scenarios/handle-ceiling.toml", "fixed-refuse");
  const std::string told = joined(arm.story);
  INFO(told);
  CHECK(told.find("7952 of idle (idle#2048, idle#2049, ...), each: accepted between 204.800 ms and 999.900 ms; the "
                  "server read 0 bytes in 0 reads, and wrote 0 bytes in 0 writes; its connection was reset (ECONNRESET); "
                  "0 of 0 answered.") != std::string::npos);
  CHECK(told.find("2048 of idle (idle#0, idle#1, ...), each: accepted between 0.000 ms and 204.700 ms") != std::string::npos);
}

TEST_CASE("story: a trace kept to its verdicts says it has no bytes") {
  checker::ArmReport arm = arm_of("/scenarios/accept-burst.toml", "nothing-owed", true);
  CHECK(joined(arm.story).find("it has no bytes") != std::string::npos);
}

TEST_CASE("the trace's bytes: every read and write on a connection, and what is left at the end") {
  sim::Scenario scenario = sim::load_scenario(std::string(LOOPSIM_SOURCE_DIR) + "/scenarios/accept-burst.toml");
  sim::Trace trace = sim::run(scenario).trace;
  std::int64_t read = 0, requests_read = 0, sends = 0;
  for (const auto& e : trace.events) {
    if (const auto* r = std::get_if<sim::ev::Read>(&e); r != nullptr && r->result > 0) read += r->result, ++requests_read;
    if (std::holds_alternative<sim::ev::Send>(e)) ++sends;
    CHECK(!std::holds_alternative<sim::ev::Left>(e));  // the base answers everything
  }
  CHECK(sends == 122);
  CHECK(requests_read == 122);  // each request in one read
  CHECK(read > 122 * 30);
  // With the strand, what was never read is left, client by client.
  checker::ArmReport arm = arm_of("/scenarios/accept-burst.toml", "nothing-owed");
  CHECK(joined(arm.story).find("; 62 bytes it sent were never read.") != std::string::npos);
  CHECK(joined(arm.story).find("The server read 2022 bytes in 34 reads and wrote 2885 bytes in 33 writes.") != std::string::npos);
}
