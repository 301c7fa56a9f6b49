// The Kernel boundary: every call the loop makes to the world outside it.
//
// Nothing in realloop/ reads a clock, polls a descriptor or sleeps except through this
// interface. Two implementations exist: model::SimKernel (a simulated kernel in virtual time)
// and live::LinuxKernel (epoll and real sockets). The loop cannot tell them apart.
//
// Errors are returned as negative errno values (as libuv does), never thrown: a call that
// returns a descriptor or a byte count returns `-EAGAIN`, `-EMFILE`, ... on failure.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

namespace loopsim {

// Time is an integer count of nanoseconds, as seastar's clocks count it: a Duration is a length
// of time, an Instant a point on the kernel's clock, and "none" is std::nullopt, never a
// negative number. The two types do not mix by accident: an Instant minus an Instant is a
// Duration, an Instant plus a Duration an Instant, and an Instant plus an Instant does not
// compile.
using Duration = std::chrono::nanoseconds;

// The kernel's monotonic clock. Its epoch is the start of a simulation, or an arbitrary origin
// live (CLOCK_MONOTONIC's). It has no now(): the time is Kernel::now(), which a simulation moves.
struct KernelClock {
  using rep = std::int64_t;
  using period = std::nano;
  using duration = Duration;
  using time_point = std::chrono::time_point<KernelClock, Duration>;
  static constexpr bool is_steady = true;
};
using Instant = KernelClock::time_point;

// An instant's distance from the kernel's epoch, for a format or a digest that writes it as a
// number of nanoseconds.
constexpr Duration since_start(Instant t) { return t.time_since_epoch(); }

// An Instant or none, as std::optional<Instant> has it, in the room of one Instant: a held
// connection keeps five such deadlines, and a million connections are held. None is kept as the
// clock's least value, which no time the kernel gives reaches (times start at its epoch), and is
// read back only as none: has_value() false, and std::nullopt where it becomes an optional.
class MaybeInstant {
 public:
  constexpr MaybeInstant() = default;
  constexpr MaybeInstant(std::nullopt_t) {}
  constexpr MaybeInstant(Instant t) : t_(t) {}
  constexpr MaybeInstant& operator=(std::nullopt_t) {
    t_ = none_;
    return *this;
  }
  constexpr MaybeInstant& operator=(Instant t) {
    t_ = t;
    return *this;
  }
  constexpr void reset() { t_ = none_; }
  constexpr bool has_value() const { return t_ != none_; }
  constexpr explicit operator bool() const { return has_value(); }
  constexpr const Instant& operator*() const { return t_; }
  constexpr const Instant* operator->() const { return &t_; }
  constexpr operator std::optional<Instant>() const {
    return has_value() ? std::optional<Instant>(t_) : std::optional<Instant>();
  }
  friend constexpr bool operator==(const MaybeInstant&, const MaybeInstant&) = default;

 private:
  static constexpr Instant none_ = Instant::min();
  Instant t_ = none_;
};
static_assert(sizeof(MaybeInstant) == sizeof(Instant));

// A wait's timeout is a std::optional<Duration>: none (this name, for reading) waits until
// something is ready.
inline constexpr std::nullopt_t wait_forever = std::nullopt;

enum class Trigger : std::uint8_t {
  edge,     // EPOLLET / EV_CLEAR: reported once per wake-up
  level,    // reported on every wait while ready
  oneshot,  // EPOLLONESHOT / EV_ONESHOT: reported once, then disabled until re-armed
};

enum class PollerFlavour : std::uint8_t { epoll, kqueue };

// Interest and readiness bits.
namespace io {
inline constexpr std::uint32_t readable = 1u << 0;
inline constexpr std::uint32_t writable = 1u << 1;
inline constexpr std::uint32_t hangup = 1u << 2;       // EPOLLHUP: both directions closed
inline constexpr std::uint32_t read_hangup = 1u << 3;  // EPOLLRDHUP / EV_EOF: peer closed
inline constexpr std::uint32_t error = 1u << 4;        // EPOLLERR: reset
// Interest only: EPOLLEXCLUSIVE. Of several pollers watching one item exclusively, an arrival
// wakes one blocked waiter (K7).
inline constexpr std::uint32_t exclusive = 1u << 5;
}  // namespace io

struct PollEvent {
  int fd = -1;
  std::uint32_t ready = 0;  // io:: bits
  // kqueue flavour only: a listener's event carries the accept-queue depth (EVFILT_READ data).
  // The epoll flavour reports -1: epoll tells nothing of the depth.
  std::int64_t data = -1;
};

struct ListenSpec {
  std::string address = "127.0.0.1";
  std::uint16_t port = 0;  // 0: any free port (live); ignored in simulation
  int backlog = 128;
  bool reuse_port = false;  // live: SO_REUSEPORT, so that each worker may have a listener
};

class Kernel {
 public:
  virtual ~Kernel() = default;

