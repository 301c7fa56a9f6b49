#include "trace/trace_codec.hpp"

#include <cstring>
#include <stdexcept>
#include <type_traits>

namespace loopsim::sim {

namespace {

// Each event's fields, in declaration order, for a visitor that reads or writes them all.
template <class F> void fields(ev::PassBegin& e, F&& f) { f(e.t, e.worker, e.pass, e.timeout); }
template <class F> void fields(ev::Events& e, F&& f) { f(e.t, e.worker, e.pass, e.fds, e.work); }
template <class F> void fields(ev::Accept& e, F&& f) { f(e.t, e.worker, e.door, e.result, e.client); }
template <class F> void fields(ev::BatchEnd& e, F&& f) { f(e.t, e.worker, e.door, e.accepted, e.stop, e.owed); }
template <class F> void fields(ev::RequestBegin& e, F&& f) { f(e.t, e.worker, e.fd, e.client, e.path); }
template <class F> void fields(ev::RequestEnd& e, F&& f) { f(e.t, e.worker, e.fd, e.client, e.status); }
template <class F> void fields(ev::Close& e, F&& f) { f(e.t, e.worker, e.fd, e.client); }
template <class F> void fields(ev::PassEnd& e, F&& f) { f(e.t, e.worker, e.pass, e.accept_owed, e.handoff_owed); }
template <class F> void fields(ev::Connect& e, F&& f) { f(e.t, e.client); }
template <class F> void fields(ev::Established& e, F&& f) { f(e.t, e.client); }
template <class F> void fields(ev::SynDropped& e, F&& f) { f(e.t, e.client, e.retry_at); }
template <class F> void fields(ev::Refused& e, F&& f) { f(e.t, e.client, e.error); }
template <class F> void fields(ev::Send& e, F&& f) { f(e.t, e.client, e.path); }
template <class F> void fields(ev::Answer& e, F&& f) { f(e.t, e.client, e.path, e.status); }
template <class F> void fields(ev::PeerClosed& e, F&& f) { f(e.t, e.client); }
template <class F> void fields(ev::Choice& e, F&& f) { f(e.t, e.kind, e.options, e.pick); }
template <class F> void fields(ev::Rlimit& e, F&& f) { f(e.t, e.value); }
template <class F> void fields(ev::Reset& e, F&& f) { f(e.t, e.client); }
template <class F> void fields(ev::Post& e, F&& f) { f(e.t, e.id, e.poster); }
template <class F> void fields(ev::PostRun& e, F&& f) { f(e.t, e.worker, e.id); }
template <class F> void fields(ev::Drain& e, F&& f) { f(e.t, e.worker, e.point, e.count); }
template <class F> void fields(ev::Refuse& e, F&& f) { f(e.t, e.worker, e.fd, e.client); }
template <class F> void fields(ev::Backpressure& e, F&& f) { f(e.t, e.worker, e.held); }
template <class F> void fields(ev::ShutdownBegin& e, F&& f) { f(e.t, e.worker); }
template <class F> void fields(ev::ListenerClosed& e, F&& f) { f(e.t, e.worker); }
template <class F> void fields(ev::LoopExit& e, F&& f) { f(e.t, e.worker, e.open_connections); }
template <class F> void fields(ev::ProcessExit& e, F&& f) { f(e.t, e.status, e.signal); }
template <class F> void fields(ev::ShutdownAsked& e, F&& f) { f(e.t); }
template <class F> void fields(ev::Child& e, F&& f) { f(e.t, e.worker, e.status, e.signal, e.call); }
template <class F> void fields(ev::GaveWay& e, F&& f) { f(e.t, e.worker); }
template <class F> void fields(ev::Read& e, F&& f) { f(e.t, e.client, e.size, e.result); }
template <class F> void fields(ev::Wrote& e, F&& f) { f(e.t, e.client, e.size, e.result); }
template <class F> void fields(ev::Left& e, F&& f) { f(e.t, e.client, e.unread, e.unsent); }
template <class F> void fields(ev::Unframed& e, F&& f) { f(e.t, e.client, e.bytes); }
template <class F> void fields(ev::Handoff& e, F&& f) { f(e.t, e.worker, e.to, e.client); }
template <class F> void fields(ev::Lasso& e, F&& f) { f(e.t, e.since, e.backlog, e.dead_end); }
template <class F> void fields(ev::RunEnd& e, F&& f) {
  f(e.t, e.backlog, e.open_connections, e.handoffs, e.open_descriptors);
}

class Writer {
 public:
  template <class... T>
  void operator()(const T&... values) { (put(values), ...); }
  std::string bytes;

