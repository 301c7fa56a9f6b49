#include "realloop/live/serve.hpp"

#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <system_error>
#include <thread>
#include <vector>

#include "base/assert.hpp"
#include "realloop/live/linux_kernel.hpp"
#include "realloop/loop.hpp"
#include "realloop/observer.hpp"
#include "realloop/pool.hpp"

namespace loopsim::live {
namespace {

// The only globals: a signal handler has no other way to reach the running loops.
constexpr std::size_t max_targets = 512;  // 256 workers and the accept thread, with room
std::array<std::atomic<Loop*>, max_targets> targets{};
std::atomic<int> signals_seen{0};
std::atomic<LinuxKernel*> kernel_target{nullptr};  // a second signal ends handlers' spending
static_assert(std::atomic<Loop*>::is_always_lock_free, "read from a signal handler");
static_assert(std::atomic<int>::is_always_lock_free, "changed in a signal handler");

// How many handlers are between loading a target and their last write to it. A handler runs
// on whichever thread the signal picks, so clearing the targets is not enough: one that loaded
// a loop (or the reload pipe) just before may still be writing to its eventfd. Whoever clears
// the targets waits for this to reach 0 before the loops, the kernel or the pipe go away;
// otherwise that write could land on a descriptor closed, or reused, by then.
std::atomic<int> handlers_inside{0};

class HandlerInside {
 public:
  HandlerInside() { handlers_inside.fetch_add(1); }
  ~HandlerInside() { handlers_inside.fetch_sub(1); }
  HandlerInside(const HandlerInside&) = delete;
  HandlerInside& operator=(const HandlerInside&) = delete;
};

// Called after the targets are cleared (sequentially consistent stores): a handler that enters
// after this sees them cleared, and one inside is waited for. Never called from a handler, so
// the handler it waits for runs on another thread and ends.
void wait_for_handlers() {
  while (handlers_inside.load() != 0) std::this_thread::yield();
}

extern "C" void on_stop_signal(int) {
  // The first signal begins the drain, a second stops at once. Loop::shutdown and Loop::stop
  // are an atomic store and an eventfd write: async-signal-safe.
  const HandlerInside inside;
  const bool first = signals_seen.fetch_add(1) == 0;
  if (LinuxKernel* kernel = kernel_target.load(); kernel != nullptr && !first) kernel->cancel_spending();
  for (auto& target : targets) {
    // LinuxKernel::now() is clock_gettime: async-signal-safe too.
    Loop* loop = target.load();
    LinuxKernel* clock = kernel_target.load();
    if (loop != nullptr && first) loop->shutdown(clock != nullptr ? std::optional<Instant>(clock->now()) : std::nullopt);
    if (loop != nullptr && !first) loop->stop();
  }
}

// SIGHUP writes a byte here; the reloader thread reads it and does the rest.
std::atomic<int> reload_pipe{-1};
static_assert(std::atomic<int>::is_always_lock_free, "read from a signal handler");

extern "C" void on_reload_signal(int) {
  const HandlerInside inside;
  const int saved = errno;
  const char byte = 'h';
  if (int fd = reload_pipe.load(); fd >= 0) [[maybe_unused]] auto n = ::write(fd, &byte, 1);  // async-signal-safe
  errno = saved;
}

void set_action(int signal, void (*handler)(int), struct sigaction* previous) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // epoll_wait and nanosleep still return EINTR
  int rc = ::sigaction(signal, &action, previous);
  LOOPSIM_ASSERT_OP(rc, ==, 0);
}

// SIGINT and SIGTERM reach `loops` while this object lives; after it, the previous actions,
// or with `keep`, a handler that only counts them.
class StopSignals {
 public:
  StopSignals(LinuxKernel& kernel, const std::vector<std::unique_ptr<Loop>>& loops, bool keep) : keep_(keep) {
    LOOPSIM_ASSERT_OP(loops.size(), <=, max_targets);
    signals_seen.store(0);
    kernel_target.store(&kernel);
    for (std::size_t i = 0; i < loops.size(); ++i) {
      LOOPSIM_ASSERT(targets[i].load() == nullptr);  // one call at a time
      targets[i].store(loops[i].get());
    }
    set_action(SIGINT, on_stop_signal, &previous_int_);
    set_action(SIGTERM, on_stop_signal, &previous_term_);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  ~StopSignals() {
    if (!keep_) {
      ::sigaction(SIGINT, &previous_int_, nullptr);
      ::sigaction(SIGTERM, &previous_term_, nullptr);
    }
    for (auto& target : targets) target.store(nullptr);
    kernel_target.store(nullptr);
    wait_for_handlers();
  }

 private:
  bool keep_;
  struct sigaction previous_int_ {};
  struct sigaction previous_term_ {};
};

// SIGHUP while this object lives: `reload` is asked on a thread of its own, and each loop takes
// the configuration as a post, on its own thread. The handler only writes a byte to a pipe.
class Reloader {
 public:
  Reloader(const LiveOptions& options, const std::vector<std::unique_ptr<Loop>>& loops) : options_(options) {
    if (!options.reload) return;
    int ends[2];
    if (::pipe2(ends, O_CLOEXEC | O_NONBLOCK) != 0) return;  // no reload then, as without `reload`
    read_ = ends[0];
    write_ = ends[1];
    int flags = ::fcntl(read_, F_GETFL);
    ::fcntl(read_, F_SETFL, flags & ~O_NONBLOCK);  // the thread blocks on it; the handler never does
    reload_pipe.store(write_);
    thread_ = std::thread([this, &loops] { run(loops); });
    set_action(SIGHUP, on_reload_signal, &previous_);
  }
  Reloader(const Reloader&) = delete;
  Reloader& operator=(const Reloader&) = delete;
  ~Reloader() {
    if (read_ < 0) return;
    // With keep_stop_handlers the process exits next: a late SIGHUP is then ignored, not fatal.
    if (options_.keep_stop_handlers) {
      set_action(SIGHUP, SIG_IGN, nullptr);
    } else {
      ::sigaction(SIGHUP, &previous_, nullptr);
    }
    reload_pipe.store(-1);
    wait_for_handlers();
    const char end = 'x';
    [[maybe_unused]] auto n = ::write(write_, &end, 1);
    thread_.join();
    ::close(read_);
    ::close(write_);
  }

