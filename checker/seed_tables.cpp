#include "checker/seed_tables.hpp"

#include <cstdio>
#include <map>
#include <optional>
#include <ostream>
#include <vector>

#include "checker/suite.hpp"

namespace loopsim::checker {

namespace {

// How loopsim's figure is read from one arm's run.
enum class Read : std::uint8_t {
  measured_ms,     // the named property's measured figure, in ms
  answered_group,  // answers to the named group (the property field names the group)
  measured_count,  // the named property's measured figure, a count
};

struct Row {
  std::string what;          // the row, as the note words it
  std::string seed;          // the note's figure, quoted
  std::string scenario;      // file in the scenario directory
  std::string arm;
  std::vector<sim::Override> set;
  Read read;
  std::string property;      // or group, for answered_group
  std::string note;          // why loopsim's figure differs, when it does
};

struct Table {
  std::string title;
  std::string source;  // the seed note
  std::vector<Row> rows;
};

const char* no_noise =
    "the simulation has no runner noise: a request costs exactly its nominal time (the note "
    "measured 10.6-10.7 ms for a 10 ms request)";

std::vector<Table> tables() {
  return {
      {"The accept batch: what /fast waits beyond the blocker's answer (5 ms requests)",
       "seeds/accept-batch.md",
       {{"the whole burst before /fast (the old drain)", "120 x 5 ms = 600 ms", "accept-burst-5ms.toml",
         "unbounded-drain", {}, Read::measured_ms, "latency", ""},
        {"batches, taken at the listen event's position", "(row not given in the note's text)",
         "accept-burst-5ms.toml", "batch-at-listen-event", {}, Read::measured_ms, "latency",
         "the listen event comes ahead of /fast in one pass here: 15 + 16 requests"},
        {"batches after the pass's events (the rule)", "79 ms (15 x 5 ms)", "accept-burst-5ms.toml",
         "base", {}, Read::measured_ms, "latency", no_noise},
        {"M0_ACCEPT_BATCH=0 (the knob restores the drain)", "reproduces the first row",
         "accept-burst-5ms.toml", "unbounded-drain", {}, Read::measured_ms, "latency", ""}}},
      {"The accept batch: the gate with 10 ms requests", "seeds/accept-batch.md",
       {{"/fast after the blocker's answer", "153-154 ms", "accept-burst.toml", "base", {},
         Read::measured_ms, "latency", no_noise},
        {"widest gap between two burst answers", "11 ms", "accept-burst.toml", "base", {},
         Read::measured_ms, "max_gap", no_noise},
        {"no cap (batch 0): /fast after the blocker", "1225 ms", "accept-burst.toml",
         "unbounded-drain", {}, Read::measured_ms, "latency", no_noise},
        {"nothing owed: burst requests answered", "31 of 120", "accept-burst.toml", "nothing-owed",
         {}, Read::answered_group, "burst", ""},
        {"a wait that blocks while owed: widest gap", "1012 ms", "accept-burst.toml",
         "blocking-wait-while-owed", {}, Read::measured_ms, "max_gap",
         "one idle timeout (1 s) plus one request"},
        {"the batch at the listen event's position: /fast after the blocker", "480 ms",
         "accept-burst.toml", "batch-at-listen-event", {}, Read::measured_ms, "latency",
         "in the simulation the listen event leads /fast in one pass only; the live run's "
         "readiness order put it ahead in more passes"}}},
      {"The reactor drain chunk: post-to-callback latency, 512 x 80 us batch, post 200 us in",
       "seeds/reactor-drain-chunk.md",
       {{"legacy (no mid-batch drain), io_uring", "41.1-41.4 ms", "drain-chunk.toml", "chunk-0", {},
         Read::measured_ms, "post_latency", "the post waits for the rest of the batch: 512 x 80 us - 200 us"},
        {"CWIST_REACTOR_DRAIN_CHUNK=32", "2.32 ms", "drain-chunk.toml", "chunk-32", {},
         Read::measured_ms, "post_latency", ""},
        {"CWIST_REACTOR_DRAIN_CHUNK=8", "0.38 ms", "drain-chunk.toml", "base", {},
         Read::measured_ms, "post_latency",
         "the first drain point after the post is 8 callbacks x 80 us = 640 us into the batch; "
         "the note's handlers ran slightly under their nominal 80 us"},
        {"epoll backend, chunk 0", "41.7 ms", "drain-chunk.toml", "chunk-0", {}, Read::measured_ms,
         "post_latency", ""},
        {"epoll backend, chunk 8", "0.44-0.49 ms", "drain-chunk.toml", "base", {},
         Read::measured_ms, "post_latency", ""},
        {"kqueue flavour, chunk 8", "(same shape)", "drain-chunk.toml", "kqueue", {},
         Read::measured_ms, "post_latency", ""}}},
      {"The handle ceiling: idle keep-alive connections held, of 10,000", "seeds/handle-ceiling.md",
       {{"turnloop, 4,096 fixed handles", "2,048 (2,061 and 2,076 with connect batches of 64 and 512)",
         "handle-ceiling.toml", "fixed-refuse", {}, Read::measured_count, "capacity",
         "the live figure drifts above 2,048 with the connect batch size as refused sockets race; "
         "the simulation has no such race"},
        {"tokio (no fixed table)", "10,000", "handle-ceiling.toml", "grow", {}, Read::measured_count,
         "capacity", ""},
        {"a table sized from RLIMIT_NOFILE", "(the note's option)", "handle-ceiling.toml", "base", {},
         Read::measured_count, "capacity", ""},
        {"4,096 fixed handles with back-pressure instead of refusal", "(the note's option)",
         "handle-ceiling.toml", "fixed-backpressure", {}, Read::measured_count, "capacity", ""}}},
  };
}

std::string ms(std::int64_t ns) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f ms", double(ns) / 1e6);
  return buffer;
}

std::string figure(const Row& row, const ArmReport& arm, const sim::Trace& trace) {
  if (row.read == Read::answered_group) {
    std::int64_t n = 0, of = 0;
    for (const auto& event : trace.events) {
      if (auto* a = std::get_if<sim::ev::Answer>(&event); a && trace.group_of(a->client) == row.property) ++n;
    }
    for (std::size_t g = 0; g < trace.groups.size(); ++g) {
      if (trace.groups[g] == row.property) of = trace.group_sizes[g];
    }
    return std::to_string(n) + " of " + std::to_string(of);
  }
  for (const auto& v : arm.verdicts) {
    if (v.property != row.property) continue;
    return row.read == Read::measured_ms ? ms(v.measured) : std::to_string(v.measured);
  }
  throw sim::ScenarioError(trace.scenario + ":1:1: seed table row \"" + row.what + "\": arm " + row.arm +
                               " judges no " + row.property,
                           "the row reads a property the scenario expects; fix the row or the scenario");
}

std::string command(const Row& row) {
  std::string c = "loopsim run scenarios/" + row.scenario + " --arm " + row.arm;
  for (const auto& o : row.set) c += " --set " + o.key + "=" + o.value;
  return c;
}

}  // namespace

