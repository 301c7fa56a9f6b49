// `loopsim live`: the loop on real sockets, until SIGINT or SIGTERM.
#pragma once

#include <cstdint>
#include <string>

#include "realloop/config.hpp"

namespace loopsim::live {

struct LiveOptions {
  std::string address = "127.0.0.1";
  std::uint16_t port = 8080;  // 0: any free port; the bound one is printed
  int workers = 1;
  LoopConfig loop;
};

// Serves the app until SIGINT or SIGTERM. Prints "listening on ADDR:PORT" (the bound port, also
// when port 0 was asked) as the first line on stdout and flushes it. Returns 0 after a clean
// stop, or -errno when the listener cannot be opened (nothing printed: the caller says why).
// One worker only, for now.
// Installs handlers for SIGINT and SIGTERM while it runs (the previous ones come back when it
// returns) and ignores SIGPIPE for good. One call at a time per process.
int serve_live(const LiveOptions& options);

}  // namespace loopsim::live
