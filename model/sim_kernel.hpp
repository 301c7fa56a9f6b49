// The simulated kernel: descriptors, listen backlogs, sockets and an epoll-like (or
// kqueue-like) poller, in virtual time. It follows Linux's documented behaviour rule by rule;
// the rules are numbered K1.. in DESIGN.md and each has a test named after it.
//
// The loop sees it only through Kernel. The simulation's client agents use the client side
// below (connect, send, close), and hear back through a ClientSink.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "model/scheduler.hpp"
#include "realloop/kernel.hpp"

namespace loopsim::model {

using ConnId = std::uint32_t;
inline constexpr ConnId no_conn = ~ConnId{0};

struct SimKernelConfig {
  PollerFlavour poller = PollerFlavour::epoll;
  int somaxconn = 4096;
  int rlimit_nofile = 1024;  // K2: descriptor numbers at or above it give EMFILE
  int file_max = 1048576;    // K2: open files system-wide (both ends of every socket) -> ENFILE
  bool abort_on_overflow = false;  // K9: a full queue resets the client instead of dropping
  Nanos timer_slack{0};            // K1: added to every sleep, spend and wait timeout
  Nanos syn_rto{std::chrono::seconds(1)};  // K9: the client's first SYN retransmission
  int syn_retries = 6;                     // K9: as Linux's tcp_syn_retries
};

// The client side hears what happens to its connections here. Calls come from scheduler
// callbacks, never from inside a simulated thread's kernel call.
class ClientSink {
 public:
  virtual ~ClientSink() = default;
  virtual void established(ConnId) {}      // on the accept queue; data may be sent
  virtual void syn_dropped(ConnId, Nanos /*retry_at*/) {}
  virtual void refused(ConnId, int /*error*/) {}  // reset by overflow, or gave up (ETIMEDOUT)
  virtual void received(ConnId, std::string_view /*bytes*/) {}
  virtual void peer_closed(ConnId) {}  // the server closed its end
  virtual void peer_reset(ConnId) {}
};

class SimKernel final : public Kernel {
 public:
  SimKernel(Scheduler& scheduler, SimKernelConfig config);

  // Kernel
  Nanos now() override;
  void spend(Nanos duration) override;
  int listen(const ListenSpec& spec) override;
  int local_port(int listener) override;
  int accept(int listener) override;
  std::int64_t read(int fd, std::span<char> into) override;
  std::int64_t write(int fd, std::span<const char> from) override;
  int close(int fd) override;
  int poller_create() override;
  int watch(int poller, int fd, std::uint32_t interest, Trigger trigger) override;
  int rewatch(int poller, int fd, std::uint32_t interest, Trigger trigger) override;
  int unwatch(int poller, int fd) override;
  int wait(int poller, std::span<PollEvent> into, Nanos timeout) override;
  int wake_create() override;
  void wake_signal(int wake) override;
  void wake_drain(int wake) override;
  PollerFlavour flavour() const override { return config_.poller; }

  // The client side.
  void set_client_sink(ClientSink* sink) { sink_ = sink; }
  // Starts a connection to the listener on `port` (its SYN leaves now).
  ConnId connect(std::uint16_t port);
  void send(ConnId conn, std::string_view bytes);
  void client_close(ConnId conn);

  // Inspection, for the simulation's trace and final checks.
  ConnId conn_of(int fd) const;              // the connection behind a server descriptor
  std::size_t backlog(int listener) const;   // connections waiting in its accept queue
  std::size_t open_descriptors() const { return open_fds_; }
  void set_rlimit_nofile(int limit) { config_.rlimit_nofile = limit; }

 private:
  enum class FdKind : std::uint8_t { free, stdio, listener, socket, poller, wake };
  struct FdEntry {
    FdKind kind = FdKind::free;
    std::uint32_t object = 0;      // index into the kind's table
    std::vector<int> watched_by;   // pollers whose interest set holds this descriptor
  };
  struct Listener {
    int fd = -1;
    std::uint16_t port = 0;
    std::size_t capacity = 0;  // K9: min(backlog, somaxconn) + 1
    std::deque<ConnId> queue;
    bool open = true;
  };
  struct Conn {
    std::string to_server;
    std::string to_client;
    int listener = -1;
    int server_fd = -1;
    int syn_attempts = 0;
    bool established = false;
    bool client_closed = false;  // FIN from the client: EOF after the buffered bytes
    bool server_closed = false;
    bool reset = false;          // the connection was reset
    bool reset_reported = false; // ECONNRESET was returned once; reads now see the end
    bool client_file = false;    // the client's end holds a file (for file_max)
    bool delivery_pending = false;
  };
  struct Interest {
    std::uint32_t events = 0;
    Trigger trigger = Trigger::edge;
    bool queued = false;    // on the ready list
    bool disabled = false;  // one-shot, reported
  };
  struct Poller {
    std::map<int, Interest> items;
    std::deque<int> ready;
    ThreadId waiter = no_thread;
  };

  int allocate_fd(FdKind kind, std::uint32_t object);
  void release_fd(int fd);
  const FdEntry* entry(int fd) const;
  FdEntry* entry(int fd, FdKind kind);
  std::uint32_t readiness(int fd) const;
  void notify(int fd);
  void enqueue(Poller& poller, int fd, Interest& item);
  int harvest(Poller& poller, std::span<PollEvent> into);
  void try_handshake(ConnId conn);
  void schedule_delivery(ConnId conn);
  void deliver(ConnId conn);
  void release_client_file(Conn& conn);
  Nanos with_slack(Nanos duration) const { return duration + config_.timer_slack; }

  Scheduler& scheduler_;
  SimKernelConfig config_;
  ClientSink* sink_ = nullptr;
  std::vector<FdEntry> fds_;
  std::set<int> free_fds_;  // released numbers below fds_.size(): K2 takes the lowest
  std::size_t open_fds_ = 0;
  std::size_t client_files_ = 0;  // client ends of open connections, for file_max
  std::vector<Listener> listeners_;
  std::vector<Conn> conns_;
  std::vector<Poller> pollers_;
  std::vector<bool> wakes_;  // signalled
  std::uint16_t next_port_ = 32768;
};

}  // namespace loopsim::model
