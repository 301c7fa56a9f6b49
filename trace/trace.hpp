// What a run did, as a sequence of events in virtual time. The loop's own reports (passes,
// events, accepts, batches, requests, closes) and what the clients saw (connects, dropped SYNs,
// sends, answers) in one order. Properties in checker/ are pure functions of a Trace.
// Written as JSON Lines; the schema is docs/trace.md.
#pragma once

#include <climits>
#include <cstdint>
#include <optional>
#include <deque>
#include <iosfwd>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "realloop/kernel.hpp"
#include "base/compact.hpp"
#include "realloop/observer.hpp"

namespace loopsim::sim {

// A client connection, by index into Trace::clients.
using ClientIndex = std::int32_t;
inline constexpr ClientIndex no_client = -1;

// The errno names the trace uses, both ways.
const char* errno_name(int error);  // "EMFILE", ...; "EOTHER" for the rest
// A trace's strings are bytes: in the JSON lines each byte above 0x7e is the character of the
// same number (U+0080..U+00FF). This turns such characters, as UTF-8, back into their bytes.
std::string latin1_bytes(std::string_view utf8);
// Bytes for a person, in a label or a line of text: printable ASCII as it is, a backslash
// doubled, \r \n \t as written in C, any other byte as \xHH ("PING\r\n", "\xc0\x00").
std::string shown_bytes(std::string_view bytes);
int errno_from_name(const std::string& name);  // 0 when unknown

using base::Text;
using FdList = base::IntList;

namespace ev {
inline std::int32_t work_count(std::uint64_t calls) {
  return calls > std::uint64_t(INT32_MAX) ? INT32_MAX : std::int32_t(calls);
}
// `timeout`: the wait's; none, it waited until something was ready (the file writes -1).
struct PassBegin { Instant t; int worker; std::uint64_t pass; std::optional<Duration> timeout; };
// `work`: the calls that got something done between the thread's previous wait and this one,
// counted by the kernel (SimKernel::work_before_wait, through work_count: a count past 2^31 - 1
// is kept as that); -1 where unknown (an older trace).
struct Events { Instant t; int worker; std::uint64_t pass; FdList fds; std::int32_t work = -1; };
struct Accept { Instant t; int worker; Door door; int result; ClientIndex client; };
struct BatchEnd { Instant t; int worker; Door door; int accepted; BatchStop stop; bool owed; };
struct RequestBegin { Instant t; int worker; int fd; ClientIndex client; Text path; };
struct RequestEnd { Instant t; int worker; int fd; ClientIndex client; int status; };
struct Close { Instant t; int worker; int fd; ClientIndex client; };
struct PassEnd { Instant t; int worker; std::uint64_t pass; bool accept_owed; bool handoff_owed; };
// The client side.
struct Connect { Instant t; ClientIndex client; };
struct Established { Instant t; ClientIndex client; };
struct SynDropped { Instant t; ClientIndex client; Instant retry_at; };
struct Refused { Instant t; ClientIndex client; int error; };
struct Send { Instant t; ClientIndex client; Text path; };
struct Answer { Instant t; ClientIndex client; Text path; int status; };
struct PeerClosed { Instant t; ClientIndex client; };
// Bytes the client received that do not frame as an answer by its group's framing: from the
// first byte that cannot be framed, or those of an answer still incomplete at the run's end
// while requests wait. The first AnswerStream::unframed_kept of them.
struct Unframed { Instant t; ClientIndex client; Text bytes; };
// A choice point's decision (model/choice.hpp): `kind`, one of `options`, `pick` taken.
struct Choice { Instant t; std::uint8_t kind; std::uint32_t options; std::uint32_t pick; };
// A fault landing: the descriptor limit changed, or a client reset its connection.
struct Rlimit { Instant t; std::int64_t value; };
struct Reset { Instant t; ClientIndex client; };
// R7: a foreign thread posted (poster names its [[posters]] entry); the post's callback began
// running on a loop; a loop drained posts.
struct Post { Instant t; std::int64_t id; Text poster; };
struct PostRun { Instant t; int worker; std::int64_t id; };
struct Drain { Instant t; int worker; DrainPoint point; int count; };
// R9: the handle table was full: a connection refused (reset), or accepting held back.
struct Refuse { Instant t; int worker; int fd; ClientIndex client; };
struct Backpressure { Instant t; int worker; int held; };
// R5: shutdown.
struct ShutdownBegin { Instant t; int worker; };
struct ListenerClosed { Instant t; int worker; };
struct LoopExit { Instant t; int worker; int open_connections; };
// R10: a connection handed from one worker to another.
struct Handoff { Instant t; int worker; int to; ClientIndex client; };
// A target program ended before the run did: it exited with `status` (exit, _exit or a return
// from main), or a signal's default action ended it (`signal`, and `status` 128 + it, as a
// shell reports it).
struct ProcessExit { Instant t; int status; int signal = 0; };
// A child a target started (fork, system, popen, posix_spawn) ran to its end as `call` returned
// (posix/processes.cpp): it exited with `status`, or `signal` ended it (`status` 128 + it).
struct Child { Instant t; int worker; int status; int signal = 0; Text call; };
// A target's thread ran sim::spin_slice of its own CPU time without a call, and gave way for
// sim::spin_cost of virtual time (a spin on a lock another thread holds).
struct GaveWay { Instant t; int worker; };
// The bytes, from the kernel's side, on a client's connection: a read the server made (`size`
// asked for; `result` the bytes it took, 0 at the end of the stream, or -errno), or a write
// (`size` offered; `result` the bytes the send buffer took, or -errno). A short write is a
// result below its size.
struct Read { Instant t; ClientIndex client; std::int64_t size; std::int64_t result; };
struct Wrote { Instant t; ClientIndex client; std::int64_t size; std::int64_t result; };
// At the run's end, a connection that still holds bytes: `unread`, sent by the client and never
// read by the server; `unsent`, written by the server and never taken by the client.
struct Left { Instant t; ClientIndex client; std::int64_t unread; std::int64_t unsent; };
// A shutdown asked of the server (a scenario's action; live, the signal): when R5's clock starts.
struct ShutdownAsked { Instant t; };
// Liveness (a scenario that expects "liveness"): the run came back at `t` to a state it was in
// at `since`, with `backlog` connections waiting and none accepted in between, so they wait
// forever; or (`dead_end`) nothing was left to happen while they waited.
struct Lasso { Instant t; Instant since; std::int64_t backlog; bool dead_end; };
// The state at the end of the run.
struct RunEnd {
  Instant t;
  std::int64_t backlog;           // connections still queued on the listener
  std::int64_t open_connections;  // held by the loops
  std::int64_t handoffs;          // handed over and not yet admitted
  std::int64_t open_descriptors;  // in the server process, beyond the standard streams
};
}  // namespace ev

using TraceEvent =
    std::variant<ev::PassBegin, ev::Events, ev::Accept, ev::BatchEnd, ev::RequestBegin,
                 ev::RequestEnd, ev::Close, ev::PassEnd, ev::Connect, ev::Established,
                 ev::SynDropped, ev::Refused, ev::Send, ev::Answer, ev::PeerClosed, ev::Choice,
                 ev::Rlimit, ev::Reset, ev::Post, ev::PostRun, ev::Drain, ev::Refuse,
                 ev::Backpressure, ev::ShutdownBegin, ev::ListenerClosed, ev::LoopExit,
                 ev::Handoff, ev::ProcessExit, ev::Lasso, ev::RunEnd, ev::ShutdownAsked, ev::Unframed,
                 ev::Child, ev::GaveWay, ev::Read, ev::Wrote, ev::Left>;

// Every kind within 40 bytes (Text and FdList keep strings and lists small): an event costs 48.
static_assert(sizeof(TraceEvent) == 48);

// Which kinds of event a run records: bit i stands for TraceEvent's alternative i. A run at
// --trace-level verdicts keeps only what the properties it judges read (checker::events_needed).
using EventMask = std::uint64_t;
inline constexpr EventMask all_events = ~EventMask(0);
static_assert(std::variant_size_v<TraceEvent> <= 64);

template <class E>
constexpr EventMask event_bit() {
  return []<std::size_t... I>(std::index_sequence<I...>) {
    return ((std::is_same_v<E, std::variant_alternative_t<I, TraceEvent>> ? EventMask(1) << I : 0) | ...);
  }(std::make_index_sequence<std::variant_size_v<TraceEvent>>{});
}
// The bytes of each read and write, and what is left at the end: for a person (the story, the
// timeline); no property reads them, so a run kept to its verdicts never records them.
inline constexpr EventMask byte_events = event_bit<ev::Read>() | event_bit<ev::Wrote>() | event_bit<ev::Left>();

struct ClientLabel {
  std::int32_t group;  // index into Trace::groups
  std::int32_t member;
  std::int32_t requests;  // requests the client means to send
};

struct Trace {
  std::string scenario;
  std::string arm;
  std::uint64_t seed = 0;
  Instant horizon{};
  int listener_fd = -1;
  std::int64_t accept_batch = 0;  // the loop's configured batch, for bounds in "batches"
  std::int64_t max_connections = 0;
  std::int64_t workers = 1;
  // A run stopped before its horizon: what stopped it (its trace limit, or time standing
  // still). Empty: it ran to its horizon. Properties that need the end are then undecided.
  std::string cut;
  bool stalled = false;  // ...because virtual time stood still (a livelock), not its size
  // The run watched its own states for a lasso (it expected liveness): only then does the
  // absence of a lasso event say anything.
  bool liveness_watched = false;
  std::vector<std::string> groups;
  std::vector<std::int32_t> group_sizes;  // members per group
  std::vector<ClientLabel> clients;
  // A deque, not a vector: a run's trace grows by whole blocks, never copied to a buffer twice its
  // size (at a vector's growth the old and the new buffer are live at once, and a million held
  // connections' trace would peak at three times its size).
  std::deque<TraceEvent> events;
  // What this trace records (all of it unless a run was asked for less), and the one way a
  // run adds an event: one of a kind the mask leaves out is dropped.
  EventMask keep = all_events;
  template <class E>
  bool keeps() const { return (keep & event_bit<E>()) != 0; }
  void add(TraceEvent event) {
    if ((keep >> event.index()) & 1) events.push_back(std::move(event));
  }

