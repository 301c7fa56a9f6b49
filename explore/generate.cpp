#include "explore/generate.hpp"

#include <algorithm>
#include <cerrno>
#include <limits>
#include <memory>
#include <sstream>
#include <toml++/toml.h>

#include "checker/loop_properties.hpp"
#include "checker/suite.hpp"
#include "realloop/loop.hpp"
#include "base/assert.hpp"
#include "sim/world.hpp"

namespace loopsim::explore {

using Route = GenRequest::Route;
using Kind = GenFault::Kind;

// ---------------------------------------------------------------------------------------------
// Generators. They are tuples of independent picks mapped to structs (never gen::exec, whose
// shrinking fixes every pick before the last one it shrank), so that shrinking comes back to
// each field until none shrinks further. Every pick shrinks towards its first alternative or
// its lower end: the default, or the plainest case, is written first.

namespace {

namespace gen = rc::gen;

Nanos ms(std::int64_t n) { return std::chrono::milliseconds(n); }

// One of `values`, each as likely; shrinks towards the first (gen::element does not shrink).
template <class T>
rc::Gen<T> pick(std::initializer_list<T> values) {
  std::vector<T> all(values);
  return gen::map(gen::inRange<std::size_t>(0, all.size()), [all](std::size_t i) { return all[i]; });
}

// Up to `most` of `element`, as many as `count` draws. The length is drawn apart from the
// elements: gen::resize would shrink the size every element is drawn at, and RapidCheck scales
// gen::inRange by the size. Shrinking drops elements from the end, and simplifies each.
template <class T>
rc::Gen<std::vector<T>> some(rc::Gen<int> count, std::size_t most, rc::Gen<T> element) {
  return gen::map(gen::pair(count, gen::container<std::vector<T>>(most, element)), [](auto p) {
    p.second.resize(std::min(p.second.size(), std::size_t(std::max(0, p.first))));
    return p.second;
  });
}

// True one time in n; shrinks to false.
rc::Gen<bool> rare(int n) {
  return gen::map(gen::inRange(0, n), [n](int v) { return v == n - 1; });
}

// A request's `at_ms` is drawn as the time after the one before (0 first: pipelined, R8).
rc::Gen<GenRequest> request_gen() {
  return gen::map(gen::tuple(pick({0, 0, 5, 40, 150, 400}),
                             pick({Route::fast, Route::hello, Route::slow_ms, Route::slow_us}),
                             gen::inRange(1, 31), gen::inRange(1, 800)),
                  [](const std::tuple<int, Route, int, int>& t) {
                    auto [after, route, slow_ms, slow_us] = t;
                    int amount = route == Route::slow_ms ? slow_ms : route == Route::slow_us ? slow_us : 0;
                    return GenRequest{after, route, amount};
                  });
}

// Mostly a plain client on a plain network; each twist is drawn apart and shrinks away.
rc::Gen<GenWire> wire_gen() {
  return gen::map(gen::tuple(rare(3), pick({0, 0, 0, 1, 20}), pick({0, 0, 5}), rare(4), pick({0, 0, 0, 100}),
                             pick({0, 0, 0, 2000})),
                  [](const std::tuple<bool, int, int, bool, int, int>& t) {
                    auto [poisson, rtt_ms, jitter_ms, half_close, body, read_rate] = t;
                    return GenWire{poisson, rtt_ms, jitter_ms, half_close, body, read_rate};
                  });
}

rc::Gen<GenGroup> group_gen() {
  // Up to 3 requests; none is a holder that connects and stays.
  auto requests = some(pick({1, 1, 2, 3, 0}), 3, request_gen());
  return gen::map(gen::tuple(gen::inRange(1, 16), pick({0, 0, 10, 50, 100, 300, 700}),
                             pick({0, 0, 100, 1000, 20000}), gen::arbitrary<bool>(), requests, wire_gen()),
                  [](const std::tuple<int, int, int, bool, std::vector<GenRequest>, GenWire>& t) {
                    auto [count, connect_ms, rate, keep_alive, requests, wire] = t;
                    int at = connect_ms;
                    for (GenRequest& r : requests) at = r.at_ms = at + r.at_ms;
                    return GenGroup{count, connect_ms, rate, keep_alive, requests, wire};
                  });
}

rc::Gen<GenFault> fault_gen() {
  auto what = gen::tuple(pick({Kind::accept_nth, Kind::accept_window, Kind::rlimit, Kind::reset}),
                         pick({EMFILE, ENFILE, ENOBUFS, ECONNABORTED}),
                         pick({1, 20, 60, 150, 400, 900}));  // never at 0: threads start then
  auto how = gen::tuple(gen::inRange(1, 40), pick({50, 10, 200, 600}), pick({1, 2, 3, 0}),
                        gen::inRange(-2, 24), gen::inRange(0, 5), pick({1, 2, 0}));
  return gen::map(gen::pair(what, how), [](const auto& p) {
    auto [kind, error, at_ms] = p.first;
    auto [nth, window_ms, window_count, rlimit_delta, group, reset_count] = p.second;
    GenFault f;
    f.kind = kind;
    f.error = error;
    f.at_ms = at_ms;
    if (kind == Kind::accept_nth) f.nth = nth;
    if (kind == Kind::accept_window) f.until_ms = at_ms + window_ms, f.count = window_count;
    if (kind == Kind::rlimit) f.rlimit_delta = rlimit_delta;
    if (kind == Kind::reset) f.group = group, f.count = reset_count;
    return f;
  });
}

rc::Gen<GenPoster> poster_gen() {
  return gen::map(gen::tuple(pick({0, 5, 30, 100, 500}), pick({0, 10, 200, 2000}),
                             gen::inRange(1, 4), pick({0, 1, 20, 100}), gen::inRange(0, 3)),
                  [](const std::tuple<int, int, int, int, int>& t) {
                    auto [at_ms, cost_us, count, every_ms, worker] = t;
                    return GenPoster{at_ms, cost_us, count, every_ms, worker};
                  });
}

// The kernel's and the loop's settings, drawn into a description.
rc::Gen<Description> settings_gen() {
  using Handles = Description::Handles;
  auto kernel = gen::tuple(gen::inRange(1, 1000), gen::arbitrary<bool>(),
                           pick({0, 1, 2, 3, 5, 8, 12, 20, 40}), pick({0, 0, 64, 256, 1024}),
                           pick({0, 0, 32, 128, 1024}));
  auto batches = gen::tuple(pick({16, 1, 2, 3, 4, 8, 0}), pick({16, 1, 2, 0}),
                            pick({8, 0, 1, 2, 32}), pick({0, 0, 1, 2, 4}));
  auto threads = gen::tuple(pick({1, 1, 2, 3}), gen::arbitrary<bool>(), gen::inRange(1, 4), rare(6));
  auto capacity = gen::tuple(pick({0, 0, 1, 2, 3, 5, 8, 16}),
                             pick({Handles::rlimit, Handles::fixed, Handles::grow}), gen::inRange(1, 20),
                             gen::arbitrary<bool>(), pick({100, 10, 50, 300}), pick({1000, 100, 250}));
  return gen::map(gen::tuple(kernel, batches, threads, capacity), [](const auto& t) {
    Description d;
    const auto& [k, b, w, c] = t;
    std::tie(d.seed, d.kqueue, d.rlimit_room, d.send_buffer, d.receive_buffer) = k;
    std::tie(d.accept_batch, d.yield_batch, d.drain_chunk, d.max_events) = b;
    std::tie(d.workers, d.pool, d.pool_threads, d.inverted) = w;
    int handle_pairs = 0;
    std::tie(d.max_connections, d.handles, handle_pairs, d.refuse, d.emfile_backoff_ms, d.idle_timeout_ms) = c;
    d.max_handles = d.handles == Handles::fixed ? 2 * handle_pairs : d.max_handles;
    if (!d.pool) d.pool_threads = LoopConfig{}.pool_threads;
    return d;
  });
}

}  // namespace

rc::Gen<Description> description_gen() {
  auto groups = some(gen::inRange(1, 6), 5, group_gen());
  auto faults = some(gen::inRange(0, 4), 3, fault_gen());
  auto posters = some(gen::inRange(0, 3), 2, poster_gen());
  auto shutdown = gen::tuple(rare(4), pick({0, 10, 100, 300, 800, 1500}));
  return gen::map(gen::tuple(settings_gen(), groups, faults, posters, shutdown), [](const auto& t) {
    auto [d, groups, faults, posters, shutdown] = t;
    d.groups = groups;
    d.faults = faults;
    d.posters = posters;
    if (std::get<0>(shutdown)) d.shutdown_ms = std::get<1>(shutdown);
    return d;
  });
}

int clients_of(const Description& d) {
  int n = 0;
  for (const GenGroup& g : d.groups) n += g.count;
  return n;
}

int own_descriptors(const sim::Scenario& s) {
  const int loops = LoopLayout::of(s.loop, s.workers).loops;  // the workers and the accept thread
  int pool = s.loop.mode == HandlerMode::pool ? 2 * s.loop.pool_threads : 0;
  int inverted = s.loop.inverted ? loops : 0;
  return 3 + 1 + 2 * loops + pool + inverted;
}

// ---------------------------------------------------------------------------------------------
// Rendering: a Description to TOML text.

namespace {

using Entries = std::vector<std::pair<std::string, std::string>>;  // key, value as TOML text

std::string quoted(const std::string& s) { return "\"" + s + "\""; }
std::string ms_text(std::int64_t n) { return quoted(std::to_string(n) + "ms"); }

std::string route_path(const GenRequest& r) {
  switch (r.route) {
    case Route::fast: return "/fast";
    case Route::hello: return "/hello";
    case Route::slow_ms: return "/slow?ms=" + std::to_string(r.amount);
    case Route::slow_us: return "/slow?us=" + std::to_string(r.amount);
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

// Everything but the expectations, with the overrides written in.
// A target's workload: at most this many clients in all, well below any listen backlog a
// server asks for (libuv's examples 128, nginx 511), so that no SYN is dropped for want of one.
constexpr int target_clients_max = 100;

bool for_target(const std::vector<sim::Override>& overrides) {
  return std::any_of(overrides.begin(), overrides.end(),
                     [](const sim::Override& o) { return o.key.rfind("target.", 0) == 0; });
}

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
    // A target is drawn a workload only: what must hold under faults, posts and shutdowns
    // depends on the program, of which the generator knows nothing.
    write_table(out, "target", target);
    Description workload = d;
    workload.groups.clear();
    int left = target_clients_max;
    for (GenGroup g : d.groups) {
      if (left <= 0) break;
      g.count = std::min(g.count, left);
      left -= g.count;
      workload.groups.push_back(g);
    }
    write_groups(out, workload);
    return out.str();
  }
  write_table(out, "loop", loop);
  write_groups(out, d);
  write_faults(out, d);
  write_posters(out, d);
  return out.str();
}

// ---------------------------------------------------------------------------------------------
// What a configuration allows to fail, with the rules on.

constexpr std::int64_t unbounded = std::numeric_limits<std::int64_t>::max();

std::int64_t to_ms(Nanos t) { return std::chrono::duration_cast<std::chrono::milliseconds>(t).count(); }

// The time by which everything a scenario schedules has happened and been served, with room
// for EMFILE back-offs and idle waits: a horizon no shorter keeps the end of the run from
// cutting a request, a retry or a shutdown short.
std::int64_t horizon_needed_ms(const sim::Scenario& s) {
  std::int64_t last = 0, work_us = 0;
  for (const sim::ClientGroup& g : s.clients) {
    // Poisson gaps: their sum's mean is the even spread, and it is rarely past twice it (+1 s).
    const bool poisson = g.arrivals == sim::ClientGroup::Arrivals::poisson;
    std::int64_t spread_ms = 0;
    if (g.rate_milli > 0) spread_ms = std::int64_t(__int128(g.count - 1) * (poisson ? 2 : 1) * 1'000'000 / g.rate_milli);
    if (poisson) spread_ms += 1000;
    last = std::max(last, to_ms(g.connect_at.hi) + spread_ms + 1);
    // A round trip for the handshake, and each way of every request, with its jitter.
    const std::int64_t trip_ms = to_ms(g.rtt) + 2 * to_ms(g.jitter) + 1;
    last += g.rtt > Nanos{0} || g.jitter > Nanos{0} ? trip_ms * std::int64_t(g.requests.size() + 1) : 0;
    for (const sim::RequestSpec& r : g.requests) {
      last = std::max(last, to_ms(r.at.hi));
      std::int64_t cost_us = 1000;  // the handler's own work, generously
      // A slow reader takes an answer (a few hundred bytes) at read_rate.
      if (g.read_rate > 0) cost_us += 1'000'000 * 1024 / g.read_rate;
      if (r.path.rfind("/slow?ms=", 0) == 0) cost_us += 1000 * std::stoll(r.path.substr(9));
      if (r.path.rfind("/slow?us=", 0) == 0) cost_us += std::stoll(r.path.substr(9));
      work_us += cost_us * g.count;
    }
  }
  // Each accept fault or limit change may cost a retry: after the back-off, or in inverted mode
  // (R6) at the outside scheduler's next 1 Hz tick.
  std::int64_t retry_ms = to_ms(s.loop.emfile_backoff) + (s.loop.inverted ? 1000 : 0);
  std::int64_t retries = 4;
  for (const sim::FaultSpec& f : s.faults) {
    last = std::max({last, to_ms(f.at.hi), to_ms(f.until)});
    retries += f.kind == sim::FaultSpec::Kind::reset ? 0 : 1;
  }
  for (const sim::PosterSpec& p : s.posters) {
    last = std::max(last, to_ms(p.at.hi + p.every * (p.count - 1)));
    work_us += (std::chrono::duration_cast<std::chrono::microseconds>(p.cost).count() + 1) * p.count;
  }
  for (const sim::ActionSpec& a : s.actions) last = std::max(last, to_ms(a.at.hi));
  return last + work_us / 1000 + retries * retry_ms + 2 * to_ms(s.loop.idle_timeout) + 2000;
}

// The descriptor limit that holds at the end: the last rlimit fault's (the lowest of those that
// may come last: at one instant their order is a choice, and windows may land in any order), or
// the file's.
int final_rlimit(const sim::Scenario& s) {
  int value = s.kernel.rlimit_nofile;
  std::optional<Nanos> latest_start;
  for (const sim::FaultSpec& f : s.faults) {
    if (f.kind == sim::FaultSpec::Kind::rlimit && (!latest_start || f.at.lo > *latest_start)) latest_start = f.at.lo;
  }
  for (const sim::FaultSpec& f : s.faults) {
    if (f.kind != sim::FaultSpec::Kind::rlimit || f.at.hi < *latest_start) continue;
    value = value == s.kernel.rlimit_nofile ? f.value : std::min(value, f.value);
  }
  return value;
}

struct Allowance {
  int clients = 0;
  int stayers = 0;  // connections that never close of their own accord
  std::int64_t held_max = unbounded;  // connections one loop may hold
  std::int64_t room = unbounded;      // descriptors left for connections at the end
  std::int64_t table = unbounded;     // R9's table, in connections
  bool shutdown = false, resets = false, aborts = false, refusals = false, short_horizon = false;
  std::int64_t abort_budget = 0;  // connections ECONNABORTED may consume (unbounded: a window)
  bool may_strand() const { return stayers >= held_max || stayers >= room; }
};

Allowance allowance_of(const sim::Scenario& s) {
  Allowance a;
  for (const sim::ClientGroup& g : s.clients) {
    a.clients += g.count;
    if ((g.keep_alive && !g.half_close) || g.requests.empty()) a.stayers += g.count;
  }
  if (s.loop.handle_policy == HandlePolicy::fixed) a.table = s.loop.max_handles / 2;
  if (s.loop.handle_policy == HandlePolicy::rlimit) a.table = s.kernel.rlimit_nofile;
  a.held_max = s.loop.max_connections;
  if (s.loop.on_full == OnFull::backpressure) a.held_max = std::min(a.held_max, a.table);
  a.refusals = s.loop.on_full == OnFull::refuse && a.table < a.clients;
  a.room = final_rlimit(s) - own_descriptors(s);
  a.shutdown = !s.actions.empty();
  for (const sim::FaultSpec& f : s.faults) {
    a.resets = a.resets || f.kind == sim::FaultSpec::Kind::reset;
    if (f.kind != sim::FaultSpec::Kind::accept_error || f.error != ECONNABORTED) continue;
    a.aborts = true;
    bool window = f.nth == 0;
    if (window && f.count == 0) a.abort_budget = unbounded;
    if (a.abort_budget != unbounded) a.abort_budget += window ? f.count : 1;
  }
  a.short_horizon = to_ms(s.horizon) < horizon_needed_ms(s);
  return a;
}

// Clients no reset fault names.
std::int64_t unreset_clients(const sim::Scenario& s) {
  std::int64_t n = 0;
  for (const sim::ClientGroup& g : s.clients) {
    bool reset = std::any_of(s.faults.begin(), s.faults.end(), [&](const sim::FaultSpec& f) {
      return f.kind == sim::FaultSpec::Kind::reset && f.of == g.name;
    });
    if (!reset) n += g.count;
  }
  return n;
}

// batch_bound fails a run that accepted nothing, so it is judged only where an accept is
// certain: with a shutdown, a client connects 20 ms before it with nothing going wrong and a
// descriptor free; without, nothing may strand the backlog and more clients connect than
// ECONNABORTED and resets may consume.
bool accept_certain(const sim::Scenario& s, const Allowance& a) {
  if (a.clients == 0 || a.short_horizon) return false;
  if (a.shutdown) {
    Nanos shutdown = s.actions.front().at.lo;
    for (const sim::ActionSpec& action : s.actions) shutdown = std::min(shutdown, action.at.lo);
    bool early = std::any_of(s.clients.begin(), s.clients.end(), [&](const sim::ClientGroup& g) {
      return g.connect_at.hi + ms(20) <= shutdown;
    });
    return early && s.faults.empty() && s.kernel.rlimit_nofile - own_descriptors(s) >= 1;
  }
  if (a.room < 1 || a.held_max < 1 || a.abort_budget == unbounded) return false;
  return unreset_clients(s) > a.abort_budget;
}

std::string answered_exclusion(const Allowance& a) {
  if (a.short_horizon) return "the horizon is shorter than the work scheduled";
  if (a.shutdown) return "a shutdown closes the listener on clients yet to be accepted";
  if (a.may_strand()) return "connections that stay fill what the loop may hold or open";
  if (a.resets) return "clients reset their connections, and lose their answers";
  if (a.aborts) return "ECONNABORTED consumes the connection it lands on";
  if (a.refusals) return "a full handle table refuses (on_full = \"refuse\")";
  return "";
}

std::string stranded_exclusion(const Allowance& a) {
  if (a.short_horizon) return "the horizon is shorter than the work scheduled";
  if (a.shutdown) return "after a shutdown the listener is closed; what waited is not the loop's";
  if (a.may_strand()) return "connections that stay fill what the loop may hold or the descriptors left at the end";
  return "";
}

}  // namespace

Oracle oracle_of(const sim::Scenario& s) {
  Oracle o;
  auto judge = [&o](const std::string& property, const std::string& extra = "") {
    o.judged.push_back({property, extra});
  };
  auto leave_out = [&o](const std::string& property, const std::string& why, const std::string& detail = "") {
    o.left_out.push_back({property, why, detail.empty() ? why : detail});
  };
  if (s.target) {  // any server: every request of a modest workload answered, nothing left, no spin
    judge("answered");
    judge("no_stranded_backlog");
    judge("no_spin", "max = " + std::to_string(checker::no_spin_max_default) + "\n");
    leave_out("shutdown_clean", "a target gets no shutdown action");
    leave_out("batch_bound", "a target's batches are its own");
    leave_out("post_latency", "a target gets no posts");
    return o;
  }
  Allowance a = allowance_of(s);
  if (std::string why = answered_exclusion(a); why.empty()) judge("answered"); else leave_out("answered", why);
  if (std::string why = stranded_exclusion(a); why.empty()) {
    judge("no_stranded_backlog");
  } else {
    std::string detail = why;
    if (a.may_strand() && !a.short_horizon && !a.shutdown) {
      detail = "connections that stay (" + std::to_string(a.stayers) + ") fill what the loop may hold (" +
               (a.held_max == unbounded ? std::string("no bound") : std::to_string(a.held_max)) +
               ") or the descriptors left at the end (" + std::to_string(a.room) + ")";
    }
    leave_out("no_stranded_backlog", why, detail);
  }
  // A spin is never allowed: no configuration with the rules on makes idle passes that return at once.
  judge("no_spin", "max = " + std::to_string(checker::no_spin_max_default) + "\n");
  if (!a.shutdown) leave_out("shutdown_clean", "no shutdown drawn");
  else if (a.short_horizon) leave_out("shutdown_clean", "the horizon is shorter than the work scheduled");
  else judge("shutdown_clean");
  if (s.loop.accept_batch == 0) leave_out("batch_bound", "accept_batch = 0 drains until EAGAIN");
  else if (!accept_certain(s, a)) leave_out("batch_bound", "an accept is not certain, and a run with none fails it");
  else judge("batch_bound", "max = " + std::to_string(s.loop.accept_batch) + "\n");
  // Every post runs exactly once, some time before the end; a shutdown may end a loop first.
  if (s.posters.empty()) leave_out("post_latency", "no posters drawn");
  else if (a.shutdown) leave_out("post_latency", "a shutdown may end a loop before a post runs");
  else if (a.short_horizon) leave_out("post_latency", "the horizon is shorter than the work scheduled");
  else judge("post_latency", "max = " + ms_text(to_ms(s.horizon)) + "\n");
  return o;
}

std::string expectations_text(const sim::Scenario& s) {
  Oracle o = oracle_of(s);
  std::ostringstream out;
  out << (s.target ? "\n# What any server must do with a workload its backlog holds, nothing going wrong.\n"
                   : "\n# What must hold with the rules on; what the configuration allows to fail is left out.\n");
  for (const Oracle::Judged& j : o.judged) out << "\n[[expect]]\nproperty = " << quoted(j.property) << '\n' << j.extra;
  for (const Oracle::LeftOut& l : o.left_out) {
    if (l.property == "answered" || l.property == "no_stranded_backlog" || l.property == "batch_bound") {
      out << "\n# " << l.property << " is not judged: " << l.detail << '\n';
    }
  }
  return out.str();
}

std::string scenario_text(const Description& d, const std::string& name,
                          const std::vector<sim::Override>& overrides) {
  // Drawn with a provisional horizon, then given the one its schedule needs.
  sim::Scenario first = sim::parse_scenario(body_text(d, name, 20000, overrides), name);
  std::string body = body_text(d, name, horizon_needed_ms(first), overrides);
  sim::Scenario scenario = sim::parse_scenario(body, name);
  return body + expectations_text(scenario);
}

// ---------------------------------------------------------------------------------------------
// Judging one scenario, with the step budget.

namespace {

// A world and the scenario it refers to. A livelocked world cannot be finished (finish() runs
// to the horizon, which a run without virtual progress never reaches): it is abandoned.
struct Held {
  sim::Scenario scenario;
  std::unique_ptr<sim::World> world;
};

std::string livelock_detail(const Judged& j, const StepBudget& budget, bool at_instant) {
  std::ostringstream out;
  if (at_instant) out << "livelock: no virtual progress in " << budget.at_instant << " steps at ";
  else out << "the run took " << budget.total << " steps (its budget) and stopped at ";
  out << checker::ms_text(j.virtual_time) << " of virtual time";
  return out.str();
}

}  // namespace

namespace {

// The verdicts of a whole run: the properties violated, the first one's detail.
void judge_trace(Judged& j, const sim::Trace& trace, const sim::Scenario& scenario, const checker::Costs& costs) {
  j.virtual_time = trace.horizon;
  for (const checker::Verdict& v : checker::evaluate(trace, scenario.expect, costs)) {
    if (v.held) continue;
    if (j.violated.empty()) j.detail = v.property + ": " + v.detail;
    j.violated.push_back(v.property);
  }
  if (!j.violated.empty()) j.verdict = Judged::Verdict::violated;
}

// A target runs in its own process (sim/target.hpp), to its horizon: no step budget, but loopsim
// gives up on a process that says nothing for 120 s, and a run limit stops a runaway trace.
Judged judge_target(const sim::Scenario& scenario, const checker::Costs& costs) {
  Judged j;
  sim::RunResult run = sim::run(scenario, "base");
  j.steps = run.stats.steps;
  judge_trace(j, run.trace, scenario, costs);
  return j;
}

}  // namespace

Judged judge_text(const std::string& text, const std::string& name, const StepBudget& budget) {
  auto held = std::make_unique<Held>();
  held->scenario = sim::parse_scenario(text, name);
  held->scenario.file = name;
  checker::validate(held->scenario);
  checker::Costs costs = checker::costs_for(text, name);
  if (held->scenario.target) return judge_target(held->scenario, costs);
  held->world = std::make_unique<sim::World>(held->scenario, "base", nullptr);
  sim::World& world = *held->world;
  Judged j;
  Nanos instant = world.now();
  std::uint64_t at_instant = 0;
  while (world.step()) {
    ++j.steps;
    if (world.now() != instant) instant = world.now(), at_instant = 0;
    bool stuck = ++at_instant > budget.at_instant || world.stalled();
    if (!stuck && j.steps <= budget.total) continue;
    j.virtual_time = world.now();
    if (stuck) {
      j.verdict = Judged::Verdict::livelock;
      j.violated = {"livelock"};
      j.detail = livelock_detail(j, budget, true);
      j.livelock_trace = world.trace();
      world.abandon();
      return j;
    }
    // Only long: what the run so far decides still counts.
    sim::RunResult cut = world.stop_short(livelock_detail(j, budget, false), false, false);
    judge_trace(j, cut.trace, held->scenario, costs);
    j.virtual_time = cut.stats.virtual_time;  // where it stopped, not the horizon
    if (j.verdict == Judged::Verdict::held) {
      j.verdict = Judged::Verdict::bound;
      j.detail = cut.trace.cut;
    }
    return j;
  }
  sim::RunResult run = world.finish();
  judge_trace(j, run.trace, held->scenario, costs);
  return j;
}

// ---------------------------------------------------------------------------------------------
// The search.

const char* verdict_name(GenerateResult::Verdict verdict) {
  switch (verdict) {
    case GenerateResult::Verdict::none_found: return "none_found";
    case GenerateResult::Verdict::found: return "found";
    case GenerateResult::Verdict::limit: return "limit";
  }
  return "?";
}

std::string generated_name(std::uint64_t seed, std::uint64_t run) {
  return "generated-s" + std::to_string(seed) + "-r" + std::to_string(run);
}

namespace {

class Search {
 public:
  explicit Search(const GenerateOptions& options) : options_(options) {
    if (options_.wall_ns) started_ns_ = options_.wall_ns();
  }

