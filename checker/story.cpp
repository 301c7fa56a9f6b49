#include "checker/story.hpp"

#include <cerrno>
#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>
#include <type_traits>
#include <variant>

#include "model/choice.hpp"
#include "scenario/scenario.hpp"

namespace loopsim::checker {

namespace ev = sim::ev;
using sim::ClientIndex;
using sim::Trace;

namespace {

// A story is read, not scrolled: at most this many choices and this many connections are told
// one by one; the rest are summed up in a line.
constexpr std::size_t choices_told = 10;
constexpr std::size_t clients_told = 8;
constexpr std::size_t clients_told_well = 3;

// "12.500 ms": a length, or (at) an instant as its time since the run's start.
std::string length(Duration t) {
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.3f ms", double(t.count()) / 1e6);
  return buffer;
}
std::string at(Instant t) { return length(since_start(t)); }

std::string count_of(std::int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string bytes(std::int64_t n) { return count_of(n, "byte", "bytes"); }

// Counts of what happened in a stretch of a trace: the whole run's, for the story, or between
// two decisions, for an edge of the decision graph (text()).
struct Between {
  std::int64_t connects = 0, sends = 0, accepts = 0, passes = 0, reads = 0, read_bytes = 0, writes = 0,
               wrote_bytes = 0, short_writes = 0, answers = 0, resets = 0, refused = 0;
  std::string text() const {
    std::string t;
    auto add = [&](std::int64_t n, const std::string& what) {
      if (n > 0) t += (t.empty() ? "" : "\\n") + std::to_string(n) + " " + what;
    };
    add(connects, connects == 1 ? "connect" : "connects");
    add(sends, sends == 1 ? "request sent" : "requests sent");
    add(passes, passes == 1 ? "loop pass" : "loop passes");
    add(accepts, accepts == 1 ? "accept" : "accepts");
    if (reads > 0) t += (t.empty() ? "" : "\\n") + std::string("read ") + bytes(read_bytes) + " in " + count_of(reads, "read", "reads");
    if (writes > 0) {
      t += (t.empty() ? "" : "\\n") + std::string("wrote ") + bytes(wrote_bytes) + " in " + count_of(writes, "write", "writes");
      if (short_writes > 0) t += " (" + std::to_string(short_writes) + " short)";
    }
    add(answers, answers == 1 ? "answer received" : "answers received");
    add(resets, resets == 1 ? "reset" : "resets");
    add(refused, refused == 1 ? "connection refused" : "connections refused");
    return t;
  }
  void add(const sim::TraceEvent& event) {
    std::visit(
        [&](const auto& e) {
          using E = std::decay_t<decltype(e)>;
          if constexpr (std::is_same_v<E, ev::Connect>) ++connects;
          else if constexpr (std::is_same_v<E, ev::Send>) ++sends;
          else if constexpr (std::is_same_v<E, ev::PassBegin>) ++passes;
          else if constexpr (std::is_same_v<E, ev::Accept>) accepts += e.result >= 0 ? 1 : 0;
          else if constexpr (std::is_same_v<E, ev::Answer>) ++answers;
          else if constexpr (std::is_same_v<E, ev::Reset>) ++resets;
          else if constexpr (std::is_same_v<E, ev::Refused>) ++refused;
          else if constexpr (std::is_same_v<E, ev::Read>) {
            ++reads;
            if (e.result > 0) read_bytes += e.result;
          } else if constexpr (std::is_same_v<E, ev::Wrote>) {
            ++writes;
            if (e.result > 0) wrote_bytes += e.result;
            if (e.result >= 0 && e.result < e.size) ++short_writes;
          }
        },
        event);
  }
};

// What one client's connection went through, from the trace.
struct Told {
  std::int64_t sent = 0, answered = 0;
  std::int64_t meant = 0;  // the requests it meant to send (ClientLabel::requests; 0: no count)
  // Answers come to the oldest request outstanding, so those never answered are the last sent:
  // the first few of them, found in a second pass over the sends.
  std::vector<std::string> unanswered_paths;
  bool established = false, refused = false, reset = false, closed_by_server = false;
  std::optional<Instant> accepted;
  std::int64_t read = 0, reads = 0, empty_reads = 0, ends_read = 0, read_errors = 0;
  std::int64_t wrote = 0, writes = 0, short_writes = 0, full_writes = 0, write_errors = 0;
  std::int64_t unread = 0, unsent = 0;
  std::string refusal;     // "ECONNRESET"
  Instant refused_at{};

  std::int64_t unanswered() const { return sent - answered; }
  std::int64_t never_sent() const { return meant > sent ? meant - sent : 0; }
  bool troubled() const { return unanswered() > 0 || never_sent() > 0 || unread > 0 || unsent > 0 || refused || !accepted; }
};

std::string choice_meaning(const ev::Choice& c) {
  switch (model::ChoiceKind(c.kind)) {
    case model::ChoiceKind::order: return "same-instant happenings ran in another order than they were scheduled";
    case model::ChoiceKind::fault: return "a windowed fault landed on this accept";
    case model::ChoiceKind::slack: return "this sleep got another of the scenario's timer slacks";
    case model::ChoiceKind::land: return "a windowed happening was placed here, not at its natural moment";
    case model::ChoiceKind::take: return "the send buffer had not grown yet (K11): the write took only what fit";
    case model::ChoiceKind::preempt: return "a thread of the target gave way to another";
  }
  return "a choice";
}

// Instants, summed up: how many, the first and the last, and up to three of them.
struct Instants {
  std::int64_t count = 0;
  Instant low{}, high{};
  std::vector<Instant> first;
  void add(Instant t) {
    low = count == 0 ? t : std::min(low, t);
    high = count == 0 ? t : std::max(high, t);
    if (first.size() < 3) first.push_back(t);
    ++count;
  }
  std::string text() const {
    if (count == 0) return "never";
    if (count == 1) return "at " + at(low);
    if (low == high) return "all at " + at(low);
    if (count <= 3) {
      std::string line = "at ";
      for (std::size_t i = 0; i < first.size(); ++i) line += (i == 0 ? "" : ", ") + at(first[i]);
      return line;
    }
    return "between " + at(low) + " and " + at(high);
  }
};

// What each group sent: its instants and its distinct requests (the first few, each counted).
struct GroupSends {
  Instants connects, sends;
  std::vector<std::pair<std::string, std::int64_t>> paths;  // at most paths_kept
  bool more_paths = false;
  static constexpr std::size_t paths_kept = 3;
  void add(const std::string& path) {
    const std::string shown = sim::shown_bytes(path.substr(0, 40));
    for (auto& [p, n] : paths)
      if (p == shown) return void(++n);
    if (paths.size() < paths_kept) paths.emplace_back(shown, 1);
    else more_paths = true;
  }
};

void tell_clients(const Trace& trace, const std::vector<Told>& told, const std::vector<GroupSends>& groups,
                  std::vector<std::string>& lines) {
  std::vector<std::int64_t> members(trace.groups.size(), 0);
  for (std::size_t i = 0; i < told.size() && i < trace.clients.size(); ++i)
    if (std::size_t(trace.clients[i].group) < members.size()) ++members[std::size_t(trace.clients[i].group)];
  for (std::size_t g = 0; g < trace.groups.size() && g < groups.size(); ++g) {
    if (members[g] == 0) continue;
    const GroupSends& sent = groups[g];
    std::string line = trace.groups[g];
    if (members[g] > 1) line += " (" + count_of(members[g], "client", "clients") + ")";
    line += ": connected " + sent.connects.text();
    if (sent.sends.count == 0) {
      line += "; sent nothing.";
    } else {
      std::string what;
      for (const auto& [path, n] : sent.paths)
        what += (what.empty() ? "" : ", ") + ("\"" + path + "\"") + (n > 1 ? " x" + std::to_string(n) : "");
      if (sent.more_paths) what += ", ...";
      line += "; sent " + count_of(sent.sends.count, "request", "requests") + " (" + what + ") " + sent.sends.text() + ".";
    }
    lines.push_back(line);
  }
}

// What befell one connection, without its name: connections whose accounts read the same are
// told once, together. Without `timed`, no instant is told (the members of a group accepted at
// different times read alike), and the account of an accepted one begins "accepted;".
std::string client_account(const Told& c, bool timed = true) {
  std::string line;
  const std::string refusal = c.refusal + (timed ? " at " + at(c.refused_at) : "");
  if (!c.accepted) {
    if (c.established) line += "its handshake completed, and the server never accepted it";
    else line += c.refused ? "its connection failed (" + refusal + ")" : "never connected";
    if (c.established && c.refused) line += "; then it was reset (" + refusal + ")";
  } else {
    line += std::string("accepted") + (timed ? " at " + at(*c.accepted) : "") + "; the server read " + bytes(c.read) + " in " +
            count_of(c.reads, "read", "reads");
    if (c.empty_reads > 0) line += " (" + std::to_string(c.empty_reads) + " of them found nothing: EAGAIN)";
    if (c.ends_read > 0) line += ", then the end of the stream";
    line += ", and wrote " + bytes(c.wrote) + " in " + count_of(c.writes, "write", "writes");
    if (c.short_writes > 0) line += " (" + std::to_string(c.short_writes) + " short)";
    if (c.full_writes > 0) line += " (" + std::to_string(c.full_writes) + " found the send buffer full: EAGAIN)";
    if (c.read_errors + c.write_errors > 0) line += "; " + std::to_string(c.read_errors + c.write_errors) + " failed";
    if (c.refused) line += "; its connection was reset (" + refusal + ")";
  }
  line += "; " + std::to_string(c.answered) + " of " + std::to_string(c.sent) + " answered";
  if (c.never_sent() > 0) {
    // `answered` counts what a client meant to send: what never left counts as unanswered too.
    line += "; " + count_of(c.never_sent(), "request", "requests") + " it meant to send never went out";
  }
  if (c.unanswered() > 0) {
    line += " (never answered:";
    for (const std::string& path : c.unanswered_paths) line += " \"" + sim::shown_bytes(path.substr(0, 40)) + "\"";
    if (c.unanswered() > std::int64_t(c.unanswered_paths.size()))
      line += " and " + std::to_string(c.unanswered() - std::int64_t(c.unanswered_paths.size())) + " more";
    line += ")";
  }
  if (c.unread > 0) line += "; " + bytes(c.unread) + " it sent were never read";
  if (c.unsent > 0) line += "; " + bytes(c.unsent) + " the server wrote never reached it";
  if (c.reset) line += "; it reset its connection";
  if (c.closed_by_server) line += "; the server closed it";
  return line + ".";
}

}  // namespace

void write_story(std::ostream& out, const std::vector<std::string>& lines, const std::string& heading,
                 const std::string& indent) {
  if (lines.empty()) return;
  out << heading << "what happened:\n";
  for (const std::string& line : lines) out << indent << sim::escape_controls(line) << '\n';
}

std::string event_clause(const Trace& trace, const sim::TraceEvent& event) {
  auto name = [&](ClientIndex c) { return c == sim::no_client ? std::string("a connection") : trace.client_name(c); };
  return std::visit(
      [&](const auto& e) -> std::string {
        using E = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<E, ev::Connect>) return name(e.client) + " connected";
        else if constexpr (std::is_same_v<E, ev::Established>) return name(e.client) + "'s handshake completed";
        else if constexpr (std::is_same_v<E, ev::Send>) return name(e.client) + " sent \"" + sim::shown_bytes(e.path.view().substr(0, 40)) + "\"";
        else if constexpr (std::is_same_v<E, ev::Answer>) return name(e.client) + " got its answer";
        else if constexpr (std::is_same_v<E, ev::Reset>) return name(e.client) + " reset its connection";
        else if constexpr (std::is_same_v<E, ev::Accept>) {
          return e.result >= 0 ? "the server accepted " + name(e.client)
                               : std::string("an accept failed ") + sim::errno_name(-e.result);
        } else if constexpr (std::is_same_v<E, ev::Read>) {
          if (e.result < 0) return std::string("a read from ") + name(e.client) + " failed " + sim::errno_name(int(-e.result));
          return "the server read " + bytes(e.result) + " from " + name(e.client);
        } else if constexpr (std::is_same_v<E, ev::Wrote>) {
          if (e.result < 0) return std::string("a write to ") + name(e.client) + " failed " + sim::errno_name(int(-e.result));
          return "the server wrote " + bytes(e.result) + " of " + bytes(e.size) + " to " + name(e.client);
        } else if constexpr (std::is_same_v<E, ev::PassBegin>) return "the loop began a pass";
        else if constexpr (std::is_same_v<E, ev::Events>) return "its wait returned " + count_of(std::int64_t(e.fds.size()), "event", "events");
        else if constexpr (std::is_same_v<E, ev::Close>) return "the server closed " + name(e.client);
        else if constexpr (std::is_same_v<E, ev::Rlimit>) return "the descriptor limit became " + std::to_string(e.value);
        else return std::string("the next event: ") + sim::kind_of(event);
      },
      event);
}

std::vector<std::string> story(const Trace& trace, const std::vector<Verdict>& verdicts, bool pinned) {
  std::vector<std::string> lines;
  std::vector<Told> told(trace.clients.size());
  for (std::size_t i = 0; i < told.size(); ++i) told[i].meant = trace.clients[i].requests;
  std::vector<GroupSends> groups(trace.groups.size());
  auto of = [&](ClientIndex c) -> Told* { return c >= 0 && std::size_t(c) < told.size() ? &told[std::size_t(c)] : nullptr; };
  std::vector<std::size_t> off_natural;  // indices of choices that were not the natural pick
  Between total;  // the whole run's reads, writes, passes and accepts
  std::map<std::string, std::int64_t> accept_failures;
  const ev::PassBegin* last_wait = nullptr;
  const ev::RunEnd* end = nullptr;
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    total.add(trace.events[i]);
    std::visit(
        [&](const auto& e) {
          using E = std::decay_t<decltype(e)>;
          if constexpr (std::is_same_v<E, ev::Choice>) {
            if (e.pick != 0) off_natural.push_back(i);
          } else if constexpr (std::is_same_v<E, ev::Connect>) {
            if (of(e.client) != nullptr && std::size_t(trace.clients[std::size_t(e.client)].group) < groups.size())
              groups[std::size_t(trace.clients[std::size_t(e.client)].group)].connects.add(e.t);
          } else if constexpr (std::is_same_v<E, ev::Established>) {
            if (Told* c = of(e.client)) c->established = true;
          } else if constexpr (std::is_same_v<E, ev::Refused>) {
            if (Told* c = of(e.client)) {
              c->refused = true;
              c->refusal = sim::errno_name(e.error);
              c->refused_at = e.t;
            }
          } else if constexpr (std::is_same_v<E, ev::Send>) {
            if (Told* c = of(e.client)) {
              ++c->sent;
              if (std::size_t(trace.clients[std::size_t(e.client)].group) < groups.size()) {
                GroupSends& g = groups[std::size_t(trace.clients[std::size_t(e.client)].group)];
                g.sends.add(e.t);
                g.add(e.path.str());
              }
            }
          } else if constexpr (std::is_same_v<E, ev::Answer>) {
            if (Told* c = of(e.client)) ++c->answered;
          } else if constexpr (std::is_same_v<E, ev::Reset>) {
            if (Told* c = of(e.client)) c->reset = true;
          } else if constexpr (std::is_same_v<E, ev::PassBegin>) {
            last_wait = &e;
          } else if constexpr (std::is_same_v<E, ev::RunEnd>) {
            end = &e;
          } else if constexpr (std::is_same_v<E, ev::Accept>) {
            if (e.result < 0) ++accept_failures[sim::errno_name(-e.result)];
            if (Told* c = of(e.client); c != nullptr && e.result >= 0 && !c->accepted) c->accepted = e.t;
          } else if constexpr (std::is_same_v<E, ev::Close>) {
            if (Told* c = of(e.client)) c->closed_by_server = true;
          } else if constexpr (std::is_same_v<E, ev::Read>) {
            Told* c = of(e.client);
            if (c == nullptr) return;
            if (e.result == -EAGAIN) ++c->empty_reads;
            else if (e.result < 0) ++c->read_errors;
            else if (e.result == 0) ++c->ends_read;
            if (e.result > 0) c->read += e.result;
            ++c->reads;
          } else if constexpr (std::is_same_v<E, ev::Wrote>) {
            Told* c = of(e.client);
            if (c == nullptr) return;
            if (e.result == -EAGAIN) ++c->full_writes;
            else if (e.result < 0) ++c->write_errors;
            else if (e.result < e.size) ++c->short_writes;
            if (e.result > 0) c->wrote += e.result;
            ++c->writes;
          } else if constexpr (std::is_same_v<E, ev::Left>) {
            if (Told* c = of(e.client)) c->unread = e.unread, c->unsent = e.unsent;
          }
        },
        trace.events[i]);
  }

