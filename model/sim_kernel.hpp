// The simulated kernel: descriptors, listen backlogs, sockets and an epoll-like (or
// kqueue-like) poller, in virtual time. It follows Linux's documented behaviour rule by rule;
// the rules are numbered K1.. in docs/design.md and each has a test named after it.
//
// The loop sees it only through Kernel. The simulation's client agents use the client side
// below (connect, send, close), and hear back through a ClientSink.
#pragma once

#include <cerrno>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/compact.hpp"
#include "model/by_descriptor.hpp"
#include "model/scheduler.hpp"
#include "realloop/kernel.hpp"
#include "realloop/state.hpp"

namespace loopsim::model {

using ConnId = std::uint32_t;
inline constexpr ConnId no_conn = ~ConnId{0};

struct SimKernelConfig {
  PollerFlavour poller = PollerFlavour::epoll;
  int somaxconn = 4096;
  int rlimit_nofile = 1024;  // K2: descriptor numbers at or above it give EMFILE
  int file_max = 1048576;    // K2: open files system-wide (both ends of every socket) -> ENFILE
  bool abort_on_overflow = false;  // K9: a full queue resets the client instead of dropping
  // K1: added to every sleep, spend and wait timeout. With several, each sleep's is a choice
  // point (kind `slack`), index 0 being the first.
  std::vector<Duration> timer_slack{Duration(0)};
  // K1: a non-blocking wait that finds nothing, repeated on the same poller at the same instant,
  // costs this much of the caller's time (a syscall's), so that a spinning loop moves the clock
  // instead of stopping it. The first such wait at an instant is free.
  Duration empty_wait_cost = std::chrono::microseconds(1);
  // K11: bytes a socket buffers in each direction. A server write beyond the send buffer is
  // short (or EAGAIN); a client's bytes beyond the receive buffer wait on the client's side.
  std::size_t send_buffer = 16384;
  std::size_t receive_buffer = 131072;
  // K11: Linux's send-buffer autotuning (tcp_wmem's maximum, 4 MiB on Debian 12; a scenario's
  // default). Above send_buffer, a write that does not fit is a choice point (kind `take`): the
  // buffer grown to this size for the rest of the connection (index 0, the natural pick: on
  // loopback Linux has grown it by the time the handshake is done, and one write takes a whole
  // megabyte), or the buffer as it is (index 1: a path whose acknowledgements have not grown it
  // yet). 0: the buffer never grows.
  std::size_t send_buffer_max = 0;
  Duration syn_rto{std::chrono::seconds(1)};  // K9: the client's first SYN retransmission
  int syn_retries = 6;                     // K9: as Linux's tcp_syn_retries

  // Only rlimit_nofile changes at run time (a fault lowers it; a target calls setrlimit). The
  // rest is fixed for the run, the same in every state a search meets: no state tells it apart.
  static constexpr auto state_fields = state::fields(
      state::f::skip<&SimKernelConfig::poller>, state::f::skip<&SimKernelConfig::somaxconn>,
      state::f::value<&SimKernelConfig::rlimit_nofile>, state::f::skip<&SimKernelConfig::file_max>,
      state::f::skip<&SimKernelConfig::abort_on_overflow>, state::f::skip<&SimKernelConfig::timer_slack>,
      state::f::skip<&SimKernelConfig::empty_wait_cost>, state::f::skip<&SimKernelConfig::send_buffer>,
      state::f::skip<&SimKernelConfig::receive_buffer>, state::f::skip<&SimKernelConfig::send_buffer_max>,
      state::f::skip<&SimKernelConfig::syn_rto>, state::f::skip<&SimKernelConfig::syn_retries>);
};

// An accept fault (K10): accepts on any listener fail with `error` instead of taking a
// connection. EMFILE, ENFILE and ENOBUFS leave the connection queued; ECONNABORTED consumes one
// (and waits for a queued one to land on).
struct AcceptFault {
  int error = EMFILE;
  std::uint64_t nth = 0;  // the nth accept call (from 1) fails; 0: use the window instead
  Instant from{};            // accepts in [from, until) may fail...
  Instant until{};
  std::uint32_t budget = 0;  // ...this many of them; 0: all. Which ones is a choice point.

