// The loop's knobs. Every rule has one that turns it off, so that each rule can be sabotaged
// and each checker shown to catch the sabotage.
#pragma once

#include <cstdint>

#include "realloop/kernel.hpp"

namespace loopsim {

enum class HandlePolicy : std::uint8_t {
  fixed,   // max_handles, whatever the process may open
  rlimit,  // sized from RLIMIT_NOFILE at construction: two handles per descriptor
  grow,    // grows on demand; never full
};

enum class OnFull : std::uint8_t {
  refuse,        // accept and reset: the client sees a reset
  backpressure,  // stop accepting; the connections stay queued; the door is owed when room frees
};

enum class HandlerMode : std::uint8_t {
  loop_only,  // handlers run on the loop's thread
  pool,       // handlers run on a pool of threads; answers come back as posts (R11)
};

struct LoopConfig {
  // R1: at most this many accepts per door per pass; 0 drains until EAGAIN (bounded only by
  // max_connections).
  int accept_batch = 16;
  // R1: take the batch after the pass's other events; false takes it at the listen event's
  // position in the list the wait returned.
  bool accept_after_events = true;
  // R2: a batch stopped by its count leaves the door owed; false owes nothing.
  bool owe_unfinished_batch = true;
  // R2: the wait does not block while a door is owed; false blocks for idle_timeout.
  bool nonblocking_wait_when_owed = true;
  // R3 sabotage: EMFILE/ENFILE leave the door owed, so every pass retries and none blocks.
  bool owe_after_emfile = false;
  // R4: after EMFILE/ENFILE, accept again when a descriptor is freed or after the back-off;
  // false: wait for the listener's next edge, which a queued backlog never sends.
  bool emfile_retry = true;
  Duration emfile_backoff = std::chrono::milliseconds(100);
  // R5 sabotage: false leaves the owed flags set at shutdown (the drain accepts on a closed
  // listener), and drops connections handed over but not yet admitted.
  bool shutdown_clears_owed = true;
  bool shutdown_admits_handoffs = true;
  // R5: what the shutdown admits is served after the listener's close, so that no handler's
  // time passes between the last accept and the close; false (sabotage): served on admission.
  bool shutdown_serves_after_close = true;
  // R5: shutdown admits what siblings handed over past max_connections and a full handle table;
  // false (sabotage) stops at them and leaves the rest waiting. (The loop before loopsim
  // generate found this retried its admission forever, inside one pass: the process hung.)
  bool shutdown_admits_past_capacity = true;
  // R5 with several workers: a shutdown requested while a pass ran begins before that pass's
  // batches, and stops a batch under way (a handler it served may have outlasted it), so that
  // no worker accepts on a listener its owner has closed meanwhile; false
  // (sabotage, the loop before loopsim generate found it): the batch is taken (EBADF, or worse,
  // a descriptor the number was reused for).
  bool shutdown_before_batches = true;
  // R5: the listener's event in the pass whose handlers saw the shutdown asked is dropped with
  // the listener's close. false (sabotage, the loop before `loopsim generate` found it): that
  // pass's batch is taken on the closed descriptor.
  bool shutdown_drops_listener_event = true;
  // R9 and max_connections: a batch stopped because the loop holds max_connections, or because
  // its table is full, is taken again, at either door, when a connection closes; false
  // (sabotage, the loop before loopsim generate found it): only a back-pressured listener is,
  // so a backlog behind max_connections, or a hand-off behind a full table, waits for an edge
  // that never comes.
  bool owe_when_room = true;
  // R4 for ENOBUFS, which leaves the connection queued as EMFILE does: retried on a freed
  // descriptor or after the back-off; false (sabotage, the loop before loopsim generate found
  // it): the batch stops with nothing owed and no retry, and the backlog strands.
  bool enobufs_retry = true;
  // R6: passes are run by an outside scheduler (run_pass_once); it keeps running passes while
  // a door is owed, up to max_connections accepts. false for inverted_owed_passes: one pass a
  // call, so an owed batch waits for unrelated activity.
  bool inverted = false;
  bool inverted_owed_passes = true;
  // R6 with R8: a connection's owed turn keeps the passes coming too; false (sabotage, as the
  // loop was until loopsim generate found it): only an owed door does, so pipelined requests
  // past the yield batch wait for the outside scheduler's next tick.
  bool inverted_owes_turns = true;
  // R7: posts from other threads are drained at the top of every round and every drain_chunk
  // callbacks within a batch (never after its last); 0 drains only at the top.
  int drain_chunk = 8;
  // R8: pipelined requests served per connection per turn; the rest wait for its next turn,
  // which comes in the next pass (the connection is owed one). 0: no bound.
  int yield_batch = 16;
  // R9: the handle table. A connection costs two handles.
  int max_handles = 65536;
  HandlePolicy handle_policy = HandlePolicy::rlimit;
  OnFull on_full = OnFull::backpressure;
  // R10: hand accepted connections to siblings that have not been inside one pass for more
  // than share_busy.
  bool accept_share = true;
  Duration share_busy = std::chrono::milliseconds(2);
  // R10: max_connections is per worker, so N workers hold N x max_connections. The accepting
  // worker hands a connection only to a worker with room (held and handed over, below
  // max_connections), and stops its batch only when no worker has room. false (sabotage): it
  // stops when it holds max_connections itself, and connections wait in the listen queue while
  // siblings have room.
  bool share_counts_siblings = true;
  // R10: with several workers sharing by hand-off, a thread of its own watches the listener and
  // hands every connection over, so that no accept waits behind a handler. false (sabotage, the
  // loop before): worker 0 accepts and serves, and while one of its handlers runs nothing is
  // accepted.
  bool accept_thread = true;
  // R10: with hand-offs, the other workers watch the listener too and accept from it; false:
  // only the accepting loop does (the live build).
  bool siblings_watch_listener = false;
  // R10: a hand-off wakes its worker only when the worker's mailbox was empty: the worker takes
  // the hand-off door's batch until the mailbox is empty (or owes the door), so a hand-off that
  // finds others waiting is taken with them, as an edge-triggered descriptor's bytes are. One
  // wake-up a batch, not one a connection. false: a wake-up every hand-off (the loop before).
  bool handoff_wakes_when_empty = true;
  // R11
  HandlerMode mode = HandlerMode::loop_only;
  int pool_threads = 4;
  // The wait's timeout when nothing is owed (none: until something is ready).
  std::optional<Duration> idle_timeout = std::chrono::seconds(1);
  // Events taken from one wait.
  int max_events = 1024;
  // Connections held at once; also bounds a drain with accept_batch = 0.
  int max_connections = 1024;
  // Largest request head accepted (431 beyond it).
  int max_request_head = 8192;

