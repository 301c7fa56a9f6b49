// A drawn description as scenario TOML text, with the user's --set overrides written in.
#include <algorithm>
#include <sstream>
#include <toml++/toml.h>

#include "explore/generate.hpp"
#include "explore/toml_text.hpp"
#include "realloop/loop.hpp"
#include "scenario/scenario.hpp"

namespace loopsim::explore {

using Route = GenRequest::Route;
using Kind = GenFault::Kind;

// Rendering: a Description to TOML text.

namespace {

using Entries = std::vector<std::pair<std::string, std::string>>;  // key, value as TOML text


std::string route_path(const GenRequest& r) {
  switch (r.route) {
    case Route::fast: return "/fast";
    case Route::hello: return "/hello";
    case Route::slow_ms: return "/slow?ms=" + std::to_string(r.amount);
    case Route::slow_us: return "/slow?us=" + std::to_string(r.amount);
    case Route::bytes: return "/bytes?n=" + std::to_string(r.amount);
  }
  return "/fast";
}

bool stays(const GenGroup& g) { return (g.keep_alive && !g.wire.half_close) || g.requests.empty(); }

std::string group_name(const Description& d, std::size_t i) {
  return (stays(d.groups[i]) ? "stay" : "leave") + std::to_string(i + 1);
}

// The descriptors of the process before any connection, as own_descriptors counts them.
int drawn_own_descriptors(const Description& d) {
  LoopConfig loop;  // the drawn scenario's R10 knobs are the defaults
  const int loops = LoopLayout::of(loop, d.workers).loops;
  return 3 + 1 + 2 * loops + (d.pool ? 2 * d.pool_threads : 0) + (d.inverted ? loops : 0);
}

Entries kernel_entries(const Description& d) {
  Entries e;
  if (d.kqueue) e.emplace_back("poller", quoted("kqueue"));
  // Not with inverted workers: their outer pollers are opened as their threads start, and a
  // connection accepted at 0 ms may take the descriptor one needs (sim::World asserts on it).
  if (d.rlimit_room > 0 && !d.inverted) e.emplace_back("rlimit_nofile", std::to_string(drawn_own_descriptors(d) + d.rlimit_room));
  if (d.send_buffer > 0) e.emplace_back("send_buffer", std::to_string(d.send_buffer));
  if (d.receive_buffer > 0) e.emplace_back("receive_buffer", std::to_string(d.receive_buffer));
  return e;
}

Entries loop_entries(const Description& d) {
  Entries e;
  auto put = [&e](const char* key, int value, int plain) {
    if (value != plain) e.emplace_back(key, std::to_string(value));
  };
  const LoopConfig plain;
  if (d.pool) e.emplace_back("mode", quoted("pool"));
  if (d.pool) put("pool_threads", d.pool_threads, plain.pool_threads);
  put("workers", d.workers, 1);
  put("accept_batch", d.accept_batch, plain.accept_batch);
  put("yield_batch", d.yield_batch, plain.yield_batch);
  put("drain_chunk", d.drain_chunk, plain.drain_chunk);
  if (d.max_connections > 0) e.emplace_back("max_connections", std::to_string(d.max_connections));
  if (d.handles == Description::Handles::fixed) {
    e.emplace_back("handle_policy", quoted("fixed"));
    e.emplace_back("max_handles", std::to_string(d.max_handles));
  }
  if (d.handles == Description::Handles::grow) e.emplace_back("handle_policy", quoted("grow"));
  if (d.refuse) e.emplace_back("on_full", quoted("refuse"));
  if (d.max_events > 0) e.emplace_back("max_events", std::to_string(d.max_events));
  if (d.emfile_backoff_ms != 100) e.emplace_back("emfile_backoff", ms_text(d.emfile_backoff_ms));
  if (d.idle_timeout_ms != 1000) e.emplace_back("idle_timeout", ms_text(d.idle_timeout_ms));
  if (d.inverted) e.emplace_back("inverted", "true");
  return e;
}

// A --set value as TOML text: as written when it is one TOML value, else a string (as the
// scenario loader takes it).
std::string value_text(const std::string& value) {
  try {
    toml::table parsed = toml::parse("v = " + value);
    return value;
  } catch (const toml::parse_error&) {
    std::ostringstream out;
    out << toml::value<std::string>(value);
    return out.str();
  }
}

void apply(Entries& top, Entries& kernel, Entries& loop, Entries& target, const sim::Override& o) {
  Entries* table = &top;
  std::string key = o.key;
  if (key.rfind("kernel.", 0) == 0) table = &kernel, key = key.substr(7);
  if (key.rfind("loop.", 0) == 0) table = &loop, key = key.substr(5);
  if (key.rfind("target.", 0) == 0) table = &target, key = key.substr(7);
  std::string value = value_text(o.value);
  for (auto& [k, v] : *table) {
    if (k == key) {
      v = value;
      return;
    }
  }
  table->emplace_back(key, value);
}

void write_table(std::ostringstream& out, const char* name, const Entries& entries) {
  if (entries.empty()) return;
  out << "\n[" << name << "]\n";
  for (const auto& [k, v] : entries) out << k << " = " << v << '\n';
}

void write_groups(std::ostringstream& out, const Description& d) {
  for (std::size_t i = 0; i < d.groups.size(); ++i) {
    const GenGroup& g = d.groups[i];
    out << "\n[[clients]]\nname = " << quoted(group_name(d, i)) << '\n';
    if (g.count != 1) out << "count = " << g.count << '\n';
    if (g.connect_ms != 0) out << "connect_at = " << ms_text(g.connect_ms) << '\n';
    if (g.rate != 0) out << "rate = " << g.rate << '\n';
    if (g.keep_alive) out << "keep_alive = true\n";
    const GenWire& w = g.wire;
    if (w.poisson && g.rate != 0) out << "arrivals = \"poisson\"\n";
    if (w.rtt_ms != 0) out << "rtt = " << ms_text(w.rtt_ms) << '\n';
    if (w.jitter_ms != 0) out << "jitter = " << ms_text(w.jitter_ms) << '\n';
    if (w.half_close) out << "half_close = true\n";
    if (w.body != 0) out << "body = " << w.body << '\n';
    if (w.read_rate != 0) out << "read_rate = " << w.read_rate << '\n';
    out << "requests = [";
    for (std::size_t r = 0; r < g.requests.size(); ++r) {
      out << (r ? ", " : "") << "{ at = " << ms_text(g.requests[r].at_ms)
          << ", path = " << quoted(route_path(g.requests[r])) << " }";
    }
    out << "]\n";
  }
}

void write_faults(std::ostringstream& out, const Description& d) {
  for (const GenFault& f : d.faults) {
    out << "\n[[faults]]\n";
    switch (f.kind) {
      case Kind::accept_nth:
        out << "kind = \"accept_error\"\nnth = " << f.nth << "\nerrno = " << quoted(sim::errno_name(f.error)) << '\n';
        break;
      case Kind::accept_window:
        out << "kind = \"accept_error\"\nat = " << ms_text(f.at_ms) << "\nuntil = " << ms_text(f.until_ms)
            << "\nerrno = " << quoted(sim::errno_name(f.error)) << '\n';
        if (f.count > 0) out << "count = " << f.count << '\n';
        break;
      case Kind::rlimit:
        out << "kind = \"rlimit\"\nat = " << ms_text(f.at_ms)
            << "\nvalue = " << std::max(1, drawn_own_descriptors(d) + f.rlimit_delta) << '\n';
        break;
      case Kind::reset:
        out << "kind = \"reset\"\nat = " << ms_text(f.at_ms)
            << "\nof = " << quoted(group_name(d, std::size_t(f.group) % d.groups.size())) << '\n';
        if (f.count > 0) out << "count = " << f.count << '\n';
        break;
    }
  }
}

void write_posters(std::ostringstream& out, const Description& d) {
  for (std::size_t i = 0; i < d.posters.size(); ++i) {
    const GenPoster& p = d.posters[i];
    out << "\n[[posters]]\nname = \"poster" << i + 1 << "\"\nat = " << ms_text(p.at_ms)
        << "\ncost = " << quoted(std::to_string(p.cost_us) + "us") << '\n';
    if (p.count != 1) out << "count = " << p.count << "\nevery = " << ms_text(p.every_ms) << '\n';
    if (p.worker % d.workers != 0) out << "worker = " << p.worker % d.workers << '\n';
  }
  if (d.shutdown_ms) out << "\n[[actions]]\nkind = \"shutdown\"\nat = " << ms_text(*d.shutdown_ms) << '\n';
}

// What goes wrong for a target (GenTrouble), as the format writes it.
void write_trouble(std::ostringstream& out, const Description& d) {
  const GenTrouble& t = d.trouble;
  switch (t.kind) {
    case GenTrouble::Kind::none: return;
    case GenTrouble::Kind::reset:
      if (d.groups.empty()) return;
      out << "\n[[faults]]\nkind = \"reset\"\nat = " << ms_text(t.at_ms)
          << "\nof = " << quoted(group_name(d, std::size_t(t.group) % d.groups.size())) << '\n';
      return;
    case GenTrouble::Kind::accept_window:
      out << "\n[[faults]]\nkind = \"accept_error\"\nat = " << ms_text(t.at_ms) << "\nuntil = " << ms_text(t.at_ms + t.window_ms)
          << "\nerrno = " << quoted(sim::errno_name(t.error)) << "\ncount = " << t.count << '\n';
      return;
    case GenTrouble::Kind::sigterm:
      out << "\n[[actions]]\nkind = \"signal\"\nsignal = \"SIGTERM\"\nat = " << ms_text(t.at_ms) << '\n';
      return;
  }
}

// A group's pipelined burst (GenGroup::burst) put ahead of its requests: that many /fast
// requests, sent when the connection is made.
GenGroup with_burst(GenGroup g) {
  if (g.burst > 0) g.requests.insert(g.requests.begin(), std::size_t(g.burst), GenRequest{g.connect_ms, Route::fast, 0});
  return g;
}

// A target's workload: at most this many clients in all, well below any listen backlog a
// server asks for (libuv's examples 128, nginx 511), so that no SYN is dropped for want of one.
constexpr int target_clients_max = 100;
// A program may wait before it listens (asyncio's first wait comes 2 us before its listen), and
// a client that connects first is refused, as Linux refuses it: not the program's failure. A
// target's workload starts this much later.
constexpr int target_start_ms = 10;

bool for_target(const std::vector<sim::Override>& overrides) {
  return std::any_of(overrides.begin(), overrides.end(),
                     [](const sim::Override& o) { return o.key.rfind("target.", 0) == 0; });
}

// Everything but the expectations, with the overrides written in.
std::string body_text(const Description& d, const std::string& name, std::int64_t horizon_ms,
                      const std::vector<sim::Override>& overrides) {
  Entries top{{"name", quoted(name)},
              {"description", quoted("drawn by loopsim generate")},
              {"seed", std::to_string(d.seed)},
              {"horizon", ms_text(horizon_ms)}};
  Entries kernel = kernel_entries(d), loop = loop_entries(d), target;
  bool foreign = for_target(overrides);
  if (foreign) kernel.clear(), loop.clear();  // the kernel's defaults; the program is the loop
  for (const sim::Override& o : overrides) apply(top, kernel, loop, target, o);
  std::ostringstream out;
  for (const auto& [k, v] : top) out << k << " = " << v << '\n';
  write_table(out, "kernel", kernel);
  if (foreign) {
    // A target is drawn a workload and its own trouble (write_trouble): what must hold under
    // the built-in loop's faults, posts and shutdowns depends on the program.
    write_table(out, "target", target);
    Description workload = d;
    workload.groups.clear();
    workload.trouble.at_ms += target_start_ms;
    int left = target_clients_max;
    for (GenGroup g : d.groups) {
      if (left <= 0) break;
      g.count = std::min(g.count, left);
      g.connect_ms += target_start_ms;
      for (GenRequest& r : g.requests) r.at_ms += target_start_ms;
      if (g.burst > 0) g.wire.rtt_ms = g.wire.jitter_ms = 0;  // a target's burst: over a network without delay
      left -= g.count;
      g = with_burst(std::move(g));
      workload.groups.push_back(g);
    }
    write_groups(out, workload);
    write_trouble(out, workload);
    return out.str();
  }
  write_table(out, "loop", loop);
  Description drawn = d;  // with its bursts, which a group's name follows (a holder that sends is not one)
  for (GenGroup& g : drawn.groups) g = with_burst(std::move(g));
  write_groups(out, drawn);
  write_faults(out, drawn);
  write_posters(out, drawn);
  return out.str();
}

}  // namespace

std::string scenario_text(const Description& d, const std::string& name,
                          const std::vector<sim::Override>& overrides) {
  // Drawn with a provisional horizon, then given the one its schedule needs.
  sim::Scenario first = sim::parse_scenario(body_text(d, name, 20000, overrides), name);
  std::string body = body_text(d, name, horizon_needed_ms(first), overrides);
  sim::Scenario scenario = sim::parse_scenario(body, name);
  return body + expectations_text(scenario);
}

}  // namespace loopsim::explore