void write_seed_tables(const std::string& scenario_dir, std::ostream& out, const LiveFigure& live) {
  out << "# The seed notes' tables, regenerated in simulation\n\n"
      << "Written by `loopsim seeds" << (live ? " --live" : "") << " --out docs/seed-tables.md`. The seed column quotes the design\n"
      << "notes in `shared/seeds/`; every figure in the loopsim column comes from running the\n"
      << "scenario and arm beside it (seed 1). Rerun the command to check them.\n";
  if (live) {
    out << "\nThe loopsim live column is one run of the same scenario and arm: its clients on real\n"
        << "sockets against `loopsim live --config` with the arm's settings, on loopback, judged by the\n"
        << "same property (`loopsim probe`). It varies from run to run, as the notes' own figures did;\n"
        << "properties only the server's side shows (post_latency, capacity) are not measured live.\n"
        << "Live, the loop can accept a connection before its request's bytes arrive (some runs here\n"
        << "did, more of them on a loaded machine); the accept-burst rows then show /fast first, near\n"
        << "0 ms: the other branch of the choice `send_after_connect = \"0s\"` opens (docs/design-notes.md).\n";
  }
  std::map<std::string, SuiteResult> runs;  // one run of each scenario, all arms
  for (const Table& table : tables()) {
    out << "\n## " << table.title << "\n\nFrom `" << table.source << "`.\n\n"
        << (live ? "| row | seed | loopsim | loopsim live | command | why they differ |\n|---|---|---|---|---|---|\n"
                 : "| row | seed | loopsim | command | why they differ |\n|---|---|---|---|---|\n");
    for (const Row& row : table.rows) {
      std::string path = scenario_dir + "/" + row.scenario;
      if (!runs.count(path)) runs.emplace(path, run_suite(path, SuiteOptions{}));
      const auto& suite = runs.at(path);
      std::optional<std::string> value;
      for (std::size_t i = 0; i < suite.report.arms.size(); ++i) {
        const ArmReport& arm = suite.report.arms[i];
        if (arm.name != row.arm) continue;
        if (!arm.error.empty()) throw sim::ScenarioError(arm.error, arm.error_hint);
        value = figure(row, arm, suite.traces[i]);
      }
      if (!value) {
        throw sim::ScenarioError(path + ":1:1: seed table row \"" + row.what + "\" names the arm " + row.arm +
                                     ", which the scenario does not have",
                                 "the rows are in checker/seed_tables.cpp; name an arm under [[arms]], or base");
      }
      out << "| " << row.what << " | " << row.seed << " | " << *value << " | ";
      if (live) {
        out << live(LiveAsk{path, row.arm, row.property, row.read == Read::answered_group,
                            row.read == Read::measured_ms})
            << " | ";
      }
      out << "`" << command(row) << "` | " << row.note << " |\n";
    }
  }
}

}  // namespace loopsim::checker