  // R5: shutdown first admits every connection already in the listener's accept queue (its
  // clients have sent their requests and believe they are connected), past accept_batch and
  // max_connections, and only then closes the listener; false (sabotage, the loop before the
  // live build's graceful stop): the close resets them.
  bool shutdown_drains_backlog = true;
  // R5: a shutdown that has not finished within drain_timeout resets what is left and exits;
  // the loop reports how many it reset. 0: no bound.
  Duration drain_timeout = std::chrono::seconds(30);
  // R5: the shutdown and its deadline are looked at between handlers, not only between passes:
  // once it is asked, no handler begins before the listener is closed (the rest of the pass's
  // requests wait for their turn), and past drain_timeout none begins at all. false (sabotage):
  // a batch of slow handlers runs to its end first, and the drain outlasts its timeout by it.
  bool shutdown_between_handlers = true;
  // R5: a drain loses no request a client sent before it could see the close. For
  // drain_idle_grace after the drain began (or to drain_timeout, if sooner) connections are
  // served as before: a request on its way, pipelined or next, is answered. After it, the last
  // answer the loop has a request for says `Connection: close` (and the connection closes after
  // it), and a connection with nothing in flight is closed. false (sabotage): no grace and no
  // close said: idle connections are closed at once, racing the requests on their way.
  bool drain_closes_gracefully = true;
  Duration drain_idle_grace = std::chrono::seconds(1);

  // R12: timeouts. Each bounds how long a connection may hold its descriptor without the
  // progress named; 0 turns it off (the sabotage: a slow or silent client holds its slot
  // forever, and at max_connections locks every new client out).
  // head: from a request's first byte (or the connection's admission) to the end of its head;
  // answered 408 and closed (closed without a word when nothing at all was sent).
  Duration head_timeout = std::chrono::seconds(10);
  // body: from the end of a head to the end of the body its Content-Length announced; 408.
  Duration body_timeout = std::chrono::seconds(30);
  // keep-alive: an answered connection with nothing more to do; closed.
  Duration keepalive_timeout = std::chrono::seconds(60);
  // write: output waiting while the peer takes none of it; reset.
  Duration write_timeout = std::chrono::seconds(60);

