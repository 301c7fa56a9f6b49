// For tests: serve_live on a thread of its own, on a free port, stopped by a SIGTERM to this
// process. One at a time per process (serve_live's signal handlers are process-wide).
#pragma once

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "realloop/live/serve.hpp"
#include "tests/eventually_for_tests.hpp"

namespace loopsim::testing {

struct LiveServer {
  std::atomic<int> port{0};
  live::LiveResult result;
  std::thread thread;
  explicit LiveServer(live::LiveOptions options) {
    options.port = 0;
    options.on_listening = [this](int p) { port.store(p); };
    thread = std::thread([this, options] { result = live::serve_live(options); });
    REQUIRE(eventually([this] { return port.load() > 0; }));
  }
  LiveServer(const LiveServer&) = delete;
  LiveServer& operator=(const LiveServer&) = delete;
  ~LiveServer() {
    if (thread.joinable()) stop();
  }
  void signal() { ::kill(::getpid(), SIGTERM); }  // serve_live's handler is installed while it runs
  live::LiveResult join() {
    thread.join();
    return result;
  }
  live::LiveResult stop() {
    signal();
    return join();
  }
};

}  // namespace loopsim::testing