  // The second pass: the first few requests of each client that were never answered.
  std::vector<std::int64_t> seen(told.size(), 0);
  for (const sim::TraceEvent& event : trace.events) {
    const auto* send = std::get_if<ev::Send>(&event);
    if (send == nullptr || send->client < 0 || std::size_t(send->client) >= told.size()) continue;
    Told& c = told[std::size_t(send->client)];
    if (seen[std::size_t(send->client)]++ >= c.answered && c.unanswered_paths.size() < 3) c.unanswered_paths.push_back(send->path.str());
  }

  lines.push_back("What the clients did:");
  tell_clients(trace, told, groups, lines);

  if (total.passes > 0 || total.accepts > 0) {
    std::string line = "The server: " + count_of(total.passes, "pass", "passes") + " of its loop; " +
                       count_of(total.accepts, "connection", "connections") + " accepted";
    for (const auto& [error, n] : accept_failures) line += ", " + std::to_string(n) + " accept(s) failed " + error;
    if (last_wait != nullptr) {
      line += "; its last wait began at " + at(last_wait->t) + " with " +
              (!last_wait->timeout ? std::string("no timeout (until something happens)")
                                   : "a timeout of " + length(*last_wait->timeout));
    }
    if (end != nullptr && end->backlog > 0)
      line += "; at the end " + count_of(end->backlog, "connection was", "connections were") + " still queued on its listener";
    lines.push_back(line + ".");
  }

