#include "trace/trace.hpp"

#include "model/choice.hpp"

#include <algorithm>
#include <cstring>
#include <ostream>

namespace loopsim::sim {

namespace {

struct ErrnoName {
  int error;
  const char* name;
};
constexpr ErrnoName errno_names[] = {
    {EAGAIN, "EAGAIN"},           {EMFILE, "EMFILE"},         {ENFILE, "ENFILE"},
    {ENOBUFS, "ENOBUFS"},         {ECONNABORTED, "ECONNABORTED"}, {ECONNRESET, "ECONNRESET"},
    {ECONNREFUSED, "ECONNREFUSED"}, {ETIMEDOUT, "ETIMEDOUT"}, {EBADF, "EBADF"},
    {EINVAL, "EINVAL"},           {EPIPE, "EPIPE"},
};

template <class... F>
struct overloaded : F... {
  using F::operator()...;
};
template <class... F>
overloaded(F...) -> overloaded<F...>;

// `s` as a JSON string, quotes and control characters escaped.
void append_quoted(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) {
      // Control bytes, and every byte above 0x7e: a request's or an answer's bytes need not be
      // UTF-8, and a JSON text must be. Each is one character of U+0000..U+00FF.
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", unsigned(static_cast<unsigned char>(c)));
      out += buffer;
    } else {
      out += c;
    }
  }
  out += '"';
}

// A JSON object written field by field, in a fixed order.
class Line {
 public:
  Line(Instant t, const char* kind) {
    out_ = "{\"t\":" + std::to_string(since_start(t).count()) + ",\"ev\":\"" + kind + '"';
  }
  Line& num(const char* key, std::int64_t value) {
    key_(key);
    out_ += std::to_string(value);
    return *this;
  }
  Line& flag(const char* key, bool value) {
    key_(key);
    out_ += value ? "true" : "false";
    return *this;
  }
  Line& str(const char* key, std::string_view value) {
    key_(key);
    quote(value);
    return *this;
  }
  Line& client(const Trace& trace, ClientIndex client) {
    return client == no_client ? *this : str("client", trace.client_name(client));
  }
  Line& fds(const FdList& fds) {
    key_("fds");
    out_ += '[';
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (i > 0) out_ += ',';
      out_ += std::to_string(fds[i]);
    }
    out_ += ']';
    return *this;
  }
  std::string done() { return out_ + '}'; }

 private:
  void key_(const char* key) {
    out_ += ",\"";
    out_ += key;
    out_ += "\":";
  }
  void quote(std::string_view s) { append_quoted(out_, s); }
  std::string out_;
};

// A read's or a write's size and result: the bytes moved, or (result -errno) 0 and the errno's
// name in "error".
void bytes_moved(Line& line, const char* size_key, const char* moved_key, std::int64_t size, std::int64_t result) {
  line.num(size_key, size).num(moved_key, std::max<std::int64_t>(result, 0));
  if (result < 0) line.str("error", errno_name(int(-result)));
}

}  // namespace

std::string latin1_bytes(std::string_view utf8) {
  std::string bytes;
  bytes.reserve(utf8.size());
  for (std::size_t i = 0; i < utf8.size(); ++i) {
    const auto lead = static_cast<unsigned char>(utf8[i]);
    // U+0080..U+00FF is two bytes, 110000xx 10xxxxxx: one byte again.
    if ((lead == 0xc2 || lead == 0xc3) && i + 1 < utf8.size() && (static_cast<unsigned char>(utf8[i + 1]) & 0xc0) == 0x80) {
      bytes += char(((lead & 0x03) << 6) | (static_cast<unsigned char>(utf8[i + 1]) & 0x3f));
      ++i;
    } else {
      bytes += utf8[i];
    }
  }
  return bytes;
}

std::string shown_bytes(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\r': out += "\\r"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (b >= 0x20 && b <= 0x7e) {
          out += c;
        } else {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\x%02x", unsigned(b));
          out += buffer;
        }
    }
  }
  return out;
}

const char* errno_name(int error) {
  for (const auto& e : errno_names) {
    if (e.error == error) return e.name;
  }
  return "EOTHER";
}

int errno_from_name(const std::string& name) {
  for (const auto& e : errno_names) {
    if (name == e.name) return e.error;
  }
  return 0;
}

std::string Trace::client_name(ClientIndex client) const {
  const ClientLabel& label = clients.at(std::size_t(client));
  const std::string& group = groups.at(std::size_t(label.group));
  bool alone = group_sizes.at(std::size_t(label.group)) == 1;
  return alone ? group : group + "#" + std::to_string(label.member);
}

const std::string& Trace::group_of(ClientIndex client) const {
  return groups.at(std::size_t(clients.at(std::size_t(client)).group));
}

Instant time_of(const TraceEvent& event) {
  return std::visit([](const auto& e) { return e.t; }, event);
}

const char* kind_of(const TraceEvent& event) { return event_kinds[event.index()].data(); }