 private:
  template <class T>
  void put(const T& value) {
    if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, Text>) {
      put(std::uint32_t(value.size()));
      bytes.append(std::string_view(value));
    } else if constexpr (std::is_same_v<T, FdList>) {
      put(std::uint32_t(value.size()));
      for (int v : value) put(v);
    } else if constexpr (std::is_same_v<T, Instant>) {
      put(std::int64_t(since_start(value).count()));  // nanoseconds since the run's start
    } else if constexpr (std::is_same_v<T, std::optional<Duration>>) {
      put(std::int64_t(value ? value->count() : -1));  // none, as the trace file writes it
    } else {
      static_assert(std::is_trivially_copyable_v<T>);
      bytes.append(reinterpret_cast<const char*>(&value), sizeof value);
    }
  }
};

class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  template <class... T>
  void operator()(T&... values) { (get(values), ...); }
  bool done() const { return at_ == bytes_.size(); }
  // `n` items of at least `each` bytes must still be there: a count is believed no further than
  // the bytes that follow it (a target's process may send anything).
  void need_items(std::uint64_t n, std::size_t each) const {
    if (n > (bytes_.size() - at_) / each) throw std::runtime_error("a trace's bytes count more items than they hold");
  }

 private:
  void need(std::size_t n) const {
    if (bytes_.size() - at_ < n) throw std::runtime_error("a trace's bytes end in the middle of an event");
  }
  template <class T>
  void get(T& value) {
    if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, Text>) {
      std::uint32_t n = 0;
      get(n);
      need(n);
      value = T(bytes_.substr(at_, n));
      at_ += n;
    } else if constexpr (std::is_same_v<T, FdList>) {
      std::uint32_t n = 0;
      get(n);
      need(std::size_t(n) * sizeof(int));
      value.clear();
      for (std::uint32_t i = 0; i < n; ++i) {
        int v = 0;
        get(v);
        value.push_back(v);
      }
    } else if constexpr (std::is_same_v<T, Instant>) {
      std::int64_t ns = 0;
      get(ns);
      value = Instant(Duration(ns));
    } else if constexpr (std::is_same_v<T, std::optional<Duration>>) {
      std::int64_t ns = 0;
      get(ns);
      if (ns < -1) throw std::runtime_error("a trace's bytes hold a timeout below -1");
      value = ns < 0 ? std::nullopt : std::optional<Duration>(Duration(ns));
    } else {
      need(sizeof value);
      std::memcpy(&value, bytes_.data() + at_, sizeof value);
      at_ += sizeof value;
    }
  }
  std::string_view bytes_;
  std::size_t at_ = 0;
};

template <std::size_t I = 0>
TraceEvent event_of_index(std::size_t index) {
  if constexpr (I < std::variant_size_v<TraceEvent>) {
    if (index == I) return TraceEvent(std::in_place_index<I>);
    return event_of_index<I + 1>(index);
  } else {
    throw std::runtime_error("a trace's bytes name no kind of event");
  }
}

}  // namespace

std::string encode_trace(const Trace& trace) {
  Writer w;
  w(trace.scenario, trace.arm, trace.seed, trace.horizon, trace.listener_fd, trace.accept_batch,
    trace.max_connections, trace.workers, trace.cut, trace.stalled, trace.liveness_watched, trace.keep);
  w(std::uint32_t(trace.groups.size()));
  for (std::size_t i = 0; i < trace.groups.size(); ++i) w(trace.groups[i], trace.group_sizes.at(i));
  w(std::uint32_t(trace.clients.size()));
  for (const ClientLabel& c : trace.clients) w(c.group, c.member, c.requests);
  w(std::uint64_t(trace.events.size()));
  for (const TraceEvent& event : trace.events) {
    w(std::uint8_t(event.index()));
    // fields() hands out references for reading and writing alike; the writer only reads.
    std::visit([&w](const auto& e) { fields(const_cast<std::decay_t<decltype(e)>&>(e), w); }, event);
  }
  return std::move(w.bytes);
}

Trace decode_trace(std::string_view bytes) {
  Reader r(bytes);
  Trace trace;
  r(trace.scenario, trace.arm, trace.seed, trace.horizon, trace.listener_fd, trace.accept_batch,
    trace.max_connections, trace.workers, trace.cut, trace.stalled, trace.liveness_watched, trace.keep);
  std::uint32_t groups = 0, clients = 0;
  r(groups);
  r.need_items(groups, sizeof(std::uint32_t) + sizeof(int));  // a name's length, a size
  trace.groups.resize(groups);
  trace.group_sizes.resize(groups);
  for (std::uint32_t i = 0; i < groups; ++i) r(trace.groups[i], trace.group_sizes[i]);
  r(clients);
  r.need_items(clients, 3 * sizeof(std::int32_t));
  trace.clients.resize(clients);
  for (ClientLabel& c : trace.clients) r(c.group, c.member, c.requests);
  std::uint64_t events = 0;
  r(events);
  r.need_items(events, 1);  // a kind byte at least
  for (std::uint64_t i = 0; i < events; ++i) {
    std::uint8_t kind = 0;
    r(kind);
    TraceEvent event = event_of_index(kind);
    std::visit([&r](auto& e) { fields(e, r); }, event);
    trace.events.push_back(std::move(event));
  }
  if (!r.done()) throw std::runtime_error("a trace's bytes go on after its last event");
  return trace;
}

}  // namespace loopsim::sim