  if (off_natural.empty()) {
    lines.push_back("Every choice took its natural option: the file's own times, in the order scheduled.");
  } else if (!pinned) {
    lines.push_back(count_of(std::int64_t(off_natural.size()), "choice", "choices") +
                    " drawn from the seed took another than the natural option; which of them the failure "
                    "needs, `loopsim explore` finds (its counterexample tells each).");
  } else {
    lines.push_back(count_of(std::int64_t(off_natural.size()), "choice", "choices") + " took another than the natural option:");
    for (std::size_t k = 0; k < off_natural.size() && k < choices_told; ++k) {
      const std::size_t i = off_natural[k];
      const auto& c = std::get<ev::Choice>(trace.events[i]);
      std::string line = "at " + at(c.t) + ", " + model::choice_kind_name(model::ChoiceKind(c.kind)) + " " +
                         std::to_string(c.pick) + " of " + std::to_string(c.options) + ": " + choice_meaning(c);
      for (std::size_t j = i + 1; j < trace.events.size(); ++j) {
        if (std::holds_alternative<ev::Choice>(trace.events[j])) continue;
        if (sim::time_of(trace.events[j]) == c.t) line += "; next, " + event_clause(trace, trace.events[j]);
        break;
      }
      lines.push_back(line + ".");
    }
    if (off_natural.size() > choices_told)
      lines.push_back("... and " + std::to_string(off_natural.size() - choices_told) + " more.");
  }