  static constexpr auto state_fields = state::fields(
      state::f::value<&AcceptFault::error>, state::f::value<&AcceptFault::nth>, state::f::until<&AcceptFault::from>,
      state::f::until<&AcceptFault::until>, state::f::value<&AcceptFault::budget>);
};

// The client side hears what happens to its connections here. Calls come from scheduler
// callbacks, never from inside a simulated thread's kernel call.
class ClientSink {
 public:
  virtual ~ClientSink() = default;
  virtual void established(ConnId) {}      // on the accept queue; data may be sent
  virtual void syn_dropped(ConnId, Instant /*retry_at*/) {}
  virtual void refused(ConnId, int /*error*/) {}  // reset by overflow, or gave up (ETIMEDOUT)
  virtual void received(ConnId, std::string_view /*bytes*/) {}
  virtual void peer_closed(ConnId) {}  // the server closed its end
  virtual void peer_reset(ConnId) {}
  // Bytes wait for a client whose read budget is spent (set_client_read_budget).
  virtual void read_waiting(ConnId) {}
  // The server's side read from or wrote to `conn`: `size` bytes asked for or offered, and the
  // call's result (bytes taken, or -errno). The one call made from inside a kernel call, as it
  // returns: it records, and schedules nothing.
  virtual void served(ConnId, bool /*write*/, std::size_t /*size*/, std::int64_t /*result*/) {}
};

class SimKernel final : public Kernel {
 public:
  SimKernel(Scheduler& scheduler, SimKernelConfig config);

  // Kernel
  Instant now() override;
  void spend(Duration duration) override;
  int listen(const ListenSpec& spec) override;
  int local_port(int listener) override;
  int accept(int listener) override;
  std::int64_t read(int fd, std::span<char> into) override;
  std::int64_t write(int fd, std::span<const char> from) override;
  int close(int fd) override;
  int abort(int fd) override;
  int descriptor_limit() override { return config_.rlimit_nofile; }
  int poller_create() override;
  int watch(int poller, int fd, std::uint32_t interest, Trigger trigger) override;
  int rewatch(int poller, int fd, std::uint32_t interest, Trigger trigger) override;
  int unwatch(int poller, int fd) override;
  int wait(int poller, std::span<PollEvent> into, std::optional<Duration> timeout) override;
  int wake_create() override;
  void wake_signal(int wake) override;
  void wake_drain(int wake) override;
  int pipe(int ends[2]) override;
  int shutdown_write(int fd) override;
  PollerFlavour flavour() const override { return config_.poller; }

  // K2: a descriptor for something outside the simulation (a regular file a foreign program
  // opened): it takes a number and counts toward the limits like any other. close() frees it.
  int file_open();
  // Bytes waiting to be read on a socket or a pipe's reading end (FIONREAD), or -errno.
  std::int64_t pending_bytes(int fd) const;
  // K15: a connected pair of local stream sockets, both non-blocking: what one end writes the
  // other reads. Returns 0 or -errno. read, write, close and shutdown_write serve its ends.
  int socketpair(int ends[2]);
  // K13: a pipe's capacity (F_GETPIPE_SZ), and a new one (F_SETPIPE_SZ): the size set, or -errno.
  // A signal for `thread`: a wait it is blocked in returns -EINTR (signal(7): epoll_wait, poll
  // and select are never restarted). True if it was waiting; a thread not waiting learns of the
  // signal at its next call's return (the seam's business).
  bool interrupt(ThreadId thread);
  // A sleep a signal may cut short (a target's nanosleep and its kin): spends `duration`, with
  // its slack, as spend does, unless interrupt(the sleeping thread) comes first; then what was
  // left of it, else 0. Any of a target's threads may sleep so, several at once.
  Duration spend_interruptibly(Duration duration);
  // recv(MSG_PEEK) (K11): what read would return, leaving the bytes (and the readiness they
  // make) where they are; an error pending is taken as read takes it. On a pipe -ENOTSOCK.
  std::int64_t peek(int fd, std::span<char> into);
  std::int64_t pipe_size(int fd) const;
  std::int64_t set_pipe_size(int fd, std::uint64_t size);

