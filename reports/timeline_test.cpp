// The pass timeline: what it draws for accept-burst, that every format comes out whole, and that
// folding keeps a run of 20,000 passes under the node cap.
#include "reports/timeline.hpp"

#include <cgraph.h>

#include <catch2/catch.hpp>

#include "reports/passes.hpp"
#include "reports/xml_check_for_tests.hpp"
#include "scenario/scenario.hpp"
#include "sim/world.hpp"
#include "target/run.hpp"

namespace {

using namespace loopsim;
using namespace std::chrono_literals;

sim::Trace accept_burst_trace(const std::string& batch = "") {
  std::vector<sim::Override> set;
  if (!batch.empty()) set.push_back({"loop.accept_batch", batch});
  return sim::run(sim::load_scenario(LOOPSIM_SOURCE_DIR "/scenarios/accept-burst.toml", set)).trace;
}

std::size_t folded_rows(const sim::Trace& trace) {
  return reports::fold_rows(trace, reports::view_passes(trace), reports::FoldOptions{}).size();
}

// The DOT text parsed back by libcgraph: its node names.
std::vector<std::string> dot_nodes(const std::string& dot) {
  std::vector<std::string> names;
  Agraph_t* graph = agmemread(dot.c_str());
  if (!graph) return names;
  for (Agnode_t* n = agfstnode(graph); n; n = agnxtnode(graph, n)) names.push_back(agnameof(n));
  agclose(graph);
  return names;
}

// A long run with passes that differ from their neighbours, so that folding alike runs alone
// is not enough: idle waits, batches of 1 to 5 connections, owed full batches, and a /fast
// request answered every 40 passes (pinned rows) from a client group of one.
sim::Trace long_run(int passes) {
  sim::Trace t;
  t.scenario = "long-run";
  t.arm = "base";
  t.listener_fd = 5;
  t.accept_batch = 16;
  t.groups = {"flood", "fast"};
  t.group_sizes = {passes, 1};
  for (int i = 0; i < passes; ++i) t.clients.push_back({0, i, 1});
  const sim::ClientIndex fast = passes;
  t.clients.push_back({1, 0, passes / 40});
  for (int i = 0; i < passes; ++i) {
    Duration at = Duration(std::int64_t(i) * 1'000'000);
    bool idle = i % 3 == 0;
    bool owed = i % 3 == 1;
    t.events.push_back(sim::ev::PassBegin{Instant{at}, 0, std::uint64_t(i + 1), owed ? 0ns : Duration(1s)});
    t.events.push_back(sim::ev::Events{Instant{at}, 0, std::uint64_t(i + 1), idle ? std::vector<int>{} : std::vector<int>{5}});
    if (!idle) {
      sim::ClientIndex c = i;
      t.events.push_back(sim::ev::Send{Instant{at}, c, "/slow?ms=1"});
      t.events.push_back(sim::ev::Accept{Instant{at}, 0, Door::listener, 7, c});
      t.events.push_back(sim::ev::RequestBegin{Instant{at}, 0, 7, c, "/slow?ms=1"});
      t.events.push_back(sim::ev::RequestEnd{Instant{at}, 0, 7, c, 200});
      t.events.push_back(sim::ev::Answer{Instant{at}, c, "/slow?ms=1", 200});
      int accepted = owed ? 16 : 1 + i % 5;
      t.events.push_back(sim::ev::BatchEnd{Instant{at}, 0, Door::listener, accepted, owed ? BatchStop::count : BatchStop::again, owed});
    }
    if (i % 40 == 39) {
      t.events.push_back(sim::ev::Send{Instant{at}, fast, "/fast"});
      t.events.push_back(sim::ev::RequestBegin{Instant{at}, 0, 6, fast, "/fast"});
      t.events.push_back(sim::ev::RequestEnd{Instant{at}, 0, 6, fast, 200});
      t.events.push_back(sim::ev::Answer{Instant{at}, fast, "/fast", 200});
    }
    t.events.push_back(sim::ev::PassEnd{Instant{at}, 0, std::uint64_t(i + 1), owed, false});
  }
  t.events.push_back(sim::ev::RunEnd{Instant{Duration(std::int64_t(passes) * 1'000'000)}, 0, 0, 0, 0});
  return t;
}

}  // namespace

TEST_CASE("accept-burst's timeline folds the idle tail and the owed run, and keeps the story apart") {
  sim::Trace trace = accept_burst_trace();
  reports::PassView view = reports::view_passes(trace);
  auto rows = reports::fold_rows(trace, view, {});
  REQUIRE(view.passes.size() == 28);
  // pass 1, pass 2 (the blocker), pass 3 (/fast), passes 4-8 (owed), pass 9, passes 10-27, pass 28.
  REQUIRE(rows.size() == 7);
  CHECK(rows[1].passes.size() == 1);
  CHECK(rows[1].pinned);
  CHECK(rows[2].pinned);
  CHECK(rows[3].passes.size() == 5);
  CHECK(rows[5].passes.size() == 18);
  CHECK(rows[5].alike);
}

