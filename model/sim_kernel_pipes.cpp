// SimKernel's pipes (K13), half-close (K14), socket pairs (K15) and foreign files (K2).
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

}  // namespace loopsim::model