  // The client side.
  void set_client_sink(ClientSink* sink) { sink_ = sink; }
  // Starts a connection to the listener on `port` (its SYN leaves now, and arrives as a
  // happening of its own).
  ConnId connect(std::uint16_t port);
  // A connection whose SYN arrives at the listener on `port` now: `named` learns its id, then the
  // handshake completes (or is dropped, K9) in the same step, as the server's kernel completes
  // one on the SYN's arrival.
  ConnId arrive(std::uint16_t port, const std::function<void(ConnId)>& named);
  void send(ConnId conn, std::string_view bytes);
  void client_close(ConnId conn);
  // An abortive close (SO_LINGER 0): the server's next read or write fails with ECONNRESET
  // once (then reads see the end and writes EPIPE), as Linux does. A connection still queued
  // stays queued and is accepted as usual.
  void client_reset(ConnId conn);
  // K14, the client's side: a half-close (shutdown(SHUT_WR)). The server reads the client's
  // bytes, then the end; the client still reads what the server writes.
  void client_shutdown(ConnId conn);
  // A client that stops reading (a slow reader) leaves the server's answers in the send
  // buffer; when it reads again, the buffer drains and the server's socket turns writable.
  void set_client_reading(ConnId conn, bool reading);
  // K11, a reader slower than the server: the client takes at most `bytes` more of what waits
  // for it, then leaves the rest in the server's send buffer and hears read_waiting; -1 (the
  // default) takes everything. Setting it again grants a new share.
  void set_client_read_budget(ConnId conn, std::int64_t bytes);

  // Returns its index, for open_accept_fault.
  std::size_t add_accept_fault(const AcceptFault& fault) {
    accept_faults_.push_back({fault, 0, false, fault.nth});
    return accept_faults_.size() - 1;
  }
  // The fault's window of failing accepts opens now (a windowed start that landed).
  void open_accept_fault(std::size_t index) { accept_faults_.at(index).fault.from = scheduler_.now(); }

  // For a landing that a call may commute with (model::Commutes): whether reading `fd` could
  // announce it again (bytes wait on the client's side for room), whether `fd` is a listener,
  // and the connection a client's descriptor is (no_conn: none).
  bool read_may_notify(int fd) const;
  bool is_listener(int fd) const { return backlog_capable(fd); }

  // Work done, from the kernel's side: the calls the thread made between its previous wait on a
  // poller and its latest one on the same poller that got something done (bytes read or written, a connection accepted or
  // closed, a write side shut, a wake-up drained, time spent on work). A pass that did none is
  // idle, whatever loop made it (no_spin).
  // More than this many calls at one virtual instant with no work done between them (see
  // work_before_wait): nothing the caller does lets the clock move (a target whose failing
  // calls cost nothing, spinning). The calling thread is then
  // parked for good and stalled() says so: the run ends as a livelock.
  static constexpr std::uint64_t calls_at_instant_max = 1'000'000;
  bool stalled() const { return stalled_; }

  // Calls from outside any thread (an inverted loop driven from a callback) count as one more.
  std::uint64_t work_before_wait(ThreadId thread) const {
    std::size_t slot = std::size_t(thread + 1);
    return slot < work_.size() ? work_[slot].before_wait : 0;
  }

  // Inspection, for the simulation's trace and final checks.
  ConnId conn_of(int fd) const;              // the connection behind a server descriptor
  std::size_t backlog(int listener) const;   // connections waiting in its accept queue
  std::size_t open_descriptors() const { return open_fds_; }
  // Symmetry: for a connection that nothing on the server's side knows of yet (no handshake
  // completed, no bytes, no descriptor), its SYN attempts so far; otherwise -1.
  int unseen_attempts(ConnId conn) const;
  void set_rlimit_nofile(int limit) { config_.rlimit_nofile = limit; }
  // Descriptors, queues, connections and pollers, for state digests.
  void digest(class Digest& digest) const;
  // One connection's state, with its place in its listener's accept queue (-1: not queued), for
  // canonical names (sim/canonical.hpp).
  std::uint64_t conn_digest(ConnId conn) const;
  // What a connection holds at the end of a run: bytes the client sent that the server never
  // read (in its receive buffer, or still on the client's side for want of room), and bytes the
  // server wrote that the client never took (in the send buffer).
  std::size_t unread_bytes(ConnId conn) const { return conns_[conn].to_server.size() + conns_[conn].client_pending.size(); }
  std::size_t unsent_bytes(ConnId conn) const { return conns_[conn].to_client.size(); }
  // K11: the size of the send buffer behind server descriptor `fd`, grown once autotuning grew
  // it, as Linux's getsockopt(SO_SNDBUF) reports it; the configured size for any other
  // descriptor.
  std::size_t send_buffer_of(int fd) const;
  // A few of conn_digest's fields, in a few operations (sim::Canonical::twin_key): the bytes
  // each way.
  std::uint64_t conn_key(ConnId conn) const;
  int server_fd_of(ConnId conn) const { return conns_[conn].server_fd; }
  // How many times the server let a connection's descriptor go (history, not state). A
  // connection is accepted once, so this is all that changes server_fd_of but its first setting.
  std::uint64_t server_releases() const { return server_releases_; }
  // Room for `count` more connections (the clients a run will make), made at once.
  void expect_connections(std::size_t count) { conns_.reserve(conns_.size() + count); }