TEST_CASE("the accept-burst SVG is well-formed XML with one node per row, the title and the key") {
  sim::Trace trace = accept_burst_trace();
  std::string svg = reports::render_timeline(trace, reports::PictureFormat::svg);
  testing::XmlCheck xml = testing::check_xml(svg);
  INFO(xml.error);
  REQUIRE(xml.ok());
  std::size_t nodes = 0;
  for (const auto& e : xml.elements) nodes += e.name == "g" && e.attributes.count("class") && e.attributes.at("class") == "node";
  std::size_t rows = folded_rows(trace);
  CHECK(nodes == rows + 2);
  CHECK(rows >= 5);
  CHECK(rows <= 12);
  CHECK(svg.find("blocker /slow?ms=600") != std::string::npos);
  CHECK(svg.find("fast /fast at 760 ms") != std::string::npos);
}

TEST_CASE("the timeline PNG starts with the PNG signature") {
  std::string png = reports::render_timeline(accept_burst_trace(), reports::PictureFormat::png);
  REQUIRE(png.size() > 8);
  CHECK(png.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0);
}

TEST_CASE("the timeline DOT parses back with libcgraph and holds every row") {
  sim::Trace trace = accept_burst_trace();
  auto names = dot_nodes(reports::render_timeline(trace, reports::PictureFormat::dot));
  std::size_t rows = folded_rows(trace);
  CHECK(names.size() == rows + 2);
  for (std::size_t r = 0; r < rows; ++r) {
    CHECK(std::count(names.begin(), names.end(), "row" + std::to_string(r)) == 1);
  }
}

TEST_CASE("the unbounded drain draws one pass that accepts all 121 and answers /fast after it") {
  sim::Trace trace = accept_burst_trace("0");
  std::string svg = reports::render_timeline(trace, reports::PictureFormat::svg);
  CHECK(svg.find("accepted 121 on listener") != std::string::npos);
  CHECK(svg.find("fast /fast at 1810 ms") != std::string::npos);
}

TEST_CASE("20,000 passes fold into a DOT under the node cap, the pinned /fast rows merged last") {
  sim::Trace trace = long_run(20000);
  reports::PassView view = reports::view_passes(trace);
  REQUIRE(view.passes.size() == 20000);
  auto rows = reports::fold_rows(trace, view, {});
  CHECK(rows.size() <= 180);
  std::size_t covered = 0;
  for (const auto& row : rows) covered += row.passes.size();
  CHECK(covered == 20000);
  auto names = dot_nodes(reports::render_timeline(trace, reports::PictureFormat::dot));
  CHECK(names.size() == rows.size() + 2);
  CHECK(names.size() <= 200);
}

TEST_CASE("a smaller row budget folds harder and still covers every pass in order") {
  sim::Trace trace = long_run(3000);
  reports::PassView view = reports::view_passes(trace);
  for (std::size_t budget : {1, 2, 10, 50}) {
    auto rows = reports::fold_rows(trace, view, {budget, 3});
    CHECK(rows.size() <= budget);
    std::size_t next = 0;
    for (const auto& row : rows) {
      for (std::size_t p : row.passes) CHECK(p == next++);
    }
    CHECK(next == 3000);
  }
}

TEST_CASE("a trace with no passes still renders: the title and the key") {
  sim::Trace trace;
  trace.scenario = "empty";
  trace.arm = "base";
  auto names = dot_nodes(reports::render_timeline(trace, reports::PictureFormat::dot));
  CHECK(names.size() == 2);
}

TEST_CASE("each worker's passes fold apart, in a column of their own") {
  sim::Trace trace = long_run(30);
  sim::Trace second = long_run(30);
  std::deque<sim::TraceEvent> both;
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    both.push_back(trace.events[i]);
    std::visit(
        [&](auto e) {
          if constexpr (requires { e.worker; }) {
            e.worker = 1;
            both.push_back(e);
          }
        },
        second.events[i]);
  }
  trace.events = std::move(both);
  reports::PassView view = reports::view_passes(trace);
  CHECK(view.workers == 2);
  auto rows = reports::fold_rows(trace, view, {});
  REQUIRE(rows.size() >= 2);
  CHECK(rows.front().worker == 0);
  CHECK(rows.back().worker == 1);
  Agraph_t* graph = agmemread(reports::render_timeline(trace, reports::PictureFormat::dot).c_str());
  REQUIRE(graph != nullptr);
  std::vector<std::string> clusters;
  for (Agraph_t* sub = agfstsubg(graph); sub; sub = agnxtsubg(sub)) clusters.push_back(agnameof(sub));
  agclose(graph);
  CHECK(std::count(clusters.begin(), clusters.end(), "cluster_worker0") == 1);
  CHECK(std::count(clusters.begin(), clusters.end(), "cluster_worker1") == 1);
}

TEST_CASE("a choice off the natural path marks its row and the title, and one on it marks nothing") {
  sim::Trace trace = long_run(6);
  auto natural = trace;
  trace.events.insert(trace.events.begin() + 1, sim::ev::Choice{Instant{Duration(0)}, 0, 2, 1});
  natural.events.insert(natural.events.begin() + 1, sim::ev::Choice{Instant{Duration(0)}, 0, 2, 0});
  std::string svg = reports::render_timeline(trace, reports::PictureFormat::svg);
  CHECK(svg.find("choices off the natural path: 1") != std::string::npos);
  CHECK(svg.find("1 choice took another than the natural option (rows marked)") != std::string::npos);
  CHECK(reports::render_timeline(natural, reports::PictureFormat::svg).find("natural") == std::string::npos);
}
