// A loop of its own, written against loopsim::Kernel: one thread, edge-triggered readiness, an
// accept batch that is owed when it stops by count (R2), and a tiny HTTP/1.1 answer ("ok") to
// every request, after N ms of work for /slow?ms=N. The same class runs in a simulated World (sim::ServerFactories::own_loop) and live
// over live::LinuxKernel. It tells the run what it does through the LoopObserver; those calls
// are the trace the properties judge.
#pragma once

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <map>
#include <string>

#include "realloop/config.hpp"
#include "realloop/kernel.hpp"
#include "realloop/observer.hpp"
#include "realloop/state.hpp"
#include "sim/world.hpp"

namespace tiny {

using namespace loopsim;

class TinyLoop final : public sim::OwnLoop {
 public:
  // Honours two [loop] keys: accept_batch (0: no limit) and owe_unfinished_batch, which a
  // scenario's arm turns off to show what the rule is for.
  TinyLoop(Kernel& kernel, LoopObserver& observer, const LoopConfig& config)
      : kernel_(kernel), observer_(observer), batch_(config.accept_batch), owe_(config.owe_unfinished_batch) {}

  int open(const ListenSpec& spec) override {
    if ((poller_ = kernel_.poller_create()) < 0) return poller_;
    if ((wake_ = kernel_.wake_create()) < 0) return wake_;
    if ((listener_ = kernel_.listen(spec)) < 0) return listener_;
    if (int rc = kernel_.watch(poller_, listener_, io::readable, Trigger::edge); rc < 0) return rc;
    if (int rc = kernel_.watch(poller_, wake_, io::readable, Trigger::level); rc < 0) return rc;
    return listener_;
  }

  void run() override {
    std::array<PollEvent, 64> events;
    while (!stopping_) {
      // An owed door is served on the next pass without waiting: nothing will announce it again.
      const std::optional<Duration> timeout = owed_ ? std::optional<Duration>(Duration(0)) : wait_forever;
      observer_.pass_begin(0, passes_, timeout);
      int n = kernel_.wait(poller_, events, timeout);
      if (n < 0) n = 0;
      observer_.events(0, passes_, std::span(events.data(), std::size_t(n)));
      bool accept = owed_;
      owed_ = false;
      for (int i = 0; i < n; ++i) {
        int fd = events[std::size_t(i)].fd;
        if (fd == listener_) {
          accept = true;
        } else if (fd == wake_) {
          kernel_.wake_drain(wake_);
          if (shutdown_.load(std::memory_order_acquire)) stopping_ = true;
        } else {
          serve(fd);
        }
      }
      if (accept && !stopping_) accept_batch();
      observer_.pass_end(0, passes_++, owed_, false);
    }
    // Shutdown: stop listening, let go of every connection.
    kernel_.close(listener_);
    observer_.listener_closed(0);
    while (!connections_.empty()) close(connections_.begin()->first);
    observer_.loop_exit(0, 0);
  }

  void shutdown() override {
    shutdown_.store(true, std::memory_order_release);
    kernel_.wake_signal(wake_);
  }
  std::size_t connections() const override { return connections_.size(); }
  std::uint64_t passes() const override { return passes_; }

  // Its state, for `loopsim explore`: with it declared, a search merges states that are equal
  // (and checks, with --audit, that they behave alike). Every field that tells two of its
  // states apart is in `state_fields` below; nothing else survives a wait. The shutdown flag
  // is written from outside the loop's thread, so it is a shared input too.
  bool declares_state() const override { return true; }
  void digest_state(state::Sink& sink, Instant now) const override { state::visit_into(sink, *this, now); }
  std::uint64_t shared_inputs(Instant) const override { return shutdown_.load(std::memory_order_acquire); }

 private:
  void accept_batch() {
    for (int taken = 0;; ++taken) {
      if (batch_ > 0 && taken == batch_) {
        owed_ = owe_;  // R2: the queue may hold more, and the edge has been spent
        observer_.batch_end(0, Door::listener, taken, BatchStop::count, owed_);
        return;
      }
      int fd = kernel_.accept(listener_);
      observer_.accepted(0, Door::listener, fd);
      if (fd == -ECONNABORTED) continue;  // one connection gone; the rest still wait
      if (fd < 0) {
        observer_.batch_end(0, Door::listener, taken, fd == -EAGAIN ? BatchStop::again : BatchStop::error, false);
        return;
      }
      kernel_.watch(poller_, fd, io::readable, Trigger::edge);
      connections_[fd];
    }
  }

  // Reads to EAGAIN (the edge is spent), answers every whole request head, closes at the end.
  void serve(int fd) {
    auto it = connections_.find(fd);
    if (it == connections_.end()) return;
    std::string& input = it->second;
    char buffer[4096];
    bool ended = false;
    for (;;) {
      std::int64_t got = kernel_.read(fd, buffer);
      if (got > 0) input.append(buffer, std::size_t(got));
      if (got == -EAGAIN) break;
      if (got <= 0) {
        ended = true;
        break;
      }
    }
    bool close_after = false;
    for (std::size_t end; !close_after && (end = input.find("\r\n\r\n")) != std::string::npos;) {
      std::string head = input.substr(0, end);
      input.erase(0, end + 4);
      std::size_t space = head.find(' '), second = head.find(' ', space + 1);
      std::string path = space == std::string::npos ? "/" : head.substr(space + 1, second - space - 1);
      close_after = head.find("Connection: close") != std::string::npos;
      observer_.request_begin(0, fd, path);
      if (path.rfind("/slow?ms=", 0) == 0) kernel_.spend(std::chrono::milliseconds(std::atoi(path.c_str() + 9)));
      static constexpr std::string_view answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
      // A small answer into an empty send buffer: taken whole, or the peer is gone.
      bool sent = kernel_.write(fd, std::span(answer.data(), answer.size())) == std::int64_t(answer.size());
      observer_.request_end(0, fd, 200);
      if (!sent) close_after = true;
    }
    if (ended || close_after) close(fd);
  }

  void close(int fd) {
    connections_.erase(fd);
    kernel_.close(fd);
    observer_.closed(0, fd);
  }

  Kernel& kernel_;
  LoopObserver& observer_;
  const int batch_;
  const bool owe_;
  int poller_ = -1, wake_ = -1, listener_ = -1;
  bool owed_ = false, stopping_ = false;
  std::atomic<bool> shutdown_{false};
  std::uint64_t passes_ = 0;
  std::map<int, std::string> connections_;  // descriptor -> bytes read, not yet answered


 public:
  // One entry per member, in member order, each naming its member (a moved or forgotten member
  // does not compile). Skipped: the kernel and observer (references to collaborators), the two
  // [loop] keys (fixed for the run), and the pass count (it only numbers passes in the trace).
  static constexpr auto state_fields = state::fields(
      state::f::reference("kernel_"), state::f::reference("observer_"), state::f::skip<&TinyLoop::batch_>,
      state::f::skip<&TinyLoop::owe_>, state::f::value<&TinyLoop::poller_>, state::f::value<&TinyLoop::wake_>,
      state::f::value<&TinyLoop::listener_>, state::f::value<&TinyLoop::owed_>, state::f::value<&TinyLoop::stopping_>,
      state::f::value<&TinyLoop::shutdown_>, state::f::skip<&TinyLoop::passes_>,
      state::f::value<&TinyLoop::connections_>);
  friend struct state::Access;
};

}  // namespace tiny
