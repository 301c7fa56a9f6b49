// The seam's sockets (posix/seam.hpp): TCP over IPv4 and IPv6, whose clients all come over IPv4,
// and UDP into a network where no one answers (docs/targets.md, "UDP sockets", "IPv6 listeners").
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "posix/seam.hpp"

namespace loopsim::posix {

namespace {

// Simulated peers' ports, for getpeername: one per connection, as an ephemeral range would.
constexpr int peer_port_base = 40000;

// An IPv6 socket's name: `::` for a listener, else the IPv4 loopback as IPv6 shows it
// (::ffff:127.0.0.1): every client comes over IPv4.
void fill_address(sockaddr* address, socklen_t* length, std::uint16_t port, bool inet6, bool any = false) {
  if (address == nullptr || length == nullptr) return;
  if (inet6) {
    sockaddr_in6 in{};
    in.sin6_family = AF_INET6;
    in.sin6_port = htons(port);
    if (!any) {
      in.sin6_addr.s6_addr[10] = 0xff;
      in.sin6_addr.s6_addr[11] = 0xff;
      const std::uint32_t loopback = htonl(INADDR_LOOPBACK);
      std::memcpy(&in.sin6_addr.s6_addr[12], &loopback, sizeof loopback);
    }
    std::memcpy(address, &in, std::min<std::size_t>(*length, sizeof in));
    *length = sizeof in;
    return;
  }
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_port = htons(port);
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::memcpy(address, &in, std::min<std::size_t>(*length, sizeof in));
  *length = sizeof in;
}

long put_int(void* value, socklen_t* length, int v) {
  if (value == nullptr || length == nullptr || *length < socklen_t(sizeof(int))) return -EINVAL;
  std::memcpy(value, &v, sizeof v);
  *length = sizeof v;
  return 0;
}

}  // namespace

// ---- sockets ----

long Seam::socket(int domain, int type) {
  Inside inside(*this);
  if (domain != AF_INET && domain != AF_INET6) return failed(-EAFNOSUPPORT);  // docs/targets.md
  // A UDP socket sends into a network where no one answers (haproxy's resolvers, a syslog
  // client): always writable, never readable. Its descriptor is a wake object, never signalled.
  if ((type & 0xf) == SOCK_DGRAM) {
    const int sim = kernel_->wake_create();
    if (sim < 0) return failed(sim);
    const int fd = adopt(Kind::datagram, sim, (type & SOCK_NONBLOCK) != 0, (type & SOCK_CLOEXEC) != 0);
    file_of(fd).inet6 = domain == AF_INET6;
    return fd;
  }
  // Linux would serve these, and a program may go on without one as it would not live: the run
  // stops, naming the call.
  if (const int kind = type & 0xf; kind != SOCK_STREAM) {
    refuse(std::string(domain == AF_INET ? "socket(AF_INET, " : "socket(AF_INET6, ") +
               (kind == SOCK_DGRAM ? "SOCK_DGRAM" : kind == SOCK_RAW ? "SOCK_RAW" : "type " + std::to_string(kind)) + ")",
           -1, "the seam serves TCP and UDP sockets (SOCK_STREAM, SOCK_DGRAM) only (docs/targets.md)");
  }
  int slot = kernel_->file_open();  // K2: an unbound socket holds a descriptor too
  if (slot < 0) return failed(slot);
  const int fd = adopt(Kind::unbound, slot, (type & SOCK_NONBLOCK) != 0, (type & SOCK_CLOEXEC) != 0);
  file_of(fd).inet6 = domain == AF_INET6;
  return fd;
}

long Seam::bind(int fd, const sockaddr* address, socklen_t length) {
  Inside inside(*this);
  Fd* entry = simulated(fd);
  if (entry == nullptr) return failed(-EBADF);  // closed by another thread since (Seam::simulated)
  Fd& f = *entry;
  if (f.kind != Kind::unbound && f.kind != Kind::datagram) {
    return failed(f.kind == Kind::listener || f.kind == Kind::socket ? -EINVAL : -ENOTSOCK);
  }
  if (f.inet6) {  // Linux: the family checked after the length, EAFNOSUPPORT
    if (address == nullptr || length < socklen_t(sizeof(sockaddr_in6))) return failed(-EINVAL);
    if (address->sa_family != AF_INET6) return failed(-EAFNOSUPPORT);
    sockaddr_in6 in{};
    std::memcpy(&in, address, sizeof in);
    f.port = ntohs(in.sin6_port);
    return 0;
  }
  if (address == nullptr || length < socklen_t(sizeof(sockaddr_in)) || address->sa_family != AF_INET)
    return failed(-EINVAL);
  sockaddr_in in{};
  std::memcpy(&in, address, sizeof in);
  f.port = ntohs(in.sin_port);
  return 0;
}

long Seam::listen(int fd, int backlog) {
  Inside inside(*this);
  Fd* entry = simulated(fd);
  if (entry == nullptr) return failed(-EBADF);  // closed by another thread since (Seam::simulated)
  Fd& f = *entry;
  if (f.kind == Kind::listener) return 0;  // Linux: a second listen changes only the backlog
  if (f.kind == Kind::datagram) return failed(-EOPNOTSUPP);
  if (f.kind != Kind::unbound) return failed(f.kind == Kind::socket ? -EINVAL : -ENOTSOCK);
  std::uint16_t port = f.port;
  // Every client comes over IPv4: an IPv6-only listener listens where none of them connects (a
  // port of the kernel's choosing), and shows the program the port it bound.
  const bool reached = !(f.inet6 && f.v6only);
  kernel_->close(f.sim);
  int sim = kernel_->listen(ListenSpec{"127.0.0.1", reached ? port : std::uint16_t(0), std::max(backlog, 0)});
  if (sim < 0) {  // out of descriptors after all: the socket stays unbound, as Linux's would
    f.sim = kernel_->file_open();  // the number it just gave up, lowest free
    if (f.sim >= 0) {
      known_as(f.sim, fd);
    }
    return failed(sim);
  }
  f.kind = Kind::listener;
  f.sim = sim;
  known_as(sim, fd);
  LOOPSIM_ASSERT(kind_of(fd) == Kind::listener && process_fd(sim) == fd);
  ports_.push_back(port);
  if (reached && port == scenario_.target->port && !listened_) {
    listened_ = true;
    listener_ = sim;
    trace_->listener_fd = fd;
  }
  return 0;
}

long Seam::accept(int fd, sockaddr* address, socklen_t* length, int flags) {
  Inside inside(*this);
  Fd* entry = simulated(fd);
  if (entry == nullptr) return failed(-EBADF);  // closed by another thread since (Seam::simulated)
  Fd& f = *entry;
  if (f.kind == Kind::datagram) return failed(-EOPNOTSUPP);
  if (f.kind != Kind::listener) return failed(f.kind == Kind::unbound || f.kind == Kind::socket ? -EINVAL : -ENOTSOCK);
  for (;;) {
    int sim = kernel_->accept(f.sim);
    if (sim == -EAGAIN && !f.nonblocking) {  // a blocking accept waits for a connection
      trace_->events.push_back(sim::ev::Accept{now(), worker(), Door::listener, sim, sim::no_client});
      if (!block_until(f.sim, io::readable)) return failed(-EINTR);
      continue;
    }
    if (sim < 0) {
      trace_->events.push_back(sim::ev::Accept{now(), worker(), Door::listener, sim, sim::no_client});
      return failed(sim);
    }
    const bool inet6 = f.inet6;
    LOOPSIM_ASSERT(sim != f.sim);  // a connection's descriptor is its own, not the listener's
    int conn = adopt(Kind::socket, sim, (flags & SOCK_NONBLOCK) != 0, (flags & SOCK_CLOEXEC) != 0);
    file_of(conn).inet6 = inet6;
    trace_->events.push_back(sim::ev::Accept{now(), worker(), Door::listener, conn, client_of(conn)});
    fill_address(address, length, std::uint16_t(peer_port_base + kernel_->conn_of(sim) % 20000), inet6);
    return conn;
  }
}

long Seam::setsockopt(int fd, int level, int name, const void* value, socklen_t length) {
  Inside inside(*this);
  Fd* entry = simulated(fd);
  if (entry == nullptr) return failed(-EBADF);  // closed by another thread since (Seam::simulated)
  Fd& f = *entry;
  if (f.kind != Kind::unbound && f.kind != Kind::listener && f.kind != Kind::socket && f.kind != Kind::pair &&
      f.kind != Kind::datagram) {
    return failed(-ENOTSOCK);
  }
  if (level == IPPROTO_IPV6) {
    if (!f.inet6 || f.kind == Kind::pair) return failed(-ENOPROTOOPT);
    if (name == IPV6_V6ONLY) {
      if (value == nullptr || length < socklen_t(sizeof(int))) return failed(-EINVAL);
      if (f.kind != Kind::unbound || f.port != 0) return failed(-EINVAL);  // Linux: only before it is bound
      int on = 0;
      std::memcpy(&on, value, sizeof on);
      f.v6only = on != 0;
    }
    return 0;
  }
  if (level == SOL_SOCKET && name == SO_LINGER) {
    if (value == nullptr || length < socklen_t(sizeof(linger))) return failed(-EINVAL);
    linger l{};
    std::memcpy(&l, value, sizeof l);
    f.linger_zero = l.l_onoff != 0 && l.l_linger == 0;
  }
  // Every other option is taken and has no effect: the simulated kernel has no Nagle, no
  // keep-alive timers and fixed buffers (docs/targets.md).
  return 0;
}

long Seam::getsockopt(int fd, int level, int name, void* value, socklen_t* length) {
  Inside inside(*this);
  Fd* entry = simulated(fd);
  if (entry == nullptr) return failed(-EBADF);  // closed by another thread since (Seam::simulated)
  Fd& f = *entry;
  if (f.kind != Kind::unbound && f.kind != Kind::listener && f.kind != Kind::socket && f.kind != Kind::pair &&
      f.kind != Kind::datagram) {
    return failed(-ENOTSOCK);
  }
  const bool pair = f.kind == Kind::pair;  // K15's buffer: net.core.wmem_default
  if (level == SOL_SOCKET) {
    switch (name) {
      case SO_TYPE: return put_int(value, length, f.kind == Kind::datagram ? SOCK_DGRAM : SOCK_STREAM);
      case SO_ERROR: return put_int(value, length, 0);
      case SO_ACCEPTCONN: return put_int(value, length, f.kind == Kind::listener);
      case SO_DOMAIN: return put_int(value, length, pair ? AF_UNIX : f.inet6 ? AF_INET6 : AF_INET);
      case SO_SNDBUF:  // K11: a connection's as autotuning left it
        return put_int(value, length,
                       pair                      ? 212992
                       : f.kind == Kind::socket ? int(kernel_->send_buffer_of(f.sim))
                                                : int(scenario_.kernel.send_buffer));
      case SO_RCVBUF: return put_int(value, length, pair ? 212992 : int(scenario_.kernel.receive_buffer));
      default: break;
    }
  }
  if (level == IPPROTO_IPV6) {
    if (!f.inet6 || pair) return failed(-ENOPROTOOPT);
    if (name == IPV6_V6ONLY) return put_int(value, length, f.v6only);
  }
  return put_int(value, length, 0);
}

long Seam::sockname(int fd, sockaddr* address, socklen_t* length, bool peer) {
  Inside inside(*this);
  Fd* entry = simulated(fd);
  if (entry == nullptr) return failed(-EBADF);  // closed by another thread since (Seam::simulated)
  Fd& f = *entry;
  if (f.kind != Kind::unbound && f.kind != Kind::listener && f.kind != Kind::socket && f.kind != Kind::pair &&
      f.kind != Kind::datagram) {
    return failed(-ENOTSOCK);
  }
  if (address == nullptr || length == nullptr) return failed(-EFAULT);
  if (f.kind == Kind::datagram) {
    if (peer && !f.connected) return failed(-ENOTCONN);
    fill_address(address, length, peer ? f.peer_port : f.port, f.inet6, !peer && f.port == 0);
    return 0;
  }
  if (f.kind == Kind::pair) {  // an unnamed local socket: its family alone, either end
    const sa_family_t family = AF_UNIX;
    std::memcpy(address, &family, std::min<std::size_t>(*length, sizeof family));
    *length = sizeof family;
    return 0;
  }
  if (peer) {
    if (f.kind != Kind::socket) return failed(-ENOTCONN);
    fill_address(address, length, std::uint16_t(peer_port_base + kernel_->conn_of(f.sim) % 20000), f.inet6);
    return 0;
  }
  fill_address(address, length, f.kind == Kind::socket ? std::uint16_t(scenario_.target->port) : f.port, f.inet6,
               f.kind != Kind::socket);
  return 0;
}

long Seam::connect(int fd, const sockaddr* address, socklen_t length) {
  Inside inside(*this);
  Fd* entry = simulated(fd);
  if (entry == nullptr) return failed(-EBADF);  // closed by another thread since (Seam::simulated)
  Fd& f = *entry;
  if (f.kind != Kind::datagram) refuse("connect", fd, "outbound connections are not simulated yet");
  const socklen_t needed = f.inet6 ? socklen_t(sizeof(sockaddr_in6)) : socklen_t(sizeof(sockaddr_in));
  if (address == nullptr || length < socklen_t(sizeof(sa_family_t))) return failed(-EINVAL);
  if (address->sa_family == AF_UNSPEC) {  // Linux: dissolves the association
    f.connected = false;
    return 0;
  }
  if (length < needed) return failed(-EINVAL);
  if (address->sa_family != (f.inet6 ? AF_INET6 : AF_INET)) return failed(-EAFNOSUPPORT);
  f.peer_port = f.inet6 ? ntohs(reinterpret_cast<const sockaddr_in6*>(address)->sin6_port)
                        : ntohs(reinterpret_cast<const sockaddr_in*>(address)->sin_port);
  f.connected = true;
  return 0;
}

long Seam::shutdown(int fd, int how) {
  if (forked()) return child_forward('s', fd, nullptr, 0, how, false);
  Inside inside(*this);
  Fd* entry = simulated(fd);
  if (entry == nullptr) return failed(-EBADF);  // closed by another thread since (Seam::simulated)
  Fd& f = *entry;
  if (f.kind == Kind::unbound || (f.kind == Kind::datagram && !f.connected)) return failed(-ENOTCONN);
  if (f.kind == Kind::datagram) return how == SHUT_RD || how == SHUT_WR || how == SHUT_RDWR ? 0 : failed(-EINVAL);
  if (f.kind != Kind::listener && f.kind != Kind::socket && f.kind != Kind::pair) return failed(-ENOTSOCK);
  if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR) return failed(-EINVAL);
  if (how == SHUT_RD) return 0;  // K14 covers the sending half; the receiving half changes nothing here
  long rc = kernel_->shutdown_write(f.sim);
  return rc < 0 ? failed(rc) : rc;
}

}  // namespace loopsim::posix