  // Monotonic time. Never blocks. In simulation it only moves while every simulated thread is
  // blocked or spending (K1).
  virtual Instant now() = 0;

  // The calendar: whole seconds since the Unix epoch, for answers' Date field. None: the kernel
  // keeps no calendar (the simulated kernel, whose time is virtual), and answers carry no Date,
  // as RFC 9110 §6.6.1 asks of a server without a clock. Never blocks.
  virtual std::optional<std::int64_t> calendar_seconds() { return std::nullopt; }

  // CPU work done by the calling thread for `duration`: the thread is busy and other threads
  // run. Live it sleeps; in simulation the thread is busy in virtual time. May block.
  virtual void spend(Duration duration) = 0;

  // A non-blocking listening socket. Returns its descriptor or -errno.
  virtual int listen(const ListenSpec& spec) = 0;
  // The port a listener is bound to (useful after `port = 0`), or -errno.
  virtual int local_port(int listener) = 0;

  // Takes the oldest completed connection off the listener's accept queue. Never blocks.
  // Returns a non-blocking descriptor, or -EAGAIN (queue empty), -EMFILE/-ENFILE/-ENOBUFS (the
  // connection stays queued) or -ECONNABORTED (one connection consumed).
  virtual int accept(int listener) = 0;

  // Never block. read returns bytes read, 0 at end of stream, or -errno (-EAGAIN when nothing
  // is buffered, -ECONNRESET after a reset). write returns bytes taken (possibly fewer than
  // offered) or -errno.
  virtual std::int64_t read(int fd, std::span<char> into) = 0;
  virtual std::int64_t write(int fd, std::span<const char> from) = 0;

  // Releases the descriptor and removes it from every poller's interest set (K12).
  virtual int close(int fd) = 0;
  // Closes a connection abortively (SO_LINGER 0): the peer sees a reset, not an end of stream.
  virtual int abort(int fd) = 0;
  // The per-process descriptor limit (RLIMIT_NOFILE's soft limit).
  virtual int descriptor_limit() = 0;

  // A poller (epoll instance / kqueue). Returns its descriptor or -errno. A poller's own
  // descriptor is readable while it has ready items, so one poller can watch another.
  virtual int poller_create() = 0;
  // Registers, changes, or removes interest in fd. Registering or re-arming an item that is
  // already ready queues it at once, whatever its trigger.
  virtual int watch(int poller, int fd, std::uint32_t interest, Trigger trigger) = 0;
  virtual int rewatch(int poller, int fd, std::uint32_t interest, Trigger trigger) = 0;
  virtual int unwatch(int poller, int fd) = 0;
  // Fills `into` with at most `into.size()` events. Blocks up to `timeout` while none is ready:
  // 0 never blocks, none (wait_forever) never times out; a timeout is never negative. Returns the
  // count or -errno. It may return 0 before the timeout (live: a signal interrupted it); callers
  // must not assume it slept.
  virtual int wait(int poller, std::span<PollEvent> into, std::optional<Duration> timeout) = 0;

  // An eventfd-like wake object: readable while signalled. signal() may be called from any
  // thread (live: async-signal-safe); drain() clears it.
  virtual int wake_create() = 0;
  virtual void wake_signal(int wake) = 0;
  virtual void wake_drain(int wake) = 0;

  // A pipe (K13): `ends[0]` reads what `ends[1]` writes; both are non-blocking. Returns 0 or
  // -errno. read, write and close serve its ends as they serve sockets.
  virtual int pipe(int ends[2]) = 0;
  // Half-closes a connection (K14): the peer reads the end of stream after the bytes already
  // written; this end still reads, and its writes fail with EPIPE. Returns 0 or -errno.
  virtual int shutdown_write(int fd) = 0;

  virtual PollerFlavour flavour() const = 0;
};

}  // namespace loopsim