  std::string client_name(ClientIndex client) const;  // "burst#3", or "fast" for a group of one
  const std::string& group_of(ClientIndex client) const;
};

Instant time_of(const TraceEvent& event);
// The event's kind as written in the trace ("pass_begin", "accept", ...).
// The trace's schema of event kinds: the `ev` of each JSON line, by TraceEvent's alternative.
// The writer (trace/trace.cpp) and the one reader (trace/trace_reader.cpp) both take names from here.
inline constexpr std::string_view event_kinds[] = {
    "pass_begin",  // ev::PassBegin
    "events",  // ev::Events
    "accept",  // ev::Accept
    "batch_end",  // ev::BatchEnd
    "request_begin",  // ev::RequestBegin
    "request_end",  // ev::RequestEnd
    "close",  // ev::Close
    "pass_end",  // ev::PassEnd
    "connect",  // ev::Connect
    "established",  // ev::Established
    "syn_dropped",  // ev::SynDropped
    "refused",  // ev::Refused
    "send",  // ev::Send
    "answer",  // ev::Answer
    "peer_closed",  // ev::PeerClosed
    "choice",  // ev::Choice
    "rlimit",  // ev::Rlimit
    "reset",  // ev::Reset
    "post",  // ev::Post
    "post_run",  // ev::PostRun
    "drain",  // ev::Drain
    "refuse",  // ev::Refuse
    "backpressure",  // ev::Backpressure
    "shutdown_begin",  // ev::ShutdownBegin
    "listener_closed",  // ev::ListenerClosed
    "loop_exit",  // ev::LoopExit
    "handoff",  // ev::Handoff
    "process_exit",  // ev::ProcessExit
    "lasso",  // ev::Lasso
    "run_end",  // ev::RunEnd
    "shutdown_asked",  // ev::ShutdownAsked
    "unframed",  // ev::Unframed
    "child",  // ev::Child
    "gave_way",  // ev::GaveWay
    "read",  // ev::Read
    "write",  // ev::Wrote
    "left",  // ev::Left
};
static_assert(std::size(event_kinds) == std::variant_size_v<TraceEvent>, "a name for every kind of event");
const char* kind_of(const TraceEvent& event);

// JSON Lines: a header line, then one event a line. Byte-identical for identical traces.
void write_jsonl(const Trace& trace, std::ostream& out);
std::string event_json(const Trace& trace, const TraceEvent& event);

}  // namespace loopsim::sim