 private:
  enum class FdKind : std::uint8_t { free, stdio, listener, socket, poller, wake, pipe_read, pipe_write, file, pair_end };
  struct FdEntry {
    FdKind kind = FdKind::free;
    std::uint32_t object = 0;      // index into the kind's table (but a socket's)
    ConnId conn = no_conn;         // a socket's connection
    base::IntList watched_by;      // pollers whose interest set holds this descriptor
    static constexpr auto state_fields = state::fields(
        state::f::value<&FdEntry::kind>, state::f::value<&FdEntry::object>, state::f::conn_name<&FdEntry::conn>,
        state::f::value<&FdEntry::watched_by>);
  };
  struct Listener {
    int fd = -1;
    std::uint16_t port = 0;
    std::size_t capacity = 0;  // K9: min(backlog, somaxconn) + 1
    std::deque<ConnId> queue;
    bool open = true;
    // Connections queued and taken off so far, for a connection's place in the queue in
    // constant time (Conn::queued_at). Counts of history: the queue itself is the state.
    std::uint64_t pushed = 0;
    std::uint64_t popped = 0;
    static constexpr auto state_fields = state::fields(
        state::f::value<&Listener::fd>, state::f::value<&Listener::port>, state::f::value<&Listener::capacity>,
        state::f::conn_name<&Listener::queue>, state::f::value<&Listener::open>, state::f::skip<&Listener::pushed>,
        state::f::skip<&Listener::popped>);
  };
  struct Conn {
    std::string to_server;
    std::string to_client;
    int listener = -1;
    int server_fd = -1;
    int syn_attempts = 0;
    bool established = false;
    bool client_closed = false;  // the client closed its socket (gracefully or not)
    bool fin = false;            // ...gracefully: the server reads the end after the bytes
    bool server_closed = false;
    bool reset_client = false;   // the server closed with bytes unread: the client sees RST
    std::string client_pending;  // sent by the client, waiting for receive-buffer room
    bool reset = false;          // an RST arrived: the connection is dead
    int pending_error = 0;       // ECONNRESET or EPIPE, reported once by a read or a write
    bool client_file = false;    // the client's end holds a file (for file_max)
    bool client_reading = true;
    bool send_was_full = false;  // a write found no room: the next drain is a wake-up
    bool send_grown = false;     // K11: autotuned to send_buffer_max
    bool delivery_pending = false;
    bool server_shut = false;  // K14: the server half-closed; the client reads the end
    bool eof_sent = false;     // ...and has been told
    std::int64_t read_budget = -1;  // bytes the client will still take; -1: all
    std::uint64_t queued_at = 0;    // Listener::pushed when it was queued (skipped: see there)
    static constexpr auto state_fields = state::fields(
        state::f::value<&Conn::to_server>, state::f::value<&Conn::to_client>, state::f::value<&Conn::listener>,
        state::f::value<&Conn::server_fd>, state::f::value<&Conn::syn_attempts>, state::f::value<&Conn::established>,
        state::f::value<&Conn::client_closed>, state::f::value<&Conn::fin>, state::f::value<&Conn::server_closed>,
        state::f::value<&Conn::reset_client>, state::f::value<&Conn::client_pending>, state::f::value<&Conn::reset>,
        state::f::value<&Conn::pending_error>, state::f::value<&Conn::client_file>,
        state::f::value<&Conn::client_reading>, state::f::value<&Conn::send_was_full>,
        state::f::value<&Conn::send_grown>, state::f::value<&Conn::delivery_pending>,
        state::f::value<&Conn::server_shut>, state::f::value<&Conn::eof_sent>, state::f::value<&Conn::read_budget>,
        state::f::skip<&Conn::queued_at>);
  };
  struct Interest {
    std::uint32_t events = 0;
    Trigger trigger = Trigger::edge;
    bool queued = false;    // on the ready list
    bool disabled = false;  // one-shot, reported
    static constexpr auto state_fields = state::fields(
        state::f::value<&Interest::events>, state::f::value<&Interest::trigger>, state::f::value<&Interest::queued>,
        state::f::value<&Interest::disabled>);
  };
  struct Poller {
    int fd = -1;
    ByDescriptor<Interest> items;
    std::deque<int> ready;
    ThreadId waiter = no_thread;
    std::optional<Instant> last_empty_poll;  // when a non-blocking wait last found nothing
    bool interrupted = false;   // a signal came for its waiter: the wait returns EINTR
    // The last empty poll matters only while it is now (the next one costs time).
    static constexpr auto state_fields = state::fields(
        state::f::value<&Poller::fd>, state::f::value<&Poller::items>, state::f::value<&Poller::ready>,
        state::f::value<&Poller::waiter>, state::f::at_now<&Poller::last_empty_poll>,
        state::f::value<&Poller::interrupted>);
  };
  // K13: a pipe's buffer and which of its ends are open.
  struct Pipe {
    std::string bytes;
    int read_fd = -1;
    int write_fd = -1;
    std::size_t capacity = 0;  // K13: 65536 when made; F_SETPIPE_SZ changes it
    static constexpr auto state_fields = state::fields(
        state::f::value<&Pipe::bytes>, state::f::value<&Pipe::read_fd>, state::f::value<&Pipe::write_fd>,
        state::f::value<&Pipe::capacity>);
  };
  // K15: a socketpair(AF_UNIX, SOCK_STREAM). A pair_end's FdEntry::object is the pair's index
  // times two, plus its end.
  struct PairEnd {
    std::string in;            // what the other end wrote, not yet read here
    int fd = -1;               // -1 once closed
    bool shut = false;         // this end shut its writing (SHUT_WR)
    std::int32_t error = 0;    // ECONNRESET once, after the other end closed with `in` of its unread
    static constexpr auto state_fields = state::fields(
        state::f::value<&PairEnd::in>, state::f::value<&PairEnd::fd>, state::f::value<&PairEnd::shut>,
        state::f::value<&PairEnd::error>);
  };
  struct Pair {
    std::vector<PairEnd> ends;  // two
    static constexpr auto state_fields = state::fields(state::f::value<&Pair::ends>);
  };
  struct FaultState {
    AcceptFault fault;
    std::uint32_t landed = 0;
    bool spent = false;
    // An nth fault: accept calls still to come before the one that fails (the call count itself
    // is history, which no state needs).
    std::uint64_t calls_left = 0;
    static constexpr auto state_fields = state::fields(
        state::f::value<&FaultState::fault>, state::f::value<&FaultState::landed>, state::f::value<&FaultState::spent>,
        state::f::value<&FaultState::calls_left>);
  };

