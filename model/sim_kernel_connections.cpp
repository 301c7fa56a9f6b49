// SimKernel's connections: listeners and the accept queue (K9, K10), the client side and the
// deliveries between the two, and the server's socket calls (K11, K12).
#include "model/sim_kernel.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "base/assert.hpp"
#include "model/digest.hpp"
#include "model/sim_kernel_limits.hpp"

namespace loopsim::model {

using namespace limits;

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
  LOOPSIM_ASSERT(conns_[id].server_fd < 0 && !conns_[id].server_closed);  // accepted once
  conns_[id].server_fd = fd;
  return fd;
}

// Whether this accept call fails by injection. A windowed fault with a budget lands where the
// chooser says (a choice point of kind `fault`: 1 lands, 0 lets this accept through).
int SimKernel::injected_accept_error(std::size_t queued) {
  Instant now = scheduler_.now();
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

ConnId SimKernel::new_client_conn(std::uint16_t port) {
  auto id = ConnId(conns_.size());
  Conn conn;
  for (const Listener& listener : listeners_) {
    if (listener.port == port && listener.open) conn.listener = listener.fd;
  }
  conn.client_file = true;
  ++client_files_;
  conns_.push_back(std::move(conn));
  return id;
}

ConnId SimKernel::connect(std::uint16_t port) {
  const ConnId id = new_client_conn(port);
  // The SYN arrives after this call returns, so the caller hears of the handshake only after
  // it knows the connection's id.
  scheduler_.at(scheduler_.now(), [this, id] { try_handshake(id); }, tag(Happening::handshake, id));
  return id;
}

ConnId SimKernel::arrive(std::uint16_t port, const std::function<void(ConnId)>& named) {
  const ConnId id = new_client_conn(port);
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
  Instant retry_at = scheduler_.now() + config_.syn_rto * (std::int64_t(1) << conn.syn_attempts);
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
      scheduler_.choose(ChoiceKind::take, 2) == 0) {  // K11: autotuning grew the buffer first (natural)
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
    ++server_releases_;
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
    for (const auto& [watched, item] : poller.items) fds_[std::size_t(watched)].watched_by.erase(fd);
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

std::size_t SimKernel::send_buffer_of(int fd) const {
  if (fd < 0 || std::size_t(fd) >= fds_.size() || fds_[std::size_t(fd)].kind != FdKind::socket) {
    return config_.send_buffer;
  }
  return send_size(conns_[fds_[std::size_t(fd)].conn]);
}

void SimKernel::digest(Digest& d) const {
  state::visit([&d](std::int64_t v) { d.add(v); }, *this, scheduler_.now());
}

}  // namespace loopsim::model