  GenerateResult run() {
    // Validates --set once, so that a bad one is reported as the user wrote it.
    sim::parse_scenario("[[clients]]\nname = \"c\"\n", "--set", options_.overrides);
    rc::Random random(options_.seed);
    auto gen = description_gen();
    for (std::uint64_t i = 0; i < options_.runs; ++i) {
      if (out_of_time()) {
        result_.verdict = GenerateResult::Verdict::limit;
        result_.out_of_time = true;
        return result_;
      }
      rc::Shrinkable<Description> drawn = gen(random.split(), rc::kNominalSize);
      if (i % options_.shards != options_.shard) continue;
      std::string name = generated_name(options_.seed, i);
      std::string text = scenario_text(drawn.value(), name, options_.overrides);
      Judged judged = judge_text(text, name, options_.budget);
      ++result_.runs;
      count_oracle(sim::parse_scenario(text, name));
      if (judged.verdict == Judged::Verdict::bound) {
        ++result_.cut_runs;
        if (result_.first_cut.empty()) result_.first_cut = name + ": " + judged.detail;
      }
      report(false);
      if (!judged.failed()) continue;
      result_.verdict = GenerateResult::Verdict::found;
      result_.failing_run = i;
      result_.original = text;
      result_.clients_before = clients_of(drawn.value());
      shrink(std::move(drawn), name, std::move(judged));
      return result_;
    }
    if (result_.cut_runs > 0) result_.verdict = GenerateResult::Verdict::limit;
    return result_;
  }

