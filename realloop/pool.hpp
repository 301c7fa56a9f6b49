// R11: a pool of handler threads. The loop submits a request; a pool thread runs the handler
// (spending its time on the pool thread, not the loop's) and posts the answer back to the loop.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "realloop/kernel.hpp"
#include "realloop/state.hpp"

namespace loopsim {

class Loop;

class HandlerPool {
 public:
  // Throws std::system_error when the kernel refuses a thread's poller or wake descriptor.
  HandlerPool(Kernel& kernel, int threads);
  HandlerPool(const HandlerPool&) = delete;
  HandlerPool& operator=(const HandlerPool&) = delete;
  ~HandlerPool();

  int threads() const { return int(wakes_.size()); }
  // The body of pool thread `index`: runs jobs until stop(). May block.
  void run_thread(int index);
  // Safe from any thread.
  void submit(Loop& loop, int fd, std::uint64_t generation, std::string request);
  // Ends the threads: each finishes the handler it is running, if any, and begins no other;
  // the jobs still queued are dropped. Returns how many were dropped. Safe from any thread;
  // never blocks.
  int stop();
  // What the pool's threads read without a kernel call, that the loops write: the jobs, and
  // whether it stops (see Loop::visit_shared).
  template <class Add>
  void visit_shared(Add&& add, Instant now) const {
    state::visit(add, *this, now);
  }

 private:
  void close_all();
  struct Job {
    Loop* loop;
    int fd;
    std::uint64_t generation;
    std::string request;
    // Skipped: loop (which worker's; fd and generation tell the job apart within it).
    static constexpr auto state_fields = state::fields(
        state::f::skip<&Job::loop>, state::f::value<&Job::fd>, state::f::value<&Job::generation>,
        state::f::value<&Job::request>);
  };
  bool take(Job& job);

  Kernel& kernel_;
  std::vector<int> pollers_;
  std::vector<int> wakes_;
  std::mutex mutex_;  // guards jobs_, idle_ and stopping_
  std::deque<Job> jobs_;
  std::vector<bool> idle_;
  bool stopping_ = false;

 public:
  // Skipped: the kernel (a collaborator) and the lock.
  static constexpr auto state_fields = state::fields(
      state::f::reference("kernel_"), state::f::value<&HandlerPool::pollers_>, state::f::value<&HandlerPool::wakes_>,
      state::f::skip<&HandlerPool::mutex_>, state::f::value<&HandlerPool::jobs_>, state::f::value<&HandlerPool::idle_>,
      state::f::value<&HandlerPool::stopping_>);
  friend struct state::Access;
};

}  // namespace loopsim
