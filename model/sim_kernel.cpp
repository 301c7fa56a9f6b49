#include "model/sim_kernel.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "model/digest.hpp"
#include <xxhash.h>
#include "base/assert.hpp"

namespace loopsim::model {

namespace {
constexpr int stdio_fds = 3;  // 0, 1 and 2 are taken, as in any process
// K13: Linux's default pipe buffer (16 pages), and the size up to which a write is atomic.
constexpr std::size_t pipe_default_capacity = 65536;  // K13: Linux's 16 pages
constexpr std::size_t pipe_max_size = 1048576;         // /proc/sys/fs/pipe-max-size's default
constexpr std::size_t page_size = 4096;
constexpr std::size_t pair_capacity = 212992;  // K15: net.core.wmem_default, a unix socket's send buffer
constexpr std::size_t pipe_atomic = 4096;

// Reported whatever the interest, as epoll always reports EPOLLHUP and EPOLLERR; the peer's
// close is reported too, as if every registration asked for EPOLLRDHUP (LinuxKernel does).
constexpr std::uint32_t always_reported = io::hangup | io::error | io::read_hangup;
}  // namespace

SimKernel::SimKernel(Scheduler& scheduler, SimKernelConfig config)
    : scheduler_(scheduler), config_(config) {
  fds_.resize(stdio_fds);
  for (auto& e : fds_) e.kind = FdKind::stdio;
  open_fds_ = stdio_fds;
}


Nanos SimKernel::slack() {
  const auto& set = config_.timer_slack;
  if (set.empty()) return Nanos(0);
  return set[scheduler_.choose(ChoiceKind::slack, std::uint32_t(set.size()))];
}

// K1: the thread is busy; others run; the clock moves only through the scheduler.
void SimKernel::spend_now(Nanos duration) {
  LOOPSIM_ASSERT_OP(duration.count(), >=, 0);
  scheduler_.sleep_until(scheduler_.now() + with_slack(duration));
}

// ---- descriptors (K2) ----

int SimKernel::allocate_fd(FdKind kind, std::uint32_t object) {
  int fd = free_fds_.empty() ? int(fds_.size()) : *free_fds_.begin();
  if (fd >= config_.rlimit_nofile) return -EMFILE;
  if (open_fds_ + client_files_ >= std::size_t(config_.file_max)) return -ENFILE;
  if (fd == int(fds_.size())) {
    fds_.emplace_back();
  } else {
    free_fds_.erase(free_fds_.begin());
  }
  fds_[std::size_t(fd)].kind = kind;
  fds_[std::size_t(fd)].object = object;
  ++open_fds_;
  return fd;
}

void SimKernel::release_fd(int fd) {
  FdEntry& e = fds_[std::size_t(fd)];
  // K12: out of every interest set, and off every ready list.
  for (int poller_fd : e.watched_by) {
    Poller& poller = pollers_[fds_[std::size_t(poller_fd)].object];
    poller.items.erase(fd);
    std::erase(poller.ready, fd);
  }
  e = FdEntry{};
  free_fds_.insert(fd);
  --open_fds_;
}

const SimKernel::FdEntry* SimKernel::entry(int fd) const {
  if (fd < 0 || std::size_t(fd) >= fds_.size()) return nullptr;
  const FdEntry& e = fds_[std::size_t(fd)];
  return e.kind == FdKind::free ? nullptr : &e;
}

SimKernel::FdEntry* SimKernel::entry(int fd, FdKind kind) {
  if (fd < 0 || std::size_t(fd) >= fds_.size()) return nullptr;
  FdEntry& e = fds_[std::size_t(fd)];
  return e.kind == kind ? &e : nullptr;
}

ConnId SimKernel::conn_of(int fd) const {
  const FdEntry* e = entry(fd);
  return e != nullptr && e->kind == FdKind::socket ? e->conn : no_conn;
}

// ---- listeners and the accept queue (K9, K10) ----

int SimKernel::listen_now(const ListenSpec& spec) {
  LOOPSIM_ASSERT_OP(spec.backlog, >=, 0);
  auto index = std::uint32_t(listeners_.size());
  int fd = allocate_fd(FdKind::listener, index);
  if (fd < 0) return fd;
  Listener listener;
  listener.fd = fd;
  listener.port = spec.port != 0 ? spec.port : next_port_++;
  // K9: Linux tests `queue length > backlog`, so one more than the backlog fits.
  listener.capacity = std::size_t(std::min(spec.backlog, config_.somaxconn)) + 1;
  listeners_.push_back(std::move(listener));
  return fd;
}

int SimKernel::local_port(int fd) {
  FdEntry* e = entry(fd, FdKind::listener);
  return e == nullptr ? -ENOTSOCK : listeners_[e->object].port;
}

std::size_t SimKernel::backlog(int fd) const {
  const FdEntry* e = entry(fd);
  if (e == nullptr || e->kind != FdKind::listener) return 0;
  return listeners_[e->object].queue.size();
}

// K10, in Linux's order: the descriptor is allocated before the queue is looked at, so a
// process out of descriptors sees EMFILE even when nothing is queued, and the queue is left
// as it was.
int SimKernel::accept_now(int listener_fd) {
  FdEntry* e = entry(listener_fd, FdKind::listener);
  if (e == nullptr) return entry(listener_fd) == nullptr ? -EBADF : -EINVAL;
  Listener& listener = listeners_[e->object];
  for (FaultState& state : accept_faults_) {
    if (state.calls_left > 0) --state.calls_left;
  }
  if (int error = injected_accept_error(listener.queue.size()); error != 0) {
    if (error == ECONNABORTED) {  // the connection it lands on is gone
      ConnId id = listener.queue.front();
      listener.queue.pop_front();
      ++listener.popped;
      conns_[id].reset = true;
      conns_[id].server_closed = true;
      if (sink_ != nullptr) scheduler_.at(scheduler_.now(), [this, id] { sink_->peer_reset(id); }, tag(Happening::peer_reset, id));
    }
    return -error;
  }
  int fd = allocate_fd(FdKind::socket, 0);
  if (fd < 0) return fd;
  if (listener.queue.empty()) {
    release_fd(fd);
    return -EAGAIN;
  }
  ConnId id = listener.queue.front();
  listener.queue.pop_front();
  ++listener.popped;
  fds_[std::size_t(fd)].conn = id;
  conns_[id].server_fd = fd;
  return fd;
}

// Whether this accept call fails by injection. A windowed fault with a budget lands where the
// chooser says (a choice point of kind `fault`: 1 lands, 0 lets this accept through).
int SimKernel::injected_accept_error(std::size_t queued) {
  Nanos now = scheduler_.now();
  for (FaultState& state : accept_faults_) {
    const AcceptFault& f = state.fault;
    if (state.spent) continue;
    if (f.error == ECONNABORTED && queued == 0) continue;  // nothing to abort yet
    if (f.nth != 0) {
      if (state.calls_left > 0) continue;
      state.spent = true;
      return f.error;
    }
    if (now < f.from || now >= f.until) continue;
    if (f.budget == 0) return f.error;
    if (scheduler_.choose(ChoiceKind::fault, 2) == 0) continue;
    if (++state.landed == f.budget) state.spent = true;
    return f.error;
  }
  return 0;
}

// ---- the client side ----

ConnId SimKernel::connect(std::uint16_t port) {
  auto id = ConnId(conns_.size());
  Conn conn;
  for (const Listener& listener : listeners_) {
    if (listener.port == port && listener.open) conn.listener = listener.fd;
  }
  conn.client_file = true;
  ++client_files_;
  conns_.push_back(std::move(conn));
  // The SYN arrives after this call returns, so the caller hears of the handshake only after
  // it knows the connection's id.
  scheduler_.at(scheduler_.now(), [this, id] { try_handshake(id); }, tag(Happening::handshake, id));
  return id;
}

ConnId SimKernel::arrive(std::uint16_t port, const std::function<void(ConnId)>& named) {
  auto id = ConnId(conns_.size());
  Conn conn;
  for (const Listener& listener : listeners_) {
    if (listener.port == port && listener.open) conn.listener = listener.fd;
  }
  conn.client_file = true;
  ++client_files_;
  conns_.push_back(std::move(conn));
  named(id);
  try_handshake(id);
  return id;
}

// K9: the handshake completes onto the accept queue if it has room. Otherwise the SYN is
// dropped and the client retransmits after its timeout (1 s, doubling), or, with
// abort_on_overflow, the client is reset.
void SimKernel::try_handshake(ConnId id) {
  Conn& conn = conns_[id];
  FdEntry* e = entry(conn.listener, FdKind::listener);
  if (e == nullptr) {  // nothing listens: RST
    conn.reset = true;
    release_client_file(conn);
    if (sink_ != nullptr) sink_->refused(id, ECONNREFUSED);
    return;
  }
  Listener& listener = listeners_[e->object];
  if (listener.queue.size() < listener.capacity) {
    listener.queue.push_back(id);
    conn.queued_at = listener.pushed++;
    LOOPSIM_ASSERT_OP(listener.queue.size(), <=, listener.capacity);  // K9: the queue never overfills
    conn.established = true;
    if (sink_ != nullptr) sink_->established(id);
    notify(conn.listener);  // K3: every completed handshake is a wake-up
    return;
  }
  if (config_.abort_on_overflow || conn.syn_attempts >= config_.syn_retries) {
    conn.reset = true;
    release_client_file(conn);
    int error = config_.abort_on_overflow ? ECONNRESET : ETIMEDOUT;
    if (sink_ != nullptr) sink_->refused(id, error);
    return;
  }
  Nanos retry_at = scheduler_.now() + config_.syn_rto * (std::int64_t(1) << conn.syn_attempts);
  ++conn.syn_attempts;
  if (sink_ != nullptr) sink_->syn_dropped(id, retry_at);
  scheduler_.at(retry_at, [this, id] { try_handshake(id); }, tag(Happening::handshake, id));
}

void SimKernel::send(ConnId id, std::string_view bytes) {
  Conn& conn = conns_.at(id);
  LOOPSIM_ASSERT(conn.established && !conn.client_closed);
  LOOPSIM_ASSERT(!conn.fin);  // nothing after a half-close
  if (conn.server_closed || conn.reset) return;  // the server is gone
  conn.client_pending.append(bytes);
  pump(id);
}

// Moves what the client sent into the server's receive buffer, as far as it has room.
void SimKernel::pump(ConnId id) {
  Conn& conn = conns_[id];
  std::size_t room = config_.receive_buffer - std::min(config_.receive_buffer, conn.to_server.size());
  std::size_t n = std::min(room, conn.client_pending.size());
  if (n == 0) return;
  conn.to_server.append(conn.client_pending, 0, n);
  conn.client_pending.erase(0, n);
  if (conn.server_fd >= 0) notify(conn.server_fd);  // K3: each arrival is a wake-up
}

void SimKernel::client_reset(ConnId id) {
  Conn& conn = conns_.at(id);
  if (conn.client_closed) return;
  conn.client_closed = true;
  conn.client_pending.clear();  // bytes that never left the client are lost with it
  release_client_file(conn);
  receive_reset(id, ECONNRESET);
}

// An RST reaches the server's socket. Bytes already received stay readable (Linux reads them
// before the error); the error is reported once, by the next read or write.
void SimKernel::receive_reset(ConnId id, int error) {
  Conn& conn = conns_[id];
  if (conn.reset) return;
  conn.reset = true;
  conn.pending_error = error;
  if (conn.server_fd >= 0) notify(conn.server_fd);
}

void SimKernel::set_client_reading(ConnId id, bool reading) {
  Conn& conn = conns_.at(id);
  conn.client_reading = reading;
  if (reading && !conn.to_client.empty()) schedule_delivery(id);
}

void SimKernel::client_close(ConnId id) {
  Conn& conn = conns_.at(id);
  if (conn.client_closed) return;
  conn.client_closed = true;
  conn.fin = true;
  release_client_file(conn);
  if (conn.server_fd >= 0) notify(conn.server_fd);
}

void SimKernel::set_client_read_budget(ConnId id, std::int64_t bytes) {
  Conn& conn = conns_.at(id);
  conn.read_budget = bytes;
  if (conn.client_reading && !conn.to_client.empty()) schedule_delivery(id);
}

void SimKernel::client_shutdown(ConnId id) {
  Conn& conn = conns_.at(id);
  if (conn.client_closed || conn.fin) return;
  conn.fin = true;
  if (conn.server_fd >= 0) notify(conn.server_fd);
}

void SimKernel::release_client_file(Conn& conn) {
  if (!conn.client_file) return;
  conn.client_file = false;
  --client_files_;
}

void SimKernel::schedule_delivery(ConnId id) {
  Conn& conn = conns_[id];
  if (conn.delivery_pending) return;
  conn.delivery_pending = true;
  scheduler_.at(scheduler_.now(), [this, id] { deliver(id); }, tag(Happening::delivery, id));
}

void SimKernel::deliver(ConnId id) {
  Conn& conn = conns_[id];
  conn.delivery_pending = false;
  if (conn.client_closed) {  // a closed socket answers data with an RST
    bool had_bytes = !conn.to_client.empty();
    conn.to_client.clear();
    if (had_bytes && !conn.server_closed) receive_reset(id, conn.fin ? EPIPE : ECONNRESET);
    return;
  }
  if (!conn.client_reading) return;
  std::string bytes;
  if (conn.read_budget < 0 || std::size_t(conn.read_budget) >= conn.to_client.size()) {
    bytes = std::move(conn.to_client);
    conn.to_client.clear();
  } else {
    bytes = conn.to_client.substr(0, std::size_t(conn.read_budget));
    conn.to_client.erase(0, bytes.size());
  }
  if (conn.read_budget >= 0) conn.read_budget -= std::int64_t(bytes.size());
  if (conn.send_was_full && conn.server_fd >= 0 && !bytes.empty()) {
    conn.send_was_full = false;
    notify(conn.server_fd);  // room again: a writable edge
  }
  if (sink_ == nullptr) return;
  if (!bytes.empty()) sink_->received(id, bytes);
  // An RST overtakes what a slow reader has not read yet (Linux purges the receive queue);
  // a FIN waits behind it.
  if (!conn.to_client.empty() && !(conn.server_closed && conn.reset_client)) {
    sink_->read_waiting(id);
    return;
  }
  conn.to_client.clear();
  if (conn.server_closed && conn.reset_client) {
    sink_->peer_reset(id);
  } else if ((conn.server_closed || conn.server_shut) && !conn.eof_sent) {
    conn.eof_sent = true;  // K14: a FIN is heard once, whether from a close or a shutdown
    sink_->peer_closed(id);
  }
}

// ---- sockets (K11 in part) ----

std::int64_t SimKernel::read_now(int fd, std::span<char> into, bool consume) {
  if (FdEntry* p = entry(fd, FdKind::pipe_read)) {
    if (!consume) return -ENOTSOCK;  // recv(MSG_PEEK) on a pipe: not a socket
    Pipe& pipe = pipes_[p->object];
    if (pipe.bytes.empty()) return pipe.write_fd < 0 ? 0 : -EAGAIN;
    bool was_full = pipe.bytes.size() >= pipe.capacity;
    std::size_t n = std::min(into.size(), pipe.bytes.size());
    std::memcpy(into.data(), pipe.bytes.data(), n);
    pipe.bytes.erase(0, n);
    if (was_full && pipe.write_fd >= 0) notify(pipe.write_fd);  // room again: a writable edge
    return std::int64_t(n);
  }
  if (entry(fd, FdKind::pipe_write) != nullptr) return -EBADF;  // the wrong end, as Linux says
  if (FdEntry* p = entry(fd, FdKind::pair_end)) {  // K15
    PairEnd& self = pair_end(p->object);
    const PairEnd& other = pair_end(p->object ^ 1);
    if (self.in.empty()) {
      if (self.error != 0) return -std::exchange(self.error, 0);
      return other.fd < 0 || other.shut ? 0 : -EAGAIN;
    }
    const bool was_full = self.in.size() >= pair_capacity;
    std::size_t n = std::min(into.size(), self.in.size());
    std::memcpy(into.data(), self.in.data(), n);
    if (!consume) return std::int64_t(n);  // MSG_PEEK: the bytes stay, readiness with them
    self.in.erase(0, n);
    if (was_full && other.fd >= 0) notify(other.fd);  // room again: a writable edge
    return std::int64_t(n);
  }
  FdEntry* e = entry(fd, FdKind::socket);
  if (e == nullptr) return entry(fd) == nullptr ? -EBADF : -EINVAL;
  ConnId id = e->conn;
  Conn& conn = conns_[id];
  if (!conn.to_server.empty()) {
    std::size_t n = std::min(into.size(), conn.to_server.size());
    std::memcpy(into.data(), conn.to_server.data(), n);
    if (!consume) return std::int64_t(n);
    conn.to_server.erase(0, n);
    pump(id);
    return std::int64_t(n);
  }
  // After the peer's FIN the end is read without consuming a later error, as Linux's
  // tcp_recvmsg checks SOCK_DONE before sk_err.
  if (conn.fin) return 0;
  if (conn.pending_error != 0) return -std::exchange(conn.pending_error, 0);
  return conn.reset ? 0 : -EAGAIN;
}

std::int64_t SimKernel::write_now(int fd, std::span<const char> from) {
  if (FdEntry* p = entry(fd, FdKind::pipe_write)) {
    Pipe& pipe = pipes_[p->object];
    if (pipe.read_fd < 0) return -EPIPE;  // Linux raises SIGPIPE too; loops ignore it
    std::size_t room = pipe.capacity - std::min(pipe.capacity, pipe.bytes.size());
    // Up to PIPE_BUF bytes are written whole or not at all; more may be written in part.
    if (room == 0 || (from.size() <= pipe_atomic && room < from.size())) return -EAGAIN;
    std::size_t n = std::min(room, from.size());
    pipe.bytes.append(from.data(), n);
    notify(pipe.read_fd);  // K3: every arrival is a wake-up
    return std::int64_t(n);
  }
  if (entry(fd, FdKind::pipe_read) != nullptr) return -EBADF;
  if (FdEntry* p = entry(fd, FdKind::pair_end)) {  // K15
    const PairEnd& self = pair_end(p->object);
    PairEnd& other = pair_end(p->object ^ 1);
    if (self.shut || other.fd < 0) return -EPIPE;  // Linux raises SIGPIPE too
    std::size_t room = pair_capacity - std::min(pair_capacity, other.in.size());
    if (room == 0) return -EAGAIN;
    std::size_t n = std::min(room, from.size());
    other.in.append(from.data(), n);
    notify(other.fd);  // K3: every arrival is a wake-up
    return std::int64_t(n);
  }
  FdEntry* e = entry(fd, FdKind::socket);
  if (e == nullptr) return entry(fd) == nullptr ? -EBADF : -EINVAL;
  ConnId id = e->conn;
  Conn& conn = conns_[id];
  if (conn.pending_error != 0) return -std::exchange(conn.pending_error, 0);
  if (conn.reset || conn.server_shut) return -EPIPE;
  std::size_t room = send_size(conn) - std::min(send_size(conn), conn.to_client.size());
  // Asked of a write that would be short, not of one that finds the buffer full: growth follows
  // the peer's acknowledgements, and a full buffer has had none since its last write.
  if (room > 0 && room < from.size() && !conn.send_grown && config_.send_buffer_max > config_.send_buffer &&
      scheduler_.choose(ChoiceKind::take, 2) == 1) {  // K11: autotuning grew the buffer first
    conn.send_grown = true;
    room = send_size(conn) - std::min(send_size(conn), conn.to_client.size());
  }
  std::size_t n = std::min(room, from.size());
  if (n < from.size()) conn.send_was_full = true;
  if (n == 0) return -EAGAIN;
  conn.to_client.append(from.data(), n);
  schedule_delivery(id);
  return std::int64_t(n);
}

int SimKernel::close_now(int fd) {
  const FdEntry* e = entry(fd);
  if (e == nullptr || e->kind == FdKind::stdio) return -EBADF;
  if (e->kind == FdKind::socket) {
    ConnId id = e->conn;
    Conn& conn = conns_[id];
    conn.server_closed = true;
    conn.server_fd = -1;
    // Closing with received bytes unread sends an RST rather than a FIN (RFC 2525, as Linux).
    conn.reset_client = conn.reset_client || !conn.to_server.empty() || !conn.client_pending.empty();
    schedule_delivery(id);
  } else if (e->kind == FdKind::listener) {
    Listener& listener = listeners_[e->object];
    listener.open = false;
    for (ConnId id : listener.queue) {  // queued connections are reset
      conns_[id].server_closed = true;
      if (sink_ != nullptr) scheduler_.at(scheduler_.now(), [this, id] { sink_->peer_reset(id); }, tag(Happening::peer_reset, id));
    }
    listener.popped += listener.queue.size();
    listener.queue.clear();
  } else if (e->kind == FdKind::pipe_read || e->kind == FdKind::pipe_write) {
    Pipe& pipe = pipes_[e->object];
    bool reader = e->kind == FdKind::pipe_read;
    (reader ? pipe.read_fd : pipe.write_fd) = -1;
    if (reader) pipe.bytes.clear();
    int other = reader ? pipe.write_fd : pipe.read_fd;
    release_fd(fd);
    if (other >= 0) notify(other);  // K13: the other end hangs up (reader) or errs (writer)
    return 0;
  } else if (e->kind == FdKind::pair_end) {  // K15
    PairEnd& self = pair_end(e->object);
    PairEnd& other = pair_end(e->object ^ 1);
    // Closing with bytes unread resets the other end: its next read says ECONNRESET, once.
    if (!self.in.empty() && other.fd >= 0) other.error = ECONNRESET;
    self.in.clear();
    self.fd = -1;
    const int peer = other.fd;
    release_fd(fd);
    if (peer >= 0) notify(peer);  // it reads the end, and hangs up
    return 0;
  } else if (e->kind == FdKind::poller) {
    Poller& poller = pollers_[e->object];
    for (auto& [watched, item] : poller.items) std::erase(fds_[std::size_t(watched)].watched_by, fd);
    poller.items.clear();
    poller.ready.clear();
  }
  release_fd(fd);
  return 0;
}

int SimKernel::abort_now(int fd) {
  FdEntry* e = entry(fd, FdKind::socket);
  if (e == nullptr) return entry(fd) == nullptr ? -EBADF : -EINVAL;
  conns_[e->conn].reset_client = true;
  return close_now(fd);
}

int SimKernel::unseen_attempts(ConnId id) const {
  const Conn& c = conns_.at(id);
  bool unseen = !c.established && !c.reset && !c.client_closed && c.server_fd < 0 &&
                c.to_server.empty() && c.to_client.empty() && c.client_pending.empty();
  return unseen ? c.syn_attempts : -1;
}

bool SimKernel::read_may_notify(int fd) const {
  const FdEntry* e = entry(fd);
  return e != nullptr && e->kind == FdKind::socket && !conns_[e->conn].client_pending.empty();
}

bool SimKernel::backlog_capable(int fd) const {
  const FdEntry* e = entry(fd);
  return e != nullptr && e->kind == FdKind::listener;
}

std::uint64_t SimKernel::conn_digest(ConnId id) const {
  const Conn& conn = conns_.at(id);
  std::uint64_t value = 0;
  state::visit([&value](std::int64_t v) { value = state::fold(value, std::uint64_t(v)); }, conn, scheduler_.now());
  std::int64_t position = -1;
  const FdEntry* e = entry(conn.listener);
  bool queued = conn.established && conn.server_fd < 0 && !conn.server_closed;
  if (queued && e != nullptr && e->kind == FdKind::listener) {
    const Listener& listener = listeners_[e->object];
    position = std::int64_t(conn.queued_at - listener.popped);
    LOOPSIM_ASSERT(position >= 0 && std::size_t(position) < listener.queue.size() && listener.queue[std::size_t(position)] == id);
  }
  return state::fold(value, std::uint64_t(position));
}

std::uint64_t SimKernel::conn_key(ConnId id) const {
  const Conn& conn = conns_.at(id);
  return state::fold(conn.to_server.size(), conn.to_client.size());
}

void SimKernel::digest(Digest& d) const {
  state::visit([&d](std::int64_t v) { d.add(v); }, *this, scheduler_.now());
}

// ---- pipes (K13), half-close (K14) and foreign files (K2) ----

int SimKernel::pipe_now(int ends[2]) {
  auto index = std::uint32_t(pipes_.size());
  int reader = allocate_fd(FdKind::pipe_read, index);
  if (reader < 0) return reader;
  int writer = allocate_fd(FdKind::pipe_write, index);
  if (writer < 0) {
    release_fd(reader);
    return writer;
  }
  pipes_.push_back(Pipe{{}, reader, writer, pipe_default_capacity});
  ends[0] = reader;
  ends[1] = writer;
  return 0;
}

int SimKernel::socketpair_now(int ends[2]) {
  auto index = std::uint32_t(pairs_.size());
  int first = allocate_fd(FdKind::pair_end, index * 2);
  if (first < 0) return first;
  int second = allocate_fd(FdKind::pair_end, index * 2 + 1);
  if (second < 0) {
    release_fd(first);
    return second;
  }
  Pair pair;
  pair.ends.resize(2);
  pair.ends[0].fd = first;
  pair.ends[1].fd = second;
  pairs_.push_back(std::move(pair));
  ends[0] = first;
  ends[1] = second;
  return 0;
}

int SimKernel::shutdown_write_now(int fd) {
  if (entry(fd, FdKind::listener) != nullptr) return 0;  // Linux: a listener has nothing to send
  if (FdEntry* p = entry(fd, FdKind::pair_end)) {  // K15: the other end reads the end after the bytes
    pair_end(p->object).shut = true;
    if (const int peer = pair_end(p->object ^ 1).fd; peer >= 0) notify(peer);
    notify(fd);
    return 0;
  }
  FdEntry* e = entry(fd, FdKind::socket);
  if (e == nullptr) return entry(fd) == nullptr ? -EBADF : -ENOTSOCK;
  Conn& conn = conns_[e->conn];
  if (conn.reset) return -ENOTCONN;
  conn.server_shut = true;
  schedule_delivery(e->conn);  // the FIN follows the bytes already written
  return 0;
}

int SimKernel::file_open_now() { return allocate_fd(FdKind::file, 0); }

std::int64_t SimKernel::pending_bytes(int fd) const {
  const FdEntry* e = entry(fd);
  if (e == nullptr) return -EBADF;
  if (e->kind == FdKind::socket) return std::int64_t(conns_[e->conn].to_server.size());
  if (e->kind == FdKind::pipe_read) return std::int64_t(pipes_[e->object].bytes.size());
  if (e->kind == FdKind::pair_end) return std::int64_t(pair_end(e->object).in.size());
  return -EINVAL;
}

// K13: F_GETPIPE_SZ and F_SETPIPE_SZ. Linux rounds a size up to a power of two pages (one
// page at least), refuses one past pipe-max-size to an unprivileged process (EPERM), and one
// smaller than what the pipe holds (EBUSY). Either end may ask; anything else is EBADF.
std::int64_t SimKernel::pipe_size(int fd) const {
  const FdEntry* e = entry(fd);
  if (e == nullptr || (e->kind != FdKind::pipe_read && e->kind != FdKind::pipe_write)) return -EBADF;
  return std::int64_t(pipes_[e->object].capacity);
}

std::int64_t SimKernel::set_pipe_size(int fd, std::uint64_t size) {
  const FdEntry* e = entry(fd);
  if (e == nullptr || (e->kind != FdKind::pipe_read && e->kind != FdKind::pipe_write)) return -EBADF;
  if (size > pipe_max_size) return -EPERM;
  std::size_t capacity = page_size;
  while (capacity < size) capacity *= 2;
  Pipe& pipe = pipes_[e->object];
  if (pipe.bytes.size() > capacity) return -EBUSY;
  const bool room_before = pipe.bytes.size() < pipe.capacity;
  pipe.capacity = capacity;
  if (!room_before && pipe.bytes.size() < capacity && pipe.write_fd >= 0) notify(pipe.write_fd);
  return std::int64_t(capacity);
}

// ---- wake objects ----

int SimKernel::wake_create_now() {
  int fd = allocate_fd(FdKind::wake, std::uint32_t(wakes_.size()));
  if (fd >= 0) wakes_.push_back(false);
  return fd;
}

void SimKernel::wake_signal_now(int fd) {
  FdEntry* e = entry(fd, FdKind::wake);
  LOOPSIM_ASSERT(e != nullptr);
  wakes_[e->object] = true;
  notify(fd);
}

void SimKernel::wake_drain_now(int fd) {
  FdEntry* e = entry(fd, FdKind::wake);
  LOOPSIM_ASSERT(e != nullptr);
  wakes_[e->object] = false;
}

// ---- the poller (K3, K4, K5) ----

std::uint32_t SimKernel::readiness(int fd) const {
  const FdEntry* e = entry(fd);
  if (e == nullptr) return 0;
  switch (e->kind) {
    case FdKind::listener:
      return listeners_[e->object].queue.empty() ? 0 : io::readable;
    case FdKind::wake:
      return io::writable | (wakes_[e->object] ? io::readable : 0);
    case FdKind::pipe_read: {  // K13: readable while bytes wait; hung up once the writer closed
      const Pipe& pipe = pipes_[e->object];
      return (pipe.bytes.empty() ? 0 : io::readable) | (pipe.write_fd < 0 ? io::hangup : 0);
    }
    case FdKind::pipe_write: {  // writable while there is room; an error once the reader closed
      const Pipe& pipe = pipes_[e->object];
      if (pipe.read_fd < 0) return io::writable | io::error;
      return pipe.bytes.size() < pipe.capacity ? io::writable : 0;
    }
    case FdKind::pair_end: {  // K15
      const PairEnd& self = pair_end(e->object);
      const PairEnd& other = pair_end(e->object ^ 1);
      const bool closed = other.fd < 0, ended = closed || other.shut;
      std::uint32_t mask = closed || other.in.size() < pair_capacity ? io::writable : 0;
      if (!self.in.empty() || ended || self.error != 0) mask |= io::readable;
      if (ended) mask |= io::read_hangup;
      // Linux: hung up once both directions are shut, the other end's close shutting both.
      if (closed || (self.shut && other.shut)) mask |= io::hangup;
      if (self.error != 0) mask |= io::error;
      return mask;
    }
    case FdKind::poller:  // readable while it has items queued (they are re-checked at harvest)
      return pollers_[e->object].ready.empty() ? 0 : io::readable;
    case FdKind::socket: {
      const Conn& conn = conns_[e->conn];
      std::uint32_t error = conn.pending_error != 0 ? io::error : 0;
      if (conn.reset) return io::readable | io::writable | io::read_hangup | io::hangup | error;
      std::uint32_t mask = conn.to_client.size() < send_size(conn) ? io::writable : 0;
      if (!conn.to_server.empty() || conn.fin) mask |= io::readable;
      if (conn.fin) mask |= io::read_hangup;
      return mask;
    }
    default:
      return 0;
  }
}

void SimKernel::enqueue(Poller& poller, int fd, Interest& item) {
  if (item.queued || item.disabled) return;
  if ((readiness(fd) & (item.events | always_reported)) == 0) return;
  item.queued = true;
  poller.ready.push_back(fd);
  if (poller.waiter != no_thread) scheduler_.wake(poller.waiter);
  if (poller.ready.size() == 1) notify(poller.fd);  // a poller watching this one
}

// K3: a wake-up queues the item if it is not on the ready list already, whatever the trigger.
// K7: exclusive registrations are visited in registration order, and the first whose poller
// had a blocked waiter ends the visit: busy pollers before it still got the item; pollers
// after it did not.
void SimKernel::notify(int fd) {
  const FdEntry* e = entry(fd);
  if (e == nullptr) return;
  bool exclusive_woken = false;
  for (int poller_fd : e->watched_by) {
    Poller& poller = pollers_[fds_[std::size_t(poller_fd)].object];
    Interest& item = poller.items.at(fd);
    bool exclusive = (item.events & io::exclusive) != 0;
    if (exclusive && exclusive_woken) continue;
    bool had_waiter = poller.waiter != no_thread;
    enqueue(poller, fd, item);
    if (exclusive && had_waiter && item.queued) exclusive_woken = true;
  }
}

int SimKernel::poller_create_now() {
  int fd = allocate_fd(FdKind::poller, std::uint32_t(pollers_.size()));
  if (fd >= 0) pollers_.emplace_back().fd = fd;
  return fd;
}

int SimKernel::watch_now(int poller_fd, int fd, std::uint32_t interest, Trigger trigger) {
  FdEntry* p = entry(poller_fd, FdKind::poller);
  if (p == nullptr || entry(fd) == nullptr) return -EBADF;
  if (fd == poller_fd) return -EINVAL;
  Poller& poller = pollers_[p->object];
  auto [it, inserted] = poller.items.try_emplace(fd, Interest{interest, trigger, false, false});
  if (!inserted) return -EEXIST;
  fds_[std::size_t(fd)].watched_by.push_back(poller_fd);
  enqueue(poller, fd, it->second);  // registering a ready item queues it at once
  return 0;
}

int SimKernel::rewatch_now(int poller_fd, int fd, std::uint32_t interest, Trigger trigger) {
  FdEntry* p = entry(poller_fd, FdKind::poller);
  if (p == nullptr || entry(fd) == nullptr) return -EBADF;
  Poller& poller = pollers_[p->object];
  auto it = poller.items.find(fd);
  if (it == poller.items.end()) return -ENOENT;
  it->second.events = interest;
  it->second.trigger = trigger;
  it->second.disabled = false;  // K6: re-arming
  enqueue(poller, fd, it->second);
  return 0;
}

int SimKernel::unwatch_now(int poller_fd, int fd) {
  FdEntry* p = entry(poller_fd, FdKind::poller);
  if (p == nullptr || entry(fd) == nullptr) return -EBADF;
  Poller& poller = pollers_[p->object];
  if (poller.items.erase(fd) == 0) return -ENOENT;
  std::erase(poller.ready, fd);
  std::erase(fds_[std::size_t(fd)].watched_by, poller_fd);
  return 0;
}

// K4, K5: take items from the front; an item no longer ready is dropped silently and takes no
// slot; level-triggered items go back to the tail, edge-triggered and one-shot do not; what
// is not taken stays at the front.
// K8: kqueue's EVFILT_READ reports how much is there: a listener's backlog depth, a socket's
// buffered bytes. epoll reports nothing (-1).
std::int64_t SimKernel::kqueue_data(int fd) const {
  if (config_.poller != PollerFlavour::kqueue) return -1;
  const FdEntry& e = fds_[std::size_t(fd)];
  if (e.kind == FdKind::listener) return std::int64_t(listeners_[e.object].queue.size());
  if (e.kind == FdKind::socket) return std::int64_t(conns_[e.conn].to_server.size());
  return -1;
}

int SimKernel::harvest(Poller& poller, std::span<PollEvent> into) {
  std::size_t n = 0;
  std::vector<int> again;
  while (n < into.size() && !poller.ready.empty()) {
    int fd = poller.ready.front();
    poller.ready.pop_front();
    Interest& item = poller.items.at(fd);
    item.queued = false;
    std::uint32_t ready = readiness(fd) & (item.events | always_reported);
    if (ready == 0) continue;
    std::int64_t data = kqueue_data(fd);
    into[n++] = PollEvent{fd, ready, data};
    if (item.trigger == Trigger::oneshot) item.disabled = true;
    if (item.trigger == Trigger::level) again.push_back(fd);
  }
  for (int fd : again) {
    poller.items.at(fd).queued = true;
    poller.ready.push_back(fd);
  }
  return int(n);
}

// K1: a spinning loop's repeated empty polls cost time, as their syscalls would.
int SimKernel::empty_poll(std::uint32_t index) {
  Nanos now = scheduler_.now();
  bool again = pollers_[index].last_empty_poll == now;
  pollers_[index].last_empty_poll = now;
  bool in_thread = scheduler_.current() != no_thread;  // tests poll from outside any thread
  if (again && in_thread && config_.empty_wait_cost > Nanos(0)) {
    scheduler_.sleep_until(now + config_.empty_wait_cost);
  }
  return 0;
}

int SimKernel::wait_now(int poller_fd, std::span<PollEvent> into, Nanos timeout) {
  FdEntry* p = entry(poller_fd, FdKind::poller);
  if (p == nullptr) return -EBADF;
  if (into.empty()) return -EINVAL;
  std::uint32_t index = p->object;
  Nanos deadline = timeout == wait_forever ? wait_forever : scheduler_.now() + with_slack(timeout);
  for (;;) {
    int n = harvest(pollers_[index], into);
    if (n == 0 && timeout == Nanos(0)) return empty_poll(index);
    if (n > 0 || timeout == Nanos(0)) return n;
    if (deadline != wait_forever && scheduler_.now() >= deadline) return 0;
    pollers_[index].waiter = scheduler_.current();
    scheduler_.block(deadline);
    pollers_[index].waiter = no_thread;
    if (std::exchange(pollers_[index].interrupted, false)) return -EINTR;
  }
}


// ---- the calls a simulated thread makes (the Kernel interface) ----
//
// Each is a point where open windowed happenings may land (Scheduler::call_point), and what it
// returns is what the calling thread learns (Scheduler::learn). A wait is the thread's rest
// point, at the place it was called from. Calls from outside any thread (setting up, callbacks)
// are neither.

namespace {
// What a call taught its caller, folded value by value.
class Learnt {
 public:
  explicit Learnt(int op) : value_(std::uint64_t(op) + 1) {}
  Learnt& add(std::int64_t v) {
    std::uint64_t state = value_ ^ (std::uint64_t(v) * 0xff51afd7ed558ccdull);
    value_ = splitmix64(state);
    return *this;
  }
  Learnt& add(std::string_view bytes) { return add(std::int64_t(XXH3_64bits(bytes.data(), bytes.size()))); }
  std::uint64_t value() const { return value_; }

