// What a generated scenario must satisfy: the properties its configuration cannot excuse, and
// those left out, each with why.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <limits>
#include <optional>
#include <sstream>
#include <string_view>

#include "checker/loop_properties.hpp"
#include "explore/generate.hpp"
#include "explore/toml_text.hpp"
#include "scenario/scenario.hpp"

namespace loopsim::explore {

namespace {

// What a configuration allows to fail, with the rules on.

constexpr std::int64_t unbounded = std::numeric_limits<std::int64_t>::max();

std::int64_t to_ms(Duration t) { return std::chrono::duration_cast<std::chrono::milliseconds>(t).count(); }
std::int64_t to_ms(Instant t) { return to_ms(since_start(t)); }

}  // namespace

namespace {

// The N of a path "PREFIXN" (/slow?ms=N, /bytes?n=N); 0 for another path, or one whose N is not
// a number this can read (a file's own path, which the loop answers as it does).
std::int64_t number_after(const std::string& path, std::string_view prefix) {
  if (path.rfind(prefix, 0) != 0) return 0;
  std::int64_t n = 0;
  const char* begin = path.data() + prefix.size();
  const auto [end, error] = std::from_chars(begin, path.data() + path.size(), n);
  return error == std::errc() && n > 0 ? std::min<std::int64_t>(n, std::int64_t(1) << 40) : 0;
}

}  // namespace

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
    last += g.rtt > Duration{0} || g.jitter > Duration{0} ? trip_ms * std::int64_t(g.requests.size() + 1) : 0;
    for (const sim::RequestSpec& r : g.requests) {
      last = std::max(last, to_ms(r.at.hi));
      std::int64_t cost_us = 1000;  // the handler's own work, generously
      // A slow reader takes an answer (a few hundred bytes, or /bytes?n=N's N) at read_rate.
      const std::int64_t answer = 1024 + number_after(r.path, "/bytes?n=");
      if (g.read_rate > 0) cost_us += std::int64_t(__int128(1'000'000) * answer / g.read_rate);
      cost_us += 1000 * number_after(r.path, "/slow?ms=") + number_after(r.path, "/slow?us=");
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
  return last + work_us / 1000 + retries * retry_ms + 2 * to_ms(s.loop.idle_timeout.value_or(Duration(0))) + 2000;
}

namespace {

// The descriptor limit that holds at the end: the last rlimit fault's (the lowest of those that
// may come last: at one instant their order is a choice, and windows may land in any order), or
// the file's.
int final_rlimit(const sim::Scenario& s) {
  int value = s.kernel.rlimit_nofile;
  std::optional<Instant> latest_start;
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
    Instant shutdown = s.actions.front().at.lo;
    for (const sim::ActionSpec& action : s.actions) shutdown = std::min(shutdown, action.at.lo);
    bool early = std::any_of(s.clients.begin(), s.clients.end(), [&](const sim::ClientGroup& g) {
      return g.connect_at.hi + std::chrono::milliseconds(20) <= shutdown;
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
    bool resets = false, accept_errors = false;
    for (const sim::FaultSpec& f : s.faults) {
      resets = resets || f.kind == sim::FaultSpec::Kind::reset;
      accept_errors = accept_errors || f.kind == sim::FaultSpec::Kind::accept_error;
    }
    const bool stops = !s.actions.empty();
    if (stops) leave_out("answered", "a SIGTERM may end the program before every request is answered");
    else if (resets) leave_out("answered", "clients reset their connections, and lose their answers");
    else if (accept_errors)
      leave_out("answered", "a server may shed the connections it cannot take a descriptor for (libuv's reserve descriptor does)");
    else judge("answered");
    if (stops) leave_out("no_stranded_backlog", "after a SIGTERM the program may close its listener on what waited");
    else judge("no_stranded_backlog");
    judge("no_spin", "max = " + std::to_string(checker::no_spin_max_default) + "\n");
    // Many servers stop at once on SIGTERM by design (nginx's fast shutdown; QUIT drains): a
    // drain is a promise of the program's own, which its file may expect.
    leave_out("shutdown_clean", stops ? "SIGTERM is a fast stop for many servers (nginx's); a drain is the program's own promise"
                                      : "no SIGTERM drawn");
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
  out << (s.target ? "\n# What any server must do with a workload its backlog holds, and with what was drawn to go wrong.\n"
                   : "\n# What must hold with the rules on; what the configuration allows to fail is left out.\n");
  for (const Oracle::Judged& j : o.judged) out << "\n[[expect]]\nproperty = " << quoted(j.property) << '\n' << j.extra;
  for (const Oracle::LeftOut& l : o.left_out) {
    if (l.property == "answered" || l.property == "no_stranded_backlog" || l.property == "batch_bound") {
      out << "\n# " << l.property << " is not judged: " << l.detail << '\n';
    }
  }
  return out.str();
}

}  // namespace loopsim::explore
