#include "realloop/live/serve.hpp"

#include <signal.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "realloop/assert.hpp"
#include "realloop/live/linux_kernel.hpp"
#include "realloop/loop.hpp"
#include "realloop/observer.hpp"

namespace loopsim::live {
namespace {

// The only global: a signal handler has no other way to reach the running loop.
std::atomic<Loop*> stop_target{nullptr};
static_assert(std::atomic<Loop*>::is_always_lock_free, "read from a signal handler");

extern "C" void on_stop_signal(int) {
  // Loop::stop is an atomic store and an eventfd write: async-signal-safe.
  if (Loop* loop = stop_target.load()) loop->stop();
}

void set_action(int signal, void (*handler)(int), struct sigaction* previous) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // epoll_wait and nanosleep still return EINTR
  int rc = ::sigaction(signal, &action, previous);
  LOOPSIM_ASSERT_OP(rc, ==, 0);
}

// SIGINT and SIGTERM stop `loop` while this object lives.
class StopSignals {
 public:
  explicit StopSignals(Loop& loop) {
    LOOPSIM_ASSERT(stop_target.load() == nullptr);
    stop_target.store(&loop);
    set_action(SIGINT, on_stop_signal, &previous_int_);
    set_action(SIGTERM, on_stop_signal, &previous_term_);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  ~StopSignals() {
    ::sigaction(SIGINT, &previous_int_, nullptr);
    ::sigaction(SIGTERM, &previous_term_, nullptr);
    stop_target.store(nullptr);
  }

 private:
  struct sigaction previous_int_ {};
  struct sigaction previous_term_ {};
};

// The first line on stdout, flushed at once: scripts and tests wait for it.
void announce(Kernel& kernel, const Loop& loop, const LiveOptions& options) {
  int port = kernel.local_port(loop.listener());
  LOOPSIM_ASSERT_OP(port, >, 0);
  std::printf("listening on %s:%d\n", options.address.c_str(), port);
  std::fflush(stdout);
}

}  // namespace

int serve_live(const LiveOptions& options) {
  LOOPSIM_ASSERT_OP(options.workers, ==, 1);  // the command line refuses more, for now
  set_action(SIGPIPE, SIG_IGN, nullptr);

  LinuxKernel kernel;
  LoopObserver quiet;
  Loop loop(kernel, options.loop, quiet);
  if (int rc = loop.open(ListenSpec{options.address, options.port}); rc < 0) return rc;
  {
    // Installed before the announcement: whoever reads it may signal at once.
    StopSignals signals(loop);
    announce(kernel, loop, options);
    loop.run();
  }
  std::fprintf(stderr, "stopped\n");
  return 0;
}

}  // namespace loopsim::live