  // K15: the end of a pair that a pair_end's object names.
  PairEnd& pair_end(std::uint32_t object) { return pairs_[object / 2].ends[object % 2]; }
  const PairEnd& pair_end(std::uint32_t object) const { return pairs_[object / 2].ends[object % 2]; }
  // K11: the bytes `conn`'s send buffer holds now.
  std::size_t send_size(const Conn& conn) const {
    return conn.send_grown ? config_.send_buffer_max : config_.send_buffer;
  }
  // The calls' bodies, without the call point and what the caller learns (sim_kernel.cpp).
  template <class Body>
  auto call(int op, const Call& what, Body body);
  void spend_now(Duration duration);
  int listen_now(const ListenSpec& spec);
  int accept_now(int listener);
  std::int64_t read_now(int fd, std::span<char> into, bool consume = true);
  std::int64_t write_now(int fd, std::span<const char> from);
  int close_now(int fd);
  int abort_now(int fd);
  int poller_create_now();
  int watch_now(int poller, int fd, std::uint32_t interest, Trigger trigger);
  int rewatch_now(int poller, int fd, std::uint32_t interest, Trigger trigger);
  int unwatch_now(int poller, int fd);
  int wait_now(int poller, std::span<PollEvent> into, std::optional<Duration> timeout);
  int wake_create_now();
  void wake_signal_now(int wake);
  void wake_drain_now(int wake);
  int pipe_now(int ends[2]);
  int socketpair_now(int ends[2]);
  int shutdown_write_now(int fd);
  int file_open_now();

