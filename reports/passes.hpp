// A trace seen pass by pass: what each pass of each worker did (its wait, the events it handled,
// its accept batches, the requests it served, the owed flags it left) and every client request
// as a span from its send to its answer. The timeline and the Chrome trace both draw from this.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trace/trace.hpp"

namespace loopsim::reports {

inline constexpr std::size_t no_pass = std::size_t(-1);

struct DoorBatch {
  Door door = Door::listener;
  int accepted = 0;
  BatchStop stop = BatchStop::again;
  bool owed = false;
};

struct ServedRequest {
  sim::ClientIndex client = sim::no_client;
  std::string path;
  Instant begin{};
  Instant end{};
  std::size_t span = std::size_t(-1);  // index into PassView::requests, if matched
};

struct PassSummary {
  int worker = 0;
  std::uint64_t pass = 0;
  Instant begin{};    // the wait started
  Instant woke{};     // the wait returned; equals `end` for a wait still blocked at the horizon
  Instant end{};      // pass_end, or the run's end for a pass that never ended
  std::optional<Duration> timeout = Duration(0);  // the wait's: 0 non-blocking, none forever
  bool finished = false;  // a pass_end was seen
  std::optional<int> exited;  // the process exited during it (a target's), with this status
  bool owed_before = false;  // the worker's previous pass left a door owed
  std::size_t first_event = 0;  // index into Trace::events of its pass_begin
  int listener_events = 0;
  std::vector<std::string> connection_events;  // the client behind each, or "fd N"
  std::vector<DoorBatch> batches;
  std::vector<std::string> accept_errors;  // errno names other than EAGAIN, in order
  bool accept_owed = false;
  bool handoff_owed = false;
  std::vector<ServedRequest> served;  // request_end seen in this pass
  std::vector<sim::ClientIndex> accepted_clients;  // in accept order
  std::vector<std::size_t> arrivals;  // requests sent while this pass ran (PassView::requests)
  // The kernel's side of the pass (sim::ev::Read, Wrote): the bytes read and written on client
  // connections while it was the last pass begun, with the reads and writes, and writes short of
  // what they offered. Answers: complete answers clients received meanwhile, as they count them
  // (a target's pipelined answers in one write are several). Choices that took another than
  // their natural option meanwhile.
  std::int64_t read_bytes = 0, reads = 0, wrote_bytes = 0, writes = 0, short_writes = 0;
  int answers = 0;
  int off_natural = 0;
  int accepted() const;
  int events() const { return listener_events + int(connection_events.size()); }
};

// One client request from its send to its answer.
struct RequestSpan {
  sim::ClientIndex client = sim::no_client;
  std::string path;
  Instant sent{};
  std::optional<Instant> answered;    // none: never answered
  std::size_t sent_pass = no_pass;    // the serving worker's pass in progress at the send
  std::size_t served_pass = no_pass;  // the pass whose request_end answered it
  int worker = 0;                     // the worker that served it (0 if none did)
  std::optional<Instant> served_begin, served_end;  // request_begin and request_end, if served
};

struct PassView {
  std::vector<PassSummary> passes;   // every worker's, in trace order of their pass_begin
  std::vector<RequestSpan> requests;  // in send order
  // At the run's end (sim::ev::Left): bytes clients sent that the server never read, bytes it
  // wrote that they never took, and on how many connections.
  std::int64_t unread = 0, unsent = 0;
  int connections_left = 0;
  int off_natural = 0;  // choices over the whole run that took another than their natural option
  Instant run_end{};
  int workers = 0;
};

PassView view_passes(const sim::Trace& trace);

// A request that took much longer than the typical one to serve: more than 4 times the median
// service time, and at least 1 ms. The seed story's blocker.
struct LongRequestRule {
  Duration threshold{0};
  bool is_long(const ServedRequest& r) const { return r.end - r.begin > threshold; }
  bool is_long(const RequestSpan& r) const {
    return r.served_begin && r.served_end && *r.served_end - *r.served_begin > threshold;
  }
};
LongRequestRule long_request_rule(const PassView& view);

// Groups small enough to name their members one by one (the seed's "fast" and "blocker").
inline constexpr std::int32_t small_group_max = 3;
bool small_group(const sim::Trace& trace, sim::ClientIndex client);

// "1.8 s", "760 ms", "80 us": a time for people, at most 4 significant digits.
std::string show_time(Duration t);
// An instant as its time since the run's start, as show_time writes it.
inline std::string show_time(Instant t) { return show_time(since_start(t)); }
// "610–1810 ms", or one time when both are equal.
std::string show_range(Duration from, Duration to);
inline std::string show_range(Instant from, Instant to) { return show_range(since_start(from), since_start(to)); }
// The wait's timeout for people: "forever", "0 (non-blocking)", "1 s".
std::string show_timeout(std::optional<Duration> timeout);

}  // namespace loopsim::reports