  if (!trace.keeps<ev::Read>()) {
    lines.push_back("(This trace kept only what its verdicts read: it has no bytes. `loopsim run` with --trace tells them.)");
  } else {
    lines.push_back("The server read " + bytes(total.read_bytes) + " in " + count_of(total.reads, "read", "reads") +
                    " and wrote " + bytes(total.wrote_bytes) + " in " + count_of(total.writes, "write", "writes") +
                    (total.short_writes > 0 ? " (" + std::to_string(total.short_writes) + " short)" : "") +
                    ". Connection by connection:");
  }
  // Connections with something lost first; those of one group whose accounts read the same but
  // for their instants (a burst's many members) as one line, with the instants they were accepted.
  struct Alike {
    std::int32_t group;
    std::string account;  // untimed
    std::vector<ClientIndex> clients;
    bool troubled;
    Instants accepted;
  };
  std::vector<Alike> alike;
  std::map<std::pair<std::int32_t, std::string>, std::size_t> found;  // a million clients: no scan per client
  for (bool troubled : {true, false}) {
    for (std::size_t i = 0; i < told.size(); ++i) {
      if (told[i].troubled() != troubled) continue;
      const std::int32_t group = i < trace.clients.size() ? trace.clients[i].group : -1;
      auto [it, fresh] = found.try_emplace({group, client_account(told[i], false)}, alike.size());
      if (fresh) alike.push_back({group, it->first.second, {}, troubled, {}});
      Alike& a = alike[it->second];
      a.clients.push_back(ClientIndex(i));
      if (told[i].accepted) a.accepted.add(*told[i].accepted);
    }
  }
  // Of the connections that lost nothing, a few are enough to show what went right.
  std::size_t shown = 0;
  for (std::size_t k = 0, well = 0; k < alike.size() && shown < clients_told; ++k, ++shown) {
    const Alike& a = alike[k];
    if (!a.troubled && well++ == clients_told_well) break;
    std::string who = trace.client_name(a.clients.front());
    if (a.clients.size() == 2) who += " and " + trace.client_name(a.clients.back());
    if (a.clients.size() > 2) {
      who = std::to_string(a.clients.size()) + " of " + trace.groups[std::size_t(a.group)] + " (" + who + ", " +
            trace.client_name(a.clients[1]) + ", ...), each";
    }
    // One connection is told with its instants; alike ones with the span they were accepted in.
    std::string account = a.account;
    if (a.clients.size() == 1) account = client_account(told[std::size_t(a.clients.front())]);
    else if (account.rfind("accepted;", 0) == 0) account = "accepted " + a.accepted.text() + account.substr(8);
    lines.push_back(who + ": " + account);
  }
  if (alike.size() > shown) {
    std::size_t rest = 0, rest_troubled = 0;
    for (std::size_t k = shown; k < alike.size(); ++k) {
      rest += alike[k].clients.size();
      if (alike[k].troubled) rest_troubled += alike[k].clients.size();
    }
    lines.push_back("... and " + count_of(std::int64_t(rest), "other connection", "other connections") +
                    (rest_troubled == 0 ? ", each answered in full, nothing left unread."
                                        : ", " + std::to_string(rest_troubled) + " of them with something lost."));
  }