std::string event_json(const Trace& trace, const TraceEvent& event) {
  Line line(time_of(event), kind_of(event));
  std::visit(
      overloaded{
          [&](const ev::PassBegin& e) {
            line.num("worker", e.worker).num("pass", std::int64_t(e.pass));
            line.num("timeout_ns", e.timeout ? e.timeout->count() : -1);
          },
          [&](const ev::Events& e) {
            line.num("worker", e.worker).num("pass", std::int64_t(e.pass));
            line.num("count", std::int64_t(e.fds.size())).fds(e.fds);
            if (e.work >= 0) line.num("work", e.work);
          },
          [&](const ev::Accept& e) {
            line.num("worker", e.worker).str("door", door_name(e.door));
            if (e.result >= 0) {
              line.str("outcome", "ok").num("fd", e.result);
            } else {
              line.str("outcome", errno_name(-e.result));
            }
            line.client(trace, e.client);
          },
          [&](const ev::BatchEnd& e) {
            line.num("worker", e.worker).str("door", door_name(e.door));
            line.num("accepted", e.accepted).str("stop", batch_stop_name(e.stop));
            line.flag("owed", e.owed);
          },
          [&](const ev::RequestBegin& e) {
            line.num("worker", e.worker).num("fd", e.fd).client(trace, e.client);
            line.str("path", e.path);
          },
          [&](const ev::RequestEnd& e) {
            line.num("worker", e.worker).num("fd", e.fd).client(trace, e.client);
            line.num("status", e.status);
          },
          [&](const ev::Close& e) {
            line.num("worker", e.worker).num("fd", e.fd).client(trace, e.client);
          },
          [&](const ev::PassEnd& e) {
            line.num("worker", e.worker).num("pass", std::int64_t(e.pass));
            line.flag("accept_owed", e.accept_owed).flag("handoff_owed", e.handoff_owed);
          },
          [&](const ev::Connect& e) { line.client(trace, e.client); },
          [&](const ev::Established& e) { line.client(trace, e.client); },
          [&](const ev::SynDropped& e) {
            line.client(trace, e.client).num("retry_at", since_start(e.retry_at).count());
          },
          [&](const ev::Refused& e) { line.client(trace, e.client).str("error", errno_name(e.error)); },
          [&](const ev::Send& e) { line.client(trace, e.client).str("path", e.path); },
          [&](const ev::Answer& e) {
            line.client(trace, e.client).str("path", e.path).num("status", e.status);
          },
          [&](const ev::PeerClosed& e) { line.client(trace, e.client); },
          [&](const ev::Choice& e) {
            line.str("kind", model::choice_kind_name(model::ChoiceKind(e.kind)));
            line.num("options", e.options).num("pick", e.pick);
          },
          [&](const ev::Rlimit& e) { line.num("value", e.value); },
          [&](const ev::Reset& e) { line.client(trace, e.client); },
          [&](const ev::Post& e) { line.num("id", e.id).str("poster", e.poster); },
          [&](const ev::PostRun& e) { line.num("worker", e.worker).num("id", e.id); },
          [&](const ev::Drain& e) {
            line.num("worker", e.worker).str("point", drain_point_name(e.point)).num("count", e.count);
          },
          [&](const ev::Refuse& e) {
            line.num("worker", e.worker).num("fd", e.fd).client(trace, e.client);
          },
          [&](const ev::Backpressure& e) { line.num("worker", e.worker).num("held", e.held); },
          [&](const ev::ShutdownBegin& e) { line.num("worker", e.worker); },
          [&](const ev::ListenerClosed& e) { line.num("worker", e.worker); },
          [&](const ev::LoopExit& e) {
            line.num("worker", e.worker).num("open_connections", e.open_connections);
          },
          [&](const ev::Handoff& e) {
            line.num("worker", e.worker).num("to", e.to).client(trace, e.client);
          },
          [&](const ev::ProcessExit& e) {
            line.num("status", e.status);
            if (e.signal != 0) line.num("signal", e.signal);
          },
          [&](const ev::ShutdownAsked&) {},
          [&](const ev::Child& e) {
            line.num("worker", e.worker).str("call", e.call).num("status", e.status);
            if (e.signal != 0) line.num("signal", e.signal);
          },
          [&](const ev::GaveWay& e) { line.num("worker", e.worker); },
          [&](const ev::Read& e) { bytes_moved(line.client(trace, e.client), "asked", "got", e.size, e.result); },
          [&](const ev::Wrote& e) { bytes_moved(line.client(trace, e.client), "offered", "took", e.size, e.result); },
          [&](const ev::Left& e) { line.client(trace, e.client).num("unread", e.unread).num("unsent", e.unsent); },
          [&](const ev::Unframed& e) { line.client(trace, e.client).str("bytes", e.bytes); },
          [&](const ev::Lasso& e) {
            line.num("since", since_start(e.since).count()).num("backlog", e.backlog);
            line.num("dead_end", e.dead_end ? 1 : 0);
          },
          [&](const ev::RunEnd& e) {
            line.num("backlog", e.backlog).num("open_connections", e.open_connections);
            line.num("handoffs", e.handoffs).num("open_descriptors", e.open_descriptors);
          },
      },
      event);
  return line.done();
}

void write_jsonl(const Trace& trace, std::ostream& out) {
  std::string names;  // a scenario or arm name may hold quotes or control characters
  names += ",\"scenario\":";
  append_quoted(names, trace.scenario);
  names += ",\"arm\":";
  append_quoted(names, trace.arm);
  out << "{\"loopsim_trace\":1" << names << ",\"seed\":" << trace.seed << ",\"horizon_ns\":" << since_start(trace.horizon).count()
      << ",\"listener_fd\":" << trace.listener_fd << ",\"accept_batch\":" << trace.accept_batch
      << ",\"max_connections\":" << trace.max_connections << ",\"workers\":" << trace.workers;
  if (trace.liveness_watched) out << ",\"liveness_watched\":true";
  // A trace that keeps less (--trace-level verdicts) says which kinds it kept, bit i for event
  // kind i in the order of trace.md's table.
  if (trace.keep != all_events) out << ",\"keep\":" << trace.keep;
  if (!trace.cut.empty()) {
    std::string cut;
    append_quoted(cut, trace.cut);
    out << ",\"cut\":" << cut;
    if (trace.stalled) out << ",\"stalled\":true";
  }
  out << "}\n";
  for (const TraceEvent& event : trace.events) out << event_json(trace, event) << '\n';
}

}  // namespace loopsim::sim