  bool backlog_capable(int fd) const;
  int allocate_fd(FdKind kind, std::uint32_t object);
  void release_fd(int fd);
  const FdEntry* entry(int fd) const;
  FdEntry* entry(int fd, FdKind kind);
  std::uint32_t readiness(int fd) const;
  void notify(int fd);
  void enqueue(Poller& poller, int fd, Interest& item);
  int harvest(Poller& poller, std::span<PollEvent> into);
  int empty_poll(std::uint32_t poller_index);
  std::int64_t kqueue_data(int fd) const;
  // A client's connection to `port`, holding a client file, its SYN not yet sent.
  ConnId new_client_conn(std::uint16_t port);
  void try_handshake(ConnId conn);
  void schedule_delivery(ConnId conn);
  void deliver(ConnId conn);
  void release_client_file(Conn& conn);
  void receive_reset(ConnId conn, int error);
  void pump(ConnId conn);
  int injected_accept_error(std::size_t queued);
  Duration slack();
  Duration with_slack(Duration duration) { return duration + slack(); }

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
  std::vector<Pipe> pipes_;
  std::vector<Pair> pairs_;  // K15
  std::vector<FaultState> accept_faults_;
  std::uint16_t next_port_ = 32768;
  // A thread's work: all it got done (`total`), and at each of its pollers' last waits how much
  // it had done then, so that a wait counts what was done since the previous wait on the same
  // poller: a loop driven from an outer one (R6) waits on the outer poller between its passes,
  // and that wait must not take its pass's work.
  struct Work {
    std::uint64_t total = 0, before_wait = 0;
    std::map<std::uint32_t, std::uint64_t> at_wait;  // poller index -> total at its last wait
  };
  std::vector<Work> work_;  // by thread + 1 (0: outside any thread)
  std::optional<Instant> calls_instant_;
  std::uint64_t calls_at_instant_ = 0;
  bool stalled_ = false;
  std::vector<ThreadId> sleepers_;  // in spend_interruptibly, in the order they began
  std::uint64_t server_releases_ = 0;
  void count_call();
  Work& work_of_current() {
    std::size_t slot = std::size_t(scheduler_.current() + 1);
    if (work_.size() <= slot) work_.resize(slot + 1);
    return work_[slot];
  }
  template <class Result> Result worked(Result result, bool did) {
    if (did) {
      ++work_of_current().total;
      calls_at_instant_ = 0;
    }
    return result;
  }

 public:
  // The state, field by field (realloop/state.hpp). Skipped: the scheduler and the client sink
  // (collaborators, digested on their own), next_port_ (a port only names a connection; conns_
  // counts them), work_ (what the trace says of past passes; nothing ahead depends on it) and
  // the stall guard (a run it stops ends there).
  static constexpr auto state_fields = state::fields(
      state::f::reference("scheduler_"), state::f::value<&SimKernel::config_>, state::f::skip<&SimKernel::sink_>,
      state::f::value<&SimKernel::fds_>, state::f::value<&SimKernel::free_fds_>, state::f::value<&SimKernel::open_fds_>,
      state::f::value<&SimKernel::client_files_>, state::f::value<&SimKernel::listeners_>,
      state::f::by_conn<&SimKernel::conns_>, state::f::value<&SimKernel::pollers_>, state::f::value<&SimKernel::wakes_>,
      state::f::value<&SimKernel::pipes_>, state::f::value<&SimKernel::pairs_>,
      state::f::value<&SimKernel::accept_faults_>, state::f::skip<&SimKernel::next_port_>,
      state::f::skip<&SimKernel::work_>, state::f::skip<&SimKernel::calls_instant_>,
      state::f::skip<&SimKernel::calls_at_instant_>, state::f::skip<&SimKernel::stalled_>,
      state::f::value<&SimKernel::sleepers_>, state::f::skip<&SimKernel::server_releases_>);
  friend struct state::Access;
};

}  // namespace loopsim::model
