#include "realloop/pool.hpp"

#include <string>
#include <system_error>

#include "base/assert.hpp"
#include "realloop/http.hpp"
#include "realloop/loop.hpp"

namespace loopsim {

HandlerPool::HandlerPool(Kernel& kernel, int threads) : kernel_(kernel) {
  LOOPSIM_ASSERT_OP(threads, >, 0);
  for (int i = 0; i < threads; ++i) {
    int poller = kernel_.poller_create();
    int wake = poller >= 0 ? kernel_.wake_create() : 0;
    int rc = poller < 0 ? poller : wake < 0 ? wake : kernel_.watch(poller, wake, io::readable, Trigger::edge);
    if (rc < 0) {
      // Out of descriptors (or the like) before the pool could start: give back what it took.
      if (poller >= 0) kernel_.close(poller);
      if (poller >= 0 && wake >= 0) kernel_.close(wake);
      close_all();
      throw std::system_error(-rc, std::generic_category(),
                              "the handler pool's thread " + std::to_string(i) + " of " + std::to_string(threads));
    }
    pollers_.push_back(poller);
    wakes_.push_back(wake);
  }
  idle_.assign(std::size_t(threads), false);
}

HandlerPool::~HandlerPool() { close_all(); }

void HandlerPool::close_all() {
  for (int wake : wakes_) kernel_.close(wake);
  for (int poller : pollers_) kernel_.close(poller);
  wakes_.clear();
  pollers_.clear();
}

void HandlerPool::submit(Loop& loop, int fd, std::uint64_t generation, std::string request) {
  int wake = -1;
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(Job{&loop, fd, generation, std::move(request)});
    for (std::size_t i = 0; i < idle_.size(); ++i) {  // wake the first idle thread
      if (!idle_[i]) continue;
      idle_[i] = false;
      wake = wakes_[i];
      break;
    }
  }
  if (wake >= 0) kernel_.wake_signal(wake);
}

int HandlerPool::stop() {
  std::size_t dropped = 0;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    dropped = jobs_.size();
    jobs_.clear();
  }
  for (int wake : wakes_) kernel_.wake_signal(wake);
  return int(dropped);
}

bool HandlerPool::take(Job& job) {
  std::lock_guard lock(mutex_);
  if (stopping_ || jobs_.empty()) return false;
  job = std::move(jobs_.front());
  jobs_.pop_front();
  return true;
}

void HandlerPool::run_thread(int index) {
  auto i = std::size_t(index);
  PollEvent events[1];
  for (;;) {
    Job job;
    while (take(job)) {
      http::Request request;
      http::parse_request(job.request, job.request.size(), request);
      http::Response response = http::handle(request, kernel_);  // spends on this thread
      std::uint64_t what = state::fold(state::fold(state::fold(std::uint64_t(job.fd), job.generation),
                                                   std::uint64_t(response.status) * 2 + response.close),
                                       response.body);
      job.loop->post([loop = job.loop, fd = job.fd, generation = job.generation, response] {
        loop->pool_answer(fd, generation, response);
      }, what);
    }
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      if (!jobs_.empty()) continue;
      idle_[i] = true;
    }
    kernel_.wait(pollers_[i], events, wait_forever);
    kernel_.wake_drain(wakes_[i]);
  }
}

}  // namespace loopsim