  bool failed = false;
  for (const Verdict& v : verdicts) {
    if (v.held || !v.decided) continue;
    if (!failed) lines.push_back("Why it fails:");
    failed = true;
    lines.push_back(v.property + (v.of.empty() ? "" : " of " + v.of) + ": " + v.detail);
  }
  if (!trace.cut.empty()) lines.push_back("The run stopped before its horizon: " + trace.cut + ".");
  return lines;
}

namespace {

// A dot label: quotes and backslashes escaped, control characters shown, long text wrapped.
std::string dot_label(const std::vector<std::string>& lines) {
  constexpr std::size_t width = 56;
  std::string out;
  for (const std::string& raw : lines) {
    std::string line = sim::escape_controls(raw);
    std::size_t column = 0;
    std::string word;
    auto put = [&](const std::string& w) {
      if (column > 0 && column + 1 + w.size() > width) out += "\\n", column = 0;
      else if (column > 0) out += ' ', ++column;
      for (char ch : w) out += (ch == '"' || ch == '\\') ? std::string("\\") + ch : std::string(1, ch);
      column += w.size();
    };
    for (char ch : line) {
      if (ch == ' ') {
        if (!word.empty()) put(word);
        word.clear();
      } else {
        word += ch;
      }
    }
    if (!word.empty()) put(word);
    out += "\\n";
  }
  return out;
}


}  // namespace