  // R13: bounded buffers. A connection buffers at most max_input bytes of requests not yet
  // served; past it, it is not read (the kernel's buffer fills and TCP pushes back on the
  // client). Requests are not served while max_output bytes of answers wait to be written.
  // A request that cannot fit max_input is answered 413. 0: no bound (sabotage: a client that
  // pipelines without reading grows the server without bound).
  int max_input = 64 * 1024;
  int max_output = 64 * 1024;
  // R13: when a write makes room below max_output, the requests already buffered are answered
  // on the spot; false (sabotage): they wait for the next writable edge or read, and a write that
  // took the whole output at once leaves them stranded until the client sends again.
  bool resume_after_flush = true;

  // R14: a read that returns fewer bytes than it asked for has emptied the socket's buffer, and
  // the edge-triggered poller reports the next bytes or the peer's close as a new event: the
  // loop reads no more until then, sparing the read that would say EAGAIN. Unless the event it
  // serves said the peer hung up (EPOLLRDHUP, EPOLLHUP or EPOLLERR): then it reads on to the
  // end of stream, which no later event will announce. false: read until EAGAIN every time (one
  // call more a request, the loop before).
  bool short_read_drains = true;
  // R14 sabotage: false stops at a short read even when the event said the peer hung up, so a
  // client that half-closes after its requests is never read to its end, and its connection is
  // left open (caught by `closes_on_end`).
  bool short_read_heeds_hangup = true;

  // R15: an admitted connection is registered with the poller after its eager read, not before:
  // a request that came with the connection is read, answered and, with `Connection: close`,
  // closed without the registration (one epoll_ctl a connection), and a kept one is spared the
  // stale event a registration before the read would queue (one read more). The registration,
  // made once the read has stopped, queues an event at once if bytes came meanwhile (as
  // EPOLL_CTL_ADD does), so none is lost. false: registered at admission, the loop before.
  bool watch_after_eager_read = true;
  // R15 sabotage: false leaves a connection unregistered when its eager read found a request,
  // as if it would close after the answer: a kept connection's next request is never read
  // (caught by `answered`).
  bool watch_served_connections = true;

  bool operator==(const LoopConfig&) const = default;
};

// What a reload (live: SIGHUP) may change: the batches (accept_batch, drain_chunk, yield_batch),
// the request and buffer limits (max_request_head, max_input, max_output) and every timeout
// (head, body, keep-alive, write, the drain's and its grace, the idle wait, R4's back-off). The
// rest stays: the mode and the pool, the handle table and max_connections (siblings read it from
// their threads), and the rules' switches. Calls f(a.field, b.field) for each, the one list that
// both take_reloadable and reloadable_key read.
template <class A, class B, class F>
void each_reloadable(A& a, B& b, F&& f) {
  f(a.accept_batch, b.accept_batch);
  f(a.drain_chunk, b.drain_chunk);
  f(a.yield_batch, b.yield_batch);
  f(a.max_request_head, b.max_request_head);
  f(a.max_input, b.max_input);
  f(a.max_output, b.max_output);
  f(a.head_timeout, b.head_timeout);
  f(a.body_timeout, b.body_timeout);
  f(a.keepalive_timeout, b.keepalive_timeout);
  f(a.write_timeout, b.write_timeout);
  f(a.drain_timeout, b.drain_timeout);
  f(a.drain_idle_grace, b.drain_idle_grace);
  f(a.idle_timeout, b.idle_timeout);
  f(a.emfile_backoff, b.emfile_backoff);
}

// Takes into a running loop's configuration what a reload may change, from `next`. Each loop
// applies it on its own thread, and what it applies to is what begins after: a connection's
// deadline already set keeps its time. Writes those fields alone, so that another thread may
// read the others meanwhile.
inline void take_reloadable(LoopConfig& running, const LoopConfig& next) {
  each_reloadable(running, next, [](auto& field, const auto& value) { field = value; });
}

// The reloadable fields folded into one number (state::fold): two configurations with equal keys
// behave alike in all a reload may change. A search digests it once a reload has happened.
std::uint64_t reloadable_key(const LoopConfig& config);

}  // namespace loopsim
