// The event loop under test. Written once, against Kernel, as ordinary blocking code:
//   wait -> handle the pass's events -> take accept batches -> repeat.
// The same code serves real sockets (LinuxKernel) and runs in simulation (SimKernel).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "realloop/config.hpp"
#include "realloop/kernel.hpp"
#include "realloop/observer.hpp"

namespace loopsim {

class Loop {
 public:
  Loop(Kernel& kernel, LoopConfig config, LoopObserver& observer, int worker = 0);
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;
  ~Loop();

  // Opens the listener and the poller. Returns 0 or -errno.
  int open(const ListenSpec& spec);
  int listener() const { return listener_; }

  // Runs passes until stop() is seen. May block: in the wait and in handlers.
  void run();
  // One pass: wait, the events, then the batches.
  void run_pass();

  // Asks run() to return after the current pass. Safe from another thread, and from a signal
  // handler in the live build (an atomic store and an eventfd write).
  void stop();

  bool accept_owed() const { return accept_owed_; }
  std::size_t connections() const { return connection_count_; }
  std::uint64_t passes() const { return pass_; }

 private:
  struct Connection {
    bool open = false;
    bool closing = false;     // close once the output is flushed
    bool want_write = false;  // registered for writability
    std::string input;
    std::string output;
  };

  enum class Input : std::uint8_t { open, ended, reset };

  Nanos wait_timeout() const;
  void dispatch(const PollEvent& event);
  void take_batch(Door door);
  void admit(int fd);
  void serve(int fd);
  Input read_input(Connection& connection);
  void answer_requests(int fd, Connection& connection);
  void flush(int fd, Connection& connection);
  void close_connection(int fd);
  Connection* connection(int fd);
  int fd_of(const Connection& connection) const;

  Kernel& kernel_;
  LoopConfig config_;
  LoopObserver& observer_;
  int worker_;
  int poller_ = -1;
  int listener_ = -1;
  int stop_wake_ = -1;
  std::atomic<bool> stop_requested_{false};
  bool stopping_ = false;
  bool listener_ready_ = false;  // the listener announced itself in this pass
  bool accept_owed_ = false;
  std::uint64_t pass_ = 0;
  std::size_t connection_count_ = 0;
  std::vector<Connection> connections_;  // indexed by descriptor
  std::vector<PollEvent> events_;
};

}  // namespace loopsim
