// `loopsim live`: the loop on real sockets, until SIGINT or SIGTERM.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "realloop/config.hpp"

namespace loopsim::live {

struct LiveOptions {
  std::string address = "127.0.0.1";
  std::uint16_t port = 8080;  // 0: any free port; the bound one is printed
  // R10 on threads: with 2 or more, a thread of its own accepts and hands connections to the
  // workers (worker 0 does, and serves too, with loop.accept_thread = false); with reuse_port,
  // each worker has a listener of its own (SO_REUSEPORT) and the kernel spreads connections.
  int workers = 1;
  bool reuse_port = false;
  int backlog = 511;  // listen(2)'s; `loopsim live` takes a scenario's kernel.listen_backlog
  LoopConfig loop;  // with loop.mode = pool, handlers run on loop.pool_threads threads (R11)
  // Leaves the stop handlers installed when serve_live returns, instead of giving SIGINT and
  // SIGTERM their previous actions back: for a process that exits next, where a late signal
  // should change nothing rather than kill it.
  bool keep_stop_handlers = false;
  // Told the bound port once the listeners are open; unset: "listening on ADDR:PORT" is
  // printed on stdout and flushed.
  std::function<void(int port)> on_listening;
  // SIGHUP: called on a thread of its own (never in the signal handler) for the configuration
  // to apply, or none (it has said why; nothing changes). Each loop takes what may change live
  // (take_reloadable, realloop/config.hpp) on its own thread. Told back, on that thread, whether
  // anything changed. Unset: SIGHUP keeps the action it had.
  std::function<std::optional<LoopConfig>()> reload;
  std::function<void(bool changed)> on_reloaded;
};

struct LiveResult {
  int error = 0;  // -errno when the listener could not be opened (nothing printed)
  // Connections the stop did not finish: reset when the drain outlasted drain_timeout, or left
  // open by a second signal. 0 after a clean stop.
  int unfinished = 0;
  bool forced = false;  // a second signal stopped the drain
  // R11: handlers still queued in the pool when the loops had finished, dropped before they
  // began (their connections were reset, or gone).
  int handlers_dropped = 0;
};

// Serves the app until a signal. Prints "listening on ADDR:PORT" (the bound port, also when
// port 0 was asked) as the first line on stdout and flushes it.
//
// The first SIGINT or SIGTERM begins R5's shutdown in every worker: the listener's queue is
// admitted, the listener closed, what is in flight answered, idle connections closed, for at
// most loop.drain_timeout. A second signal stops at once. Once the loops have finished, nobody
// waits for the pool (R11) any more: the handlers it still runs stop spending, those still
// queued are dropped and counted. So it returns within drain_timeout and one handler of the
// first signal, whatever the pool holds.
// Installs handlers for SIGINT and SIGTERM while it runs, up to the return (the previous ones
// come back then, unless keep_stop_handlers), and for SIGHUP with `reload` (the previous one
// comes back, or with keep_stop_handlers it is ignored); ignores SIGPIPE for good. One call at a
// time per process.
LiveResult serve_live(const LiveOptions& options);

}  // namespace loopsim::live
