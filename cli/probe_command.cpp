// loopsim probe FILE --live ADDR:PORT|self: the scenario simulated, and its clients run against a
// live server on loopback; the same client-side properties judge both, side by side.

#include <arpa/inet.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <optional>
#include <variant>
#include <sstream>

#include "checker/suite.hpp"
#include "cli/commands.hpp"
#include "probe/figures.hpp"
#include "probe/live_clients.hpp"
#include "probe/self_server.hpp"

namespace loopsim::cli {

namespace {

constexpr double agree_within = 0.10;  // live and simulated figures within 10 % agree
constexpr Duration agree_floor = std::chrono::milliseconds(1);

struct ProbeArgs {
  std::string file;
  std::string live;
  std::string time_limit = "60s";
  std::string trace;
  std::vector<std::string> set;
  std::optional<std::uint64_t> seed;
};

constexpr const char* live_hint = "--live 127.0.0.1:8080 (a server on loopback), or --live self (loopsim live --config FILE)";

// --live ADDR:PORT: an IPv4 loopback address and a port.
void parse_live(const std::string& live, probe::LiveOptions& options) {
  const auto colon = live.rfind(':');
  const std::string address = colon == std::string::npos ? live : live.substr(0, colon);
  const std::string port = colon == std::string::npos ? "" : live.substr(colon + 1);
  in_addr parsed{};
  if (colon == std::string::npos || ::inet_pton(AF_INET, address.c_str(), &parsed) != 1)
    throw sim::ScenarioError("--live:1:1: \"" + live + "\" is not ADDR:PORT or self", live_hint);
  if (address.rfind("127.", 0) != 0)
    throw sim::ScenarioError("--live:1:1: " + address + " is not a loopback address: the probe drives servers on 127.0.0.0/8 only", live_hint);
  const bool digits = !port.empty() && port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || std::stoi(port) == 0 || std::stoi(port) > 65535)
    throw sim::ScenarioError("--live:1:" + std::to_string(colon + 2) + ": \"" + port + "\" is not a port", live_hint);
  options.address = address;
  options.port = std::uint16_t(std::stoi(port));
}

std::string time_text(Duration t) {
  if (t < Duration{0}) return "never";
  std::ostringstream out;
  out << std::fixed << std::setprecision(t < std::chrono::milliseconds(10) ? 2 : 1) << double(t.count()) / 1e6 << " ms";
  return out.str();
}

std::string time_text(std::optional<Duration> t) { return t ? time_text(*t) : "never"; }
// An instant as time_text writes its time since the start; none: "never".
std::string time_text(std::optional<Instant> t) { return t ? time_text(since_start(*t)) : "never"; }
// The same as nanoseconds for ratio_text and agrees, which read -1 as never.
std::int64_t ns_or_never(std::optional<Instant> t) { return t ? since_start(*t).count() : -1; }

std::string ratio_text(std::int64_t simulated, std::int64_t live) {
  auto r = probe::ratio(simulated, live);
  if (!r) return "-";
  std::ostringstream out;
  out << std::fixed << std::setprecision(2) << *r;
  return out.str();
}

// Within 10 %; times also within a millisecond, where 10 % of almost nothing means nothing
// (an answer at 0 ms simulated comes 0.1 ms later over a real socket).
bool agrees(std::int64_t simulated, std::int64_t live, bool time) {
  if (time && simulated >= 0 && live >= 0 && std::abs(live - simulated) <= agree_floor.count()) return true;
  auto r = probe::ratio(simulated, live);
  return r && std::abs(*r - 1.0) <= agree_within;
}

std::string measured_text(const checker::Verdict& v) {
  if (v.unit == checker::Unit::ns) return time_text(Duration(v.measured));
  return std::to_string(v.measured);
}

// The groups whose first request the simulation delivers with the handshake, before the loop
// can accept: live, the loop may accept first and find nothing to read yet.
std::vector<std::string> sent_with_handshake(const sim::Scenario& scenario) {
  std::vector<std::string> out;
  for (const sim::ClientGroup& g : scenario.clients) {
    bool at_connect = g.closed_loop() || (!g.requests.empty() && g.requests.front().at.lo <= g.connect_at.hi);
    if (at_connect && !g.send_after_connect) out.push_back(g.name);
  }
  return out;
}

const char* end_text(probe::LiveRun::End end) {
  switch (end) {
    case probe::LiveRun::End::horizon: return "the horizon came";
    case probe::LiveRun::End::quiet: return "nothing was left to happen";
    case probe::LiveRun::End::time_limit: return "--time-limit cut it short";
  }
  return "";
}

int probe_scenario(const ProbeArgs& args) {
  sim::Scenario scenario;
  probe::LiveOptions options;
  std::vector<sim::Override> overrides;
  checker::SuiteResult simulated;
  try {
    overrides = parse_overrides(args.set);
    scenario = sim::load_scenario(args.file, overrides);
    if (args.seed) scenario.seed = *args.seed;  // the live clients' draws, and the simulation's
    options.time_limit = option_duration("--time-limit", args.time_limit);
    if (args.live != "self") parse_live(args.live, options);
    if (!args.trace.empty()) check_output("--trace", args.trace, {args.file});
    checker::SuiteOptions suite;
    suite.overrides = overrides;
    suite.only_arm = "base";
    suite.seed = args.seed;
    simulated = checker::run_suite(args.file, suite);
  } catch (const sim::ScenarioError& e) {
    return report_error(e);
  }
  probe::SelfServer server;
  std::string server_text = "a server of its own";
  if (args.live == "self") {
    try {
      options.port = server.start(args.file, args.set);
    } catch (const sim::ScenarioError& e) {
      return report_error(e);
    }
    server_text = "loopsim live --config " + args.file;
  }
  std::cerr << "probe: simulated; now live against " << options.address << ":" << options.port << " for at most "
            << time_text(std::min(since_start(scenario.horizon), options.time_limit)) << "\n";
  const probe::LiveRun live = probe::drive_live(scenario, options);
  const int server_status = args.live == "self" ? server.stop() : 0;
  if (!live.error.empty()) {
    std::cerr << "error: " << args.file << ":1:1: " << live.error << "\n";
    return live.error.rfind("limit:", 0) == 0 ? exit_bound_reached : exit_bad_input;
  }
  if (!args.trace.empty()) {
    try {
      write_output_file("--trace", args.trace, [&](std::ostream& out) { sim::write_jsonl(live.trace, out); }, {args.file});
    } catch (const sim::ScenarioError& e) {
      return report_error(e);
    }
  }

  const sim::Trace& sim_trace = simulated.traces.at(0);
  checker::Costs costs = checker::costs_for(scenario.source.empty() ? "" : scenario.source, args.file);
  costs.request = checker::request_cost(sim_trace);
  std::vector<sim::Expectation> judged;
  std::vector<std::string> server_side;
  for (const sim::Expectation& e : scenario.expect) {
    if (probe::judged_from_clients(e.property)) {
      judged.push_back(e);
    } else {
      server_side.push_back(e.property);
    }
  }
  const auto sim_verdicts = checker::evaluate(sim_trace, judged, costs);
  const auto live_verdicts = checker::evaluate(live.trace, judged, costs);

  std::ostream& out = std::cout;
  out << "probe " << scenario.name << " (" << args.file << "), seed " << scenario.seed << "\n";
  out << "live: " << options.address << ":" << options.port << ", " << server_text << "; ran "
      << time_text(live.ran) << ": " << end_text(live.end) << "\n";
  for (const std::string& part : live.not_applied) out << "live: not applied: " << part << "\n";
  if (live.unframed > 0)
    out << "live: " << live.unframed << " connection(s) closed by the probe: an answer it could not frame "
        << "(no \"HTTP/1.x NNN\" status line, a Content-Length that is not one number, or a head over 64 KiB)\n";
  // Connections the server refused, or that found nothing listening: said as such, not only as
  // requests never answered.
  std::int64_t refused = 0, answers_before = 0;
  std::optional<Instant> first_refused;
  for (const sim::TraceEvent& event : live.trace.events) {
    if (std::holds_alternative<sim::ev::Answer>(event) && !first_refused) ++answers_before;
    const auto* r = std::get_if<sim::ev::Refused>(&event);
    if (r == nullptr || r->error != ECONNREFUSED) continue;
    ++refused;
    if (!first_refused) first_refused = r->t;
  }
  if (refused > 0) {
    out << "live: " << refused << " connection(s) refused (ECONNREFUSED): nothing listened on " << options.address << ":"
        << options.port;
    if (answers_before > 0)
      out << " from " << time_text(since_start(*first_refused)) << ", after " << answers_before << " answer(s): the server had stopped listening (it died, or closed its listener)";
    else
      out << ": the server was not running there, or had not listened yet";
    out << "\n";
  }
  if (args.live == "self" && server_status != 0)
    out << "live: the server exited " << server_status << " after SIGTERM (0 is a clean drain)\n";
  out << "\n";

  out << std::left << std::setw(12) << "group" << std::setw(18) << "answers sim/live" << std::setw(11) << "p50 sim"
      << std::setw(11) << "p50 live" << std::setw(11) << "p99 sim" << std::setw(11) << "p99 live" << std::setw(12)
      << "last sim" << std::setw(12) << "last live" << "last live/sim\n";
  std::vector<std::string> differ;
  for (const std::string& group : sim_trace.groups) {
    const auto s = probe::group_figures(sim_trace, group), l = probe::group_figures(live.trace, group);
    out << std::setw(12) << group << std::setw(18) << (std::to_string(s.answered) + "/" + std::to_string(l.answered))
        << std::setw(11) << time_text(s.p50) << std::setw(11) << time_text(l.p50) << std::setw(11) << time_text(s.p99)
        << std::setw(11) << time_text(l.p99) << std::setw(12) << time_text(s.last_answer) << std::setw(12)
        << time_text(l.last_answer) << ratio_text(ns_or_never(s.last_answer), ns_or_never(l.last_answer)) << "\n";
    if (!agrees(s.answered, l.answered, false)) differ.push_back("the answers of " + group);
    if (!agrees(ns_or_never(s.last_answer), ns_or_never(l.last_answer), true)) differ.push_back("the last answer of " + group);
  }
  out << "\n"
      << std::setw(21) << "property" << std::setw(20) << "of" << std::setw(12) << "simulated" << std::setw(12) << "live"
      << std::setw(10) << "live/sim" << std::setw(10) << "sim" << "live\n";
  bool live_held = true;
  for (std::size_t i = 0; i < judged.size(); ++i) {
    const checker::Verdict &s = sim_verdicts[i], &l = live_verdicts[i];
    live_held = live_held && l.held;
    std::string of = judged[i].of + (judged[i].after.empty() ? "" : " after " + judged[i].after);
    out << std::setw(21) << s.property << std::setw(20) << of << std::setw(12) << measured_text(s) << std::setw(12)
        << measured_text(l) << std::setw(10) << ratio_text(s.measured, l.measured) << std::setw(10)
        << (!s.decided ? "undecided" : s.held ? "held" : "VIOLATED") << (l.held ? "held" : "VIOLATED") << "\n";
    if (!agrees(s.measured, l.measured, s.unit == checker::Unit::ns)) differ.push_back(s.property + (of.empty() ? "" : " of " + of));
    if (!l.held && !l.detail.empty()) out << "  live: " << l.detail << "\n";
    if (!s.decided) out << "  simulated: " << s.detail << "\n";
  }
  if (!server_side.empty()) {
    out << "not judged live (the server's side shows them, not its clients'):";
    for (const std::string& p : server_side) out << " " << p;
    out << "\n";
  }
  if (!differ.empty()) {
    out << "\nbeyond 10 % apart (and, for times, 1 ms):";
    for (std::size_t i = 0; i < differ.size(); ++i) out << (i ? ", " : " ") << differ[i];
    out << "\n";
    out << "  where the two may part:\n"
           "  - live times carry the machine's own delays (a sleep's overshoot, scheduling), which the\n"
           "    simulation leaves out unless kernel.timer_slack adds them;\n";    out << "  - the send buffer: the simulation's holds kernel.send_buffer (16 KiB unless set) and, with\n"
           "    kernel.send_buffer_max, grows as Linux's autotuning does; live, the machine's tcp_wmem decides\n"
           "    how much one write takes;\n";
    if (!scenario.choices.empty()) {
      out << "  - this file pins choices (choices = [...], a counterexample's): the simulation replays them,\n"
             "    and the live run cannot, its landings and orders are the machine's;\n";
    }
    const auto raced = sent_with_handshake(scenario);
    if (!raced.empty()) {
      out << "  - a choice the simulation makes one way: the first request of";
      for (const std::string& g : raced) out << " " << g;
      out << "\n    reaches the server with its handshake, before the loop can accept it; live, the loop may\n"
             "    accept first and find nothing to read yet. send_after_connect = \"0s\" on a group makes\n"
             "    that order a choice point, which loopsim explore tries both ways (scenarios/README.md).\n";
    }
  }
  return live_held ? exit_held : exit_violated;
}

}  // namespace