 private:
  // RapidCheck's shrinking: take the first shrink that still fails the same way (one of the
  // properties first violated, or a livelock again), and start again from it, until none does.
  void shrink(rc::Shrinkable<Description> best, const std::string& name, Judged judged) {
    std::vector<std::string> first = judged.violated;
    auto same = [&first](const Judged& j) {
      return std::any_of(j.violated.begin(), j.violated.end(), [&](const std::string& p) {
        return std::find(first.begin(), first.end(), p) != first.end();
      });
    };
    std::string best_text = result_.original;
    for (bool shrunk = true; shrunk;) {
      shrunk = false;
      rc::Seq<rc::Shrinkable<Description>> candidates = best.shrinks();
      while (rc::Maybe<rc::Shrinkable<Description>> candidate = candidates.next()) {
        if (result_.shrink_tries >= options_.max_shrinks || out_of_time()) {
          result_.shrink_cut = true;
          break;
        }
        ++result_.shrink_tries;
        report(true);
        std::string text = scenario_text(candidate->value(), name, options_.overrides);
        Judged j = judge_text(text, name, options_.budget);
        if (!same(j)) continue;
        best = std::move(*candidate);
        best_text = std::move(text);
        judged = std::move(j);
        ++result_.shrink_steps;
        shrunk = true;
        break;
      }
    }
    result_.shrunk = best_text;
    result_.judged = std::move(judged);
    result_.clients_after = clients_of(best.value());
  }

  // What this run's oracle judged and left out, added to the search's counts.
  void count_oracle(const sim::Scenario& scenario) {
    Oracle o = oracle_of(scenario);
    for (const Oracle::Judged& j : o.judged) ++result_.coverage[j.property].judged;
    for (const Oracle::LeftOut& l : o.left_out) {
      Coverage& c = result_.coverage[l.property];
      ++c.left_out;
      ++c.why[l.why];
    }
  }

  bool out_of_time() const {
    return options_.time_limit_ns > 0 && options_.wall_ns &&
           options_.wall_ns() - started_ns_ >= options_.time_limit_ns;
  }

  void report(bool shrinking) {
    if (!options_.progress) return;
    const std::uint64_t n = options_.shards, share = options_.runs > options_.shard ? (options_.runs - options_.shard + n - 1) / n : 0;
    options_.progress(GenerateProgress{result_.runs, share, result_.shrink_tries, shrinking});
  }

  const GenerateOptions& options_;
  std::int64_t started_ns_ = 0;
  GenerateResult result_;
};

}  // namespace

GenerateResult generate(const GenerateOptions& options) { return Search(options).run(); }

}  // namespace loopsim::explore