 private:
  void run(const std::vector<std::unique_ptr<Loop>>& loops) {
    for (;;) {
      char byte = 0;
      const ssize_t n = ::read(read_, &byte, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0 || byte == 'x') return;
      std::optional<LoopConfig> next = options_.reload();
      if (!next) continue;
      // Each loop says, on its own thread, whether it changed; the last to say reports.
      auto changed = std::make_shared<std::atomic<int>>(0);
      auto left = std::make_shared<std::atomic<int>>(int(loops.size()));
      for (const auto& loop : loops) {
        Loop* target = loop.get();
        target->post([target, next, changed, left, this] {
          if (target->reconfigure(*next)) changed->fetch_add(1);
          if (left->fetch_sub(1) == 1 && options_.on_reloaded) options_.on_reloaded(changed->load() > 0);
        });
      }
    }
  }

  const LiveOptions& options_;
  int read_ = -1;
  int write_ = -1;
  std::thread thread_;
  struct sigaction previous_ {};
};

// The first line on stdout, flushed at once: scripts and tests wait for it.
void announce(Kernel& kernel, const Loop& loop, const LiveOptions& options) {
  int port = kernel.local_port(loop.listener());
  LOOPSIM_ASSERT_OP(port, >, 0);
  if (options.on_listening) {
    options.on_listening(port);
    return;
  }
  std::printf("listening on %s:%d\n", options.address.c_str(), port);
  std::fflush(stdout);
}

// Opens every loop's poller and listener. With reuse_port each worker listens on the port
// (SO_REUSEPORT) and accepts for itself; otherwise the layout's acceptor listens and hands
// connections over (R10), so that no two threads accept on one listener that one of them may
// close. Returns 0 or -errno.
int open_loops(Kernel& kernel, const LiveOptions& options, const LoopLayout& layout,
               std::vector<std::unique_ptr<Loop>>& loops, WorkerGroup& group) {
  ListenSpec spec{options.address, options.port, options.backlog, options.reuse_port};
  if (!options.reuse_port) {
    std::vector<Loop*> all;
    for (auto& loop : loops) all.push_back(loop.get());
    int failed = 0;
    return layout.open(all, spec, group, failed);
  }
  for (std::size_t w = 0; w < loops.size(); ++w) {
    if (int rc = loops[w]->open(spec); rc < 0) return rc;
    if (w == 0) spec.port = std::uint16_t(kernel.local_port(loops[0]->listener()));  // port 0
  }
  return 0;
}

// Runs every loop until it finishes or is stopped: worker 0 on this thread, the others on
// threads of their own. Blocks.
void run_loops(const std::vector<std::unique_ptr<Loop>>& loops) {
  std::vector<std::thread> siblings;
  for (std::size_t w = 1; w < loops.size(); ++w) siblings.emplace_back([&loops, w] { loops[w]->run(); });
  loops.front()->run();
  for (auto& sibling : siblings) sibling.join();
}

// R5 and R11, once the loops have finished: every connection is closed or reset, so nobody is
// left to answer. The handlers the pool runs stop spending at once (a live /slow ends within
// its 10 ms slice; any other handler runs out), the ones still queued are dropped, and the
// threads are joined. Returns how many were dropped.
int stop_pool(LinuxKernel& kernel, HandlerPool& pool, std::vector<std::thread>& threads) {
  kernel.cancel_spending();
  const int dropped = pool.stop();
  for (auto& thread : threads) thread.join();
  return dropped;
}

}  // namespace

LiveResult serve_live(const LiveOptions& options) {
  LOOPSIM_ASSERT_OP(options.workers, >=, 1);
  set_action(SIGPIPE, SIG_IGN, nullptr);
  // R13's buffers (up to 64 KiB of input and of output a connection, 128 KiB of capacity) are
  // mapped on their own, so that a closed connection's go back to the system at once. From
  // glibc's heap they would return only when they happen to border its top, and its mmap
  // threshold rises after the first such buffer is freed unless it is set.
  ::mallopt(M_MMAP_THRESHOLD, 64 * 1024);

  LinuxKernel kernel;
  LoopObserver quiet;
  std::unique_ptr<HandlerPool> pool;
  if (options.loop.mode == HandlerMode::pool) {
    try {
      pool = std::make_unique<HandlerPool>(kernel, options.loop.pool_threads);
    } catch (const std::system_error& e) {
      return LiveResult{-e.code().value()};
    }
  }
  // R10: with reuse_port, each worker listens and accepts for itself; otherwise the layout's
  // acceptor (the accept thread, or worker 0) hands connections over.
  LoopConfig config = options.loop;
  if (options.reuse_port) config.accept_share = false;
  const LoopLayout layout = LoopLayout::of(config, options.workers);
  WorkerGroup group;
  std::vector<std::unique_ptr<Loop>> loops;
  for (int i = 0; i < layout.loops; ++i) {
    loops.push_back(std::make_unique<Loop>(kernel, config, quiet, i));
    if (pool) loops.back()->use_pool(*pool);
  }
  if (int rc = open_loops(kernel, options, layout, loops, group); rc < 0) return LiveResult{rc};
  Loop& acceptor = *loops[std::size_t(layout.acceptor)];

  std::vector<std::thread> pool_threads;
  for (int i = 0; pool && i < pool->threads(); ++i) {
    pool_threads.emplace_back([&pool, i] { pool->run_thread(i); });
  }
  LiveResult result;
  {
    // Installed before the announcement: whoever reads it may signal at once. Kept until the
    // pool's threads are joined: a second signal while they finish is counted, not fatal.
    StopSignals signals(kernel, loops, options.keep_stop_handlers);
    Reloader reloader(options, loops);
    announce(kernel, acceptor, options);
    run_loops(loops);
    if (pool) result.handlers_dropped = stop_pool(kernel, *pool, pool_threads);
    result.forced = signals_seen.load() > 1;
  }
  for (const auto& loop : loops) {
    result.unfinished += loop->drain_resets();
    if (!loop->finished()) result.unfinished += int(loop->connections() + loop->handoffs_pending());
  }
  return result;
}

}  // namespace loopsim::live