std::string decision_graph(const Trace& trace, const std::vector<Verdict>& verdicts) {
  // A graph is looked at, not read through: past this many choices off the natural path, the
  // rest are one node.
  constexpr std::size_t decisions_drawn = 60;
  struct Node {
    std::vector<std::string> label;
    std::string style;
    Instant t;
  };
  std::vector<Node> nodes = {{{"the run begins at 0 ms"}, "", Instant{}}};
  std::ostringstream edges;
  std::size_t previous = 0;
  Between between;
  auto edge_to = [&](std::size_t to) {
    const std::string label = between.text();
    edges << "  d" << previous << " -> d" << to << (label.empty() ? "" : " [label=\"" + label + "\"]") << ";\n";
    between = Between{};
    previous = to;
  };
  auto add_node = [&](std::vector<std::string> label, std::string style, Instant t) {
    nodes.push_back({std::move(label), std::move(style), t});
    edge_to(nodes.size() - 1);
  };
  // Natural choices in a row are one node, its label made when the row ends; what happens among
  // them goes on the edge out of it.
  std::int64_t natural = 0, folded = 0;
  Instant natural_low{}, natural_high{}, last{};
  auto end_natural = [&] {
    if (natural == 0) return;
    nodes[previous].label = {count_of(natural, "choice", "choices") + " took the natural option",
                             natural_low == natural_high ? "at " + at(natural_low) : "from " + at(natural_low) + " to " + at(natural_high)};
    natural = 0;
  };
  std::size_t drawn = 0;
  const ev::Lasso* lasso = nullptr;
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const sim::TraceEvent& event = trace.events[i];
    last = sim::time_of(event);
    if (const auto* l = std::get_if<ev::Lasso>(&event)) lasso = l;
    const auto* c = std::get_if<ev::Choice>(&event);
    if (c == nullptr) {
      between.add(event);
      continue;
    }
    if (c->pick == 0) {
      if (natural++ == 0) {
        natural_low = c->t;
        add_node({}, ", style=dashed, color=gray50, fontcolor=gray30", c->t);
      }
      natural_high = c->t;
      continue;
    }
    end_natural();
    if (drawn == decisions_drawn) {
      ++folded;
      continue;
    }
    std::vector<std::string> label = {"at " + at(c->t) + ": " + model::choice_kind_name(model::ChoiceKind(c->kind)) + " " +
                                          std::to_string(c->pick) + " of " + std::to_string(c->options),
                                      choice_meaning(*c)};
    for (std::size_t j = i + 1; j < trace.events.size(); ++j) {
      if (std::holds_alternative<ev::Choice>(trace.events[j])) continue;
      if (sim::time_of(trace.events[j]) == c->t) label.push_back("next: " + event_clause(trace, trace.events[j]));
      break;
    }
    add_node(std::move(label), ", color=red, fontcolor=red", c->t);
    ++drawn;
  }
  end_natural();
  if (folded > 0) add_node({"... and " + count_of(folded, "more choice", "more choices") + " off the natural path"}, ", color=red", last);
  std::vector<std::string> end = {"the run ends at " + at(last)};
  bool failed = false;
  for (const Verdict& v : verdicts) {
    if (v.held || !v.decided) continue;
    failed = true;
    end.push_back(v.property + (v.of.empty() ? "" : " of " + v.of) + ": " + v.detail);
  }
  if (!failed) end.push_back("every property held");
  add_node(end, failed ? ", shape=doubleoctagon, color=red" : ", shape=doubleoctagon", last);
  if (lasso != nullptr) {
    // The cycle goes back to the last decision made by its start.
    std::size_t back = 0;
    for (std::size_t k = 0; k + 1 < nodes.size(); ++k)
      if (nodes[k].t <= lasso->since) back = k;
    const std::string why = lasso->dead_end
                                ? "nothing left to happen: " + count_of(lasso->backlog, "connection waits", "connections wait") + " forever"
                                : "back to the state at " + at(lasso->since) + ", nothing accepted";
    edges << "  d" << previous << " -> d" << back << " [label=\"" << dot_label({why}) << "\", color=red, style=bold];\n";
  }
  std::ostringstream out;
  out << "digraph decisions {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n"
      << "  edge [fontname=\"monospace\", fontsize=9];\n";
  for (std::size_t k = 0; k < nodes.size(); ++k)
    out << "  d" << k << " [label=\"" << dot_label(nodes[k].label) << "\"" << nodes[k].style << "];\n";
  out << edges.str() << "}\n";
  return out.str();
}

}  // namespace loopsim::checker