 private:
  std::uint64_t value_;
};

enum Op : int {
  op_now, op_spend, op_listen, op_accept, op_read, op_write, op_close, op_abort, op_poller, op_watch, op_rewatch,
  op_unwatch, op_wait, op_wake_create, op_wake_signal, op_wake_drain, op_pipe, op_shutdown, op_file, op_pair
};
}  // namespace

bool SimKernel::interrupt(ThreadId thread) {
  for (Poller& p : pollers_) {
    if (p.waiter != thread || thread == no_thread) continue;
    p.interrupted = true;
    scheduler_.wake(thread);
    return true;
  }
  return false;
}

void SimKernel::count_call() {
  if (scheduler_.current() == no_thread) return;
  Nanos now = scheduler_.now();
  if (now != calls_instant_) {
    calls_instant_ = now;
    calls_at_instant_ = 0;
  }
  if (++calls_at_instant_ <= calls_at_instant_max) return;
  stalled_ = true;
  for (;;) scheduler_.block(wait_forever);
}

template <class Body>
auto SimKernel::call(int op, const Call& what, Body body) {
  count_call();
  scheduler_.call_point(what);
  auto result = body();
  scheduler_.learn(Learnt(op).add(std::int64_t(result)).value());
  return result;
}

Nanos SimKernel::now() {
  scheduler_.learn(Learnt(op_now).add(scheduler_.since_rest().count()).value());
  return scheduler_.now();
}

void SimKernel::spend(Nanos duration) {
  scheduler_.call_point(Call{Call::Kind::spend, -1});
  worked(0, duration > Nanos(0));
  spend_now(duration);
  scheduler_.learn(Learnt(op_spend).value());
}

using K = Call::Kind;
int SimKernel::listen(const ListenSpec& spec) { return call(op_listen, Call{K::allocate, -1}, [&] { return listen_now(spec); }); }
int SimKernel::accept(int listener) {
  return call(op_accept, Call{K::accept, listener}, [&] { int fd = accept_now(listener); return worked(fd, fd >= 0); });
}
std::int64_t SimKernel::write(int fd, std::span<const char> from) {
  return call(op_write, Call{K::write, fd}, [&] { std::int64_t n = write_now(fd, from); return worked(n, n > 0); });
}
// Closing a connection is work; closing a file, a poller or a pipe end is not (a program that
// opens and closes a spare descriptor around each failing accept gets nothing done).
int SimKernel::close(int fd) {
  return call(op_close, Call{K::close, fd}, [&] {
    const FdEntry* e = entry(fd);
    bool connection = e != nullptr && e->kind == FdKind::socket;
    int rc = close_now(fd);
    return worked(rc, rc == 0 && connection);
  });
}
int SimKernel::abort(int fd) {
  return call(op_abort, Call{K::close, fd}, [&] {
    const FdEntry* e = entry(fd);
    bool connection = e != nullptr && e->kind == FdKind::socket;
    int rc = abort_now(fd);
    return worked(rc, rc == 0 && connection);
  });
}
int SimKernel::poller_create() { return call(op_poller, Call{K::allocate, -1}, [&] { return poller_create_now(); }); }
int SimKernel::watch(int poller, int fd, std::uint32_t interest, Trigger trigger) {
  return call(op_watch, Call{K::watch, fd}, [&] { return watch_now(poller, fd, interest, trigger); });
}
int SimKernel::rewatch(int poller, int fd, std::uint32_t interest, Trigger trigger) {
  return call(op_rewatch, Call{K::watch, fd}, [&] { return rewatch_now(poller, fd, interest, trigger); });
}
int SimKernel::unwatch(int poller, int fd) {
  return call(op_unwatch, Call{K::other, fd}, [&] { return unwatch_now(poller, fd); });
}
int SimKernel::wake_create() { return call(op_wake_create, Call{K::allocate, -1}, [&] { return wake_create_now(); }); }
int SimKernel::shutdown_write(int fd) {
  return call(op_shutdown, Call{K::shutdown, fd}, [&] { int rc = shutdown_write_now(fd); return worked(rc, rc == 0); });
}
int SimKernel::file_open() { return call(op_file, Call{K::allocate, -1}, [&] { return file_open_now(); }); }

void SimKernel::wake_signal(int wake) {
  scheduler_.call_point(Call{K::wake_signal, wake});
  wake_signal_now(wake);
  scheduler_.learn(Learnt(op_wake_signal).value());
}

void SimKernel::wake_drain(int wake) {
  scheduler_.call_point(Call{K::wake_drain, wake});
  const FdEntry* e = entry(wake, FdKind::wake);
  worked(0, e != nullptr && wakes_[e->object]);
  wake_drain_now(wake);
  scheduler_.learn(Learnt(op_wake_drain).value());
}

std::int64_t SimKernel::peek(int fd, std::span<char> into) {
  count_call();
  scheduler_.call_point(Call{K::read, fd});
  std::int64_t n = read_now(fd, into, false);
  Learnt learnt(op_read);
  learnt.add(n);
  if (n > 0) learnt.add(std::string_view(into.data(), std::size_t(n)));
  scheduler_.learn(learnt.value());
  return n;
}

std::int64_t SimKernel::read(int fd, std::span<char> into) {
  count_call();
  scheduler_.call_point(Call{K::read, fd});
  std::int64_t n = read_now(fd, into);
  worked(0, n > 0);
  Learnt learnt(op_read);
  learnt.add(n);
  if (n > 0) learnt.add(std::string_view(into.data(), std::size_t(n)));
  scheduler_.learn(learnt.value());
  return n;
}

int SimKernel::socketpair(int ends[2]) {
  scheduler_.call_point(Call{K::allocate, -1});
  int rc = socketpair_now(ends);
  scheduler_.learn(Learnt(op_pair).add(rc).add(rc == 0 ? ends[0] : -1).add(rc == 0 ? ends[1] : -1).value());
  return rc;
}

int SimKernel::pipe(int ends[2]) {
  scheduler_.call_point(Call{K::allocate, -1});
  int rc = pipe_now(ends);
  scheduler_.learn(Learnt(op_pipe).add(rc).add(rc == 0 ? ends[0] : -1).add(rc == 0 ? ends[1] : -1).value());
  return rc;
}

[[gnu::noinline]] int SimKernel::wait(int poller, std::span<PollEvent> into, Nanos timeout) {
  count_call();
  scheduler_.rest(std::uint64_t(reinterpret_cast<std::uintptr_t>(__builtin_return_address(0))));
  scheduler_.call_point(Call{K::wait, poller});
  Work& work = work_of_current();
  work = Work{0, work.since_wait};
  int n = wait_now(poller, into, timeout);
  scheduler_.leave_rest();
  Learnt learnt(op_wait);
  learnt.add(n);
  for (int i = 0; i < n; ++i) {
    const PollEvent& e = into[std::size_t(i)];
    learnt.add(e.fd).add(std::int64_t(e.ready)).add(e.data);
  }
  scheduler_.learn(learnt.value());
  return n;
}

}  // namespace loopsim::model