void add_probe(CLI::App& app, int& status) {
  auto args = std::make_shared<ProbeArgs>();
  auto* cmd = app.add_subcommand("probe", "Run a scenario simulated and live against a server on loopback, and compare");
  cmd->add_option("file", args->file, "Scenario file (TOML)")->required()->check(non_empty);
  cmd->add_option("--live", args->live,
                  "ADDR:PORT of a live server on loopback, or self: loopsim live --config FILE on a free port")
      ->required()
      ->check(non_empty);
  cmd->add_option("--time-limit", args->time_limit, "Wall time the live run may take at most (and never past the horizon)")
      ->capture_default_str()
      ->check(non_empty);
  cmd->add_option("--trace", args->trace, "Write the live run's trace here (JSON Lines, the simulation's schema)");
  cmd->add_option("--set", args->set, "Override a key, as for run (and for the self server)");
  cmd->add_option("--seed", args->seed, "Seed for both runs' draws (arrivals, windows, paths), instead of the file's")
      ->check(whole_number(0));
  cmd->footer(
      "The scenario's clients (their times, closed loops, paths, bytes and bodies, and reset faults) run on\n"
      "real sockets; answered, latency and max_gap judge both runs, and the table puts each figure beside\n"
      "the simulated one with their ratio. The server's own side (its passes, queue, descriptors) is not\n"
      "seen from its clients, so those properties are listed, not judged. Answers are framed by each\n"
      "group's framing (HTTP by Content-Length or chunks, a terminator, a length, RESP); one that cannot\n"
      "be framed ends its connection, and is counted. No body is kept.\n"
      "At most 20,000 clients. Exit status: 0 every judged property held live, 1 one was violated live,\n"
      "2 bad input (or the server did not start), 3 a limit (too many clients, or descriptors).");
  cmd->callback([args, &status] { status = probe_scenario(*args); });
}

}  // namespace loopsim::cli
