// The POSIX seam: a target program's calls on sockets, pollers, eventfds, pipes and clocks,
// served from SimKernel in virtual time (docs/targets.md).
//
// The seam is a preloaded library. Its interposers (interpose.cpp) route each call:
//  - a call on a descriptor the simulation owns goes to the Seam, whoever makes it;
//  - a call that makes a descriptor, or reads a clock, goes to the Seam when the target's own
//    thread makes it (its main() runs as a simulated thread), and to libc otherwise;
//  - everything else goes to libc: real files, the engine's own descriptors, the loader.
// Every simulated descriptor is a real one too (a placeholder opened on "/" with O_PATH), so
// the numbers the program sees can never collide with a real descriptor it opens, and a call
// the seam does not know reaches the placeholder and fails with EBADF, never with real I/O.
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <ucontext.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/assert.hpp"
#include "model/scheduler.hpp"
#include "model/sim_kernel.hpp"
#include "posix/threads.hpp"
#include "scenario/scenario.hpp"
#include "sim/clients.hpp"
#include "sim/world.hpp"
#include "target/target.hpp"  // MainWatch
#include "trace/trace.hpp"

namespace loopsim::posix {

// The libc function the seam stands in front of.
void* real_symbol(const char* name);

// The trap (posix/interpose_trap.cpp): the program's own system calls, served as libc's are,
// and rdtsc answered in virtual time (`trap_tsc`: for a program libc does not start).
// install_trap() returns why it could not install, or nothing.
std::string install_trap(bool trap_tsc);
bool trap_installed();
// rdtsc reads the machine's counter again, as a program is about to exec another (the flag
// outlives exec, and the new one has no handler for it).
void untrap_tsc();
// Takes out of `set` the signals no mask may block while the seam runs: SIGSYS once the trap is
// installed, SIGSEGV while rdtsc is trapped (each raised by a fault, which Linux turns into the
// process's end where it is blocked), and the preemption signal (`preemption`: a thread's mask,
// not a handler's, which may keep it out while it runs).
void keep_unblocked(sigset_t& set, bool preemption = true);
// The signals the seam keeps for itself: SIGSYS once the trap is installed, SIGSEGV where rdtsc
// is trapped, and the preemption signal while the seam runs. seam_keeps says which; kept_action
// is sigaction(2) for them, which answers and keeps the program's action, never installing it
// (the trap passes on to it what is not the trap's).
bool seam_keeps(int signal);
long kept_action(int signal, const struct sigaction* action, struct sigaction* old);

// A statically linked program, loaded into the seam's host (posix/loaded.cpp).
// load_program maps it, or says why it cannot; enter_loaded is then its main(), called with the
// host's argv (its own name first, then the program's argv).
std::string load_program(const char* path);
bool program_loaded();
int enter_loaded(int argc, char** argv, char** envp);
// Whether the program keeps a thread pointer (%fs) of its own, apart from the seam's: a loaded
// one, and one that links no library (Go built without cgo as a PIE, which the loader starts);
// its threads, made by its own clone, and its fork are then served. keep_thread_pointer says
// so, before its start; adopt_main_thread, on the main thread, just before it is entered.
void keep_thread_pointer();
bool keeps_thread_pointer();
void adopt_main_thread();
// Enters a program libc does not start at its entry point, as Linux's exec leaves it: argc,
// argv, the environment, and Linux's auxiliary vector with `replaced`'s entries in place of its
// own, no vDSO and a seeded AT_RANDOM (posix/host.cpp).
[[noreturn]] void enter_with(int argc, char** argv, char** envp,
                             const std::vector<std::pair<std::uint64_t, std::uint64_t>>& replaced);
// Its brk, a thread its own clone makes (the parent's context as the trap found it), and that
// thread's exit (false where this thread was not made so).
long program_break(long wanted);
long clone_thread(ucontext_t& parent, std::uint64_t flags, std::uint64_t stack, std::uint64_t tls, int* parent_tid,
                  int* child_tid);
bool exit_thread();
// sigaction(2) in the real kernel, for a handler of the seam's (`seams`) or of the program's:
// for a loaded program, through an entry that swaps the thread pointer. run_handler runs one of
// the program's from the seam's code.
int install_action(int signal, const struct sigaction* action, struct sigaction* old, bool seams);
void run_handler(void (*handler)(int, siginfo_t*, void*), int signal, siginfo_t* info, void* context);

// A real clock's time, read by the system call and never through the vDSO: where rdtsc is
// trapped (posix/interpose_trap.cpp), the vDSO's reads would fault, and be answered in virtual
// time. The seam's own watches read the machine's time so.
int real_clock(clockid_t clock, timespec* t);

// A symbol's name as a template argument, so that each one is looked up once.
template <std::size_t N>
struct Name {
  char text[N];
  constexpr Name(const char (&name)[N]) { std::copy_n(name, N, text); }
};
// libc's `name`, of type F: looked up on the first call, remembered after (dlsym is a hash
// lookup, and the interposers are on every call's path). Remembered in an atomic, not a guarded
// static: a sanitizer's runtime calls in here before it is set up, and intercepts the guard's
// functions. Two threads' first calls may both look it up; both find the same address.
template <typename F, Name name>
F* real() {
  static std::atomic<F*> symbol{nullptr};
  F* found = symbol.load(std::memory_order_relaxed);
  if (found == nullptr) {
    found = reinterpret_cast<F*>(real_symbol(name.text));
    symbol.store(found, std::memory_order_relaxed);
  }
  return found;
}
// libc's `name`, typed by its declaration in libc's own headers, so that the compiler checks
// every call made through it: LOOPSIM_REAL(accept4)(fd, address, length, flags).
#define LOOPSIM_REAL(name) ::loopsim::posix::real<decltype(::name), #name>()

// What the seam exports in front of libc: the interposers, and the entry points loopsim calls.
#define SEAM_EXPORT extern "C" __attribute__((visibility("default")))

class Seam final : public sim::ForeignServer {
 private:
  enum class Kind : std::uint8_t { none, unbound, listener, socket, poller, eventfd, pipe_read, pipe_write, file, pair, datagram, signalfd };

 public:
  Seam(const sim::Scenario& scenario, int (*main)(int, char**, char**), int argc, char** argv, char** envp,
       int host);

  // sim::ForeignServer
  void start(model::Scheduler& scheduler, model::SimKernel& kernel, sim::Trace& trace,
             const sim::Clients& clients) override;
  int listener() const override { return listener_; }
  std::uint64_t passes() const override { return passes_; }
  std::uint64_t calls() const { return calls_; }  // calls the seam served
  bool settled() const override { return passes_ > 0 || ended_; }
  std::int64_t open_connections() const override;

  // Whether the program listened on its port at all, for the error when it did not.
  bool listened() const { return listened_; }
  // Whether the program ended (exit, or a return from main), with what status, and when.
  bool ended() const { return ended_; }
  int exit_status() const { return exit_status_; }
  Instant ended_at() const { return ended_at_; }
  std::string listened_on() const;  // the ports it did listen on, for that error

  // Routing.
  bool owns(int fd) const { return kind_of(fd) != Kind::none && kind_of(fd) != Kind::file; }
  std::size_t thread_count() const { return threads_.size(); }  // threads it started
  // A real file the program opened, counted among the simulated descriptors (K2).
  bool holds_file(int fd) const { return kind_of(fd) == Kind::file; }
  bool in_target() const;
  bool active() const { return kernel_ != nullptr; }

  // The calls, on simulated descriptors (or making one). Each returns its result or -errno.
  long socket(int domain, int type);
  long bind(int fd, const sockaddr* address, socklen_t length);
  long listen(int fd, int backlog);
  long accept(int fd, sockaddr* address, socklen_t* length, int flags);
  long setsockopt(int fd, int level, int name, const void* value, socklen_t length);
  long getsockopt(int fd, int level, int name, void* value, socklen_t* length);
  long sockname(int fd, sockaddr* address, socklen_t* length, bool peer);
  long shutdown(int fd, int how);
  // connect(2): on a UDP socket it names where its datagrams go (nowhere, below); on a TCP one it
  // is refused by name (no outbound connections yet).
  long connect(int fd, const sockaddr* address, socklen_t length);
  // With `peek` (recv's MSG_PEEK, on a socket or a socket pair): the bytes stay to be read.
  long read(int fd, void* into, std::size_t size, bool nonblocking_now, bool peek = false);
  // `addressed`: sendto or sendmsg named where it goes (a UDP socket need not be connected).
  long write(int fd, const void* from, std::size_t size, bool nonblocking_now, bool addressed = false);
  long close(int fd);
  long poller_create(int flags);  // EPOLL_CLOEXEC
  long poller_control(int poller, int op, int fd, const epoll_event* event);
  long poller_wait(int poller, epoll_event* events, int max, int timeout_ms);
  // poll(2) on descriptors of which at least one is simulated (a mix with real ones is refused):
  // level-triggered, as Linux's, one pass of the trace. Negative descriptors are skipped.
  long poll(struct pollfd* fds, std::size_t n, std::optional<Duration> timeout);  // none: until ready
  long eventfd(unsigned int value, int flags);
  long pipe(int ends[2], int flags);
  long socketpair(int domain, int type, int ends[2]);  // K15: AF_UNIX, SOCK_STREAM
  long fcntl(int fd, int cmd, long arg);
  // dup(2), dup2, dup3 (onto `to`) and F_DUPFD (`lowest`: the lowest free number from `to`) of a
  // simulated descriptor, or onto one: the new number opens the same file.
  long duplicate(int fd, int to, bool cloexec, bool lowest);
  long ioctl(int fd, unsigned long request, void* arg);
  long file_slot();                 // a real file the program opens takes a simulated number too
  void file_opened(int fd, int slot);  // ...and is then known under its real one
  void file_failed(int slot);
  void file_closed(int fd);  // before the real close
  Instant now() const;
  // A sleep (nanosleep and its kin). On any thread, a signal delivered to it cuts it short, as
  // Linux's (signal(7): a sleep is never restarted): what was left of it; otherwise 0.
  Duration sleep(Duration duration);
  int descriptor_limit() const;
  // getrlimit and setrlimit(RLIMIT_NOFILE) as Linux does them for an unprivileged process: the
  // soft limit anywhere up to the hard one, the hard one lowered only. -errno on refusal.
  std::uint64_t descriptor_hard_limit() const;
  long set_descriptor_limits(std::uint64_t soft, std::uint64_t hard);
  long stat(int fd, struct stat* into);  // fstat on a simulated descriptor
  // A simulated call failed inside the engine (an exception where none may cross libc's
  // frames): the run stops (exit status 2) naming the call and the cause.
  [[noreturn]] void fatal(const char* call, const std::string& cause);

  // The program ended (main returned, or it called exit; or `signal`'s default action ended
  // it, status 128 + signal): its descriptors close, as a process's do, and its thread waits
  // for the run's end.
  [[noreturn]] void exited(int status, int signal = 0);
  // The program did something the seam cannot serve: the run stops (exit status 2) with a
  // message naming the call, the descriptor and the virtual time.
  [[noreturn]] void refuse(const std::string& call, int fd, const std::string& why);

  // While the seam serves a call, the calls it makes itself go to libc. Counted for each
  // simulated thread: another may run the program's code while this one blocks in a call.
  struct Inside {
    explicit Inside(Seam& seam) : seam_(seam) {
      if (seam_.here().depth++ == 0) {
        ++seam_.calls_;
        seam_.main_running(false);
      }
    }
    ~Inside() {
      if (--seam_.here().depth == 0) seam_.main_running(true);
    }
    Seam& seam_;
  };

  // ---- the target's threads (posix/threads.hpp) ----

  // Runs `f` on the engine's OS thread, on the calling thread's simulated thread: directly when
  // called there, else handed to the calling target thread's proxy, the baton with it. The
  // program's errno is left as it was: the engine's turn may run on this OS thread and set it,
  // and passing the baton may too (a futex wait that finds it passed already fails EAGAIN).
  template <typename F>
  void on_engine(F&& f) {
    using Body = std::remove_reference_t<F>;
    const int program_errno = errno;
    run_request(Request{&f, [](void* body) { (*static_cast<Body*>(body))(); }});
    errno = program_errno;
  }
  // pthread_create: a real thread that waits for the baton, and its proxy. Returns 0 or the
  // error pthread_create would (positive), as pthread functions do.
  long create_thread(pthread_t* thread, const pthread_attr_t* attributes, void* (*start)(void*), void* argument);
  TargetThread* thread_of(pthread_t thread);
  long join(TargetThread& thread, void** value);
  // The running simulated thread waits on `address` (a mutex's, a condition's, a futex word's)
  // until woken or `deadline` (none: until woken): 0, or -ETIMEDOUT. An `interruptible` wait
  // (a futex's, a lock's) also ends at a signal for the thread: -EINTR, as Linux's FUTEX_WAIT
  // (a lock's or a join's interposer runs the handlers and waits again, as glibc does).
  long wait_on(const void* address, std::optional<Instant> deadline, bool interruptible = false);
  // Wakes up to `most` of the threads waiting on `address`, first come first woken; how many.
  int wake_on(const void* address, int most);
  bool awaited(const void* address) const;
  // A point where the running thread may give way to another target thread that can run now:
  // a choice (kind preempt) while the run's preemptions are within [target] preemptions.
  void switch_point();
  // sched_yield: whoever else may run now runs first.
  void yield_thread();
  // A target thread, main() included, that ran sim::spin_slice of its own CPU time without a
  // call gives way, from the preemption signal's handler: it has spent sim::spin_cost of virtual
  // time, and whoever can run meanwhile runs (the thread holding the lock it spins on).
  void spin_yield();
  // The index of the target thread the running simulated thread stands for (0: main()).
  int worker() const;

  // ---- signals (a scenario's [[actions]], posix/signals.cpp) ----

  // Whether the seam keeps `signal`'s disposition itself: those a scenario can send, SIGALRM,
  // which its timers send, and SIGCHLD. Others are libc's, really installed.
  static bool simulated_signal(int signal);
  // sigaction(2) for a simulated signal: the disposition is kept, never installed.
  long sigaction(int signal, const struct sigaction* action, struct sigaction* old);
  // ForeignServer: a signal arrives for the process. It goes to the main thread, or, where that
  // one blocks it, to the first thread that does not (Seam::post_signal): a wait it blocks in
  // returns EINTR (SimKernel::interrupt); otherwise it learns of it at its next call's return.
  void signal(int signal) override;
  bool signals_pending() const { return deliverable() != 0; }
  // raise() (`to_process` false: the caller's alone), or kill() of its own process (it comes for
  // the process), from the program; the caller takes it now where it should (Seam::raise_signal).
  void raise_signal(int signal, bool to_process);
  // pthread_kill(3) to one of the program's threads (main() or one it started): pending for that
  // thread alone, taken where its mask lets it go, cutting its wait short as post_signal does.
  // False where `thread` is none of them, for libc to send.
  bool kill_thread(pthread_t thread, int signal);
  // tgkill(2) to one of the program's threads by its id, as kill_thread.
  bool kill_task(pid_t tid, int signal);
  // On a thread of the program's, as a call returns to it (on its own OS thread): runs what came
  // that the thread does not block, as Linux does on the way back to user space: the handler,
  // nothing if ignored, or the default action (these signals' is to end the process, status
  // 128 + the signal's number).
  void deliver_signals();
  bool restarts() const;  // every signal the thread may take asked SA_RESTART (or is ignored)
  // A thread changed its signal mask (sigprocmask, pthread_sigmask), to `now_blocked`: the seam
  // keeps the part of it that covers its signals. On main() it delivers what the change
  // unblocked; another thread's interposer does, as the call returns to it.
  void mask_changed(const sigset_t& now_blocked);
  // A call of this thread's failed EINTR at a signal whose handlers all asked SA_RESTART, on a
  // thread that is not main(): its interposer runs the handlers, then makes the call again.
  bool take_restart() { return std::exchange(here().restart, false); }
  // pause(2) (`mask` null) and sigsuspend(2): waits, in virtual time and under `mask` if given,
  // until a signal is delivered (its handler run under that mask); -EINTR. On a thread other
  // than main(), the handler runs as the call returns, and its interposer then calls
  // end_suspend, which puts the thread's own mask back.
  long suspend(const char* call, const sigset_t* mask);
  void end_suspend();
  // sigwaitinfo(2) and sigtimedwait(2), on any thread: waits for a signal of `set` and takes it,
  // its handler not run; its number. On main(), a signal outside `set` that main() does not
  // block cuts the wait short (-EINTR; its handler runs as the call returns); the end of
  // `timeout` does (-EAGAIN; none: no end).
  long wait_signal(const char* call, const sigset_t& set, std::optional<Duration> timeout = std::nullopt);
  // ITIMER_REAL in virtual time (setitimer, getitimer, alarm): SIGALRM when its value runs out,
  // then again every `interval` if that is above zero. Zero disarms it. Sets `left` and
  // `every` to what it had: the time left (zero: disarmed) and its interval.
  void set_real_timer(Duration value, Duration interval, Duration& left, Duration& every);
  void real_timer(Duration& left, Duration& every) const;
  // signalfd(2): a descriptor readable while a signal of `mask` is pending, whose read takes
  // them (struct signalfd_siginfo each). `fd` -1 makes one; a signalfd's own number sets its mask.
  long signalfd(int fd, const sigset_t& mask, int flags);
  // sigpending(2)'s part for the seam's signals: those pending for the process (that main()
  // blocks, or that wait for main() to return from a call), and the calling thread's own.
  void add_pending(sigset_t& into) const;

  // getrandom(2) and getentropy(3): bytes of a stream seeded by the scenario's seed, so that a
  // program's own randomness (Python's hash seed, its random module) replays with the run.
  void random_bytes(void* into, std::size_t size);

  // ---- processes (posix/processes.cpp) ----

  // fork(2) and its kin, on the calling thread: a real child that runs to its end before the
  // call returns in the parent, in no virtual time (one of Linux's schedules, the only one the
  // seam takes). The child is served only as far as exec: what it writes to a simulated pipe
  // reaches the pipe as fork returns; what it does with a simulated descriptor otherwise
  // (accept, wait) is refused by name, as is a child that outlasts target.spin_limit; its reads,
  // writes and shutdowns on a connection it holds the parent makes for it (child_forward).
  // Returns 0 in the child, and the child's pid or -errno in the parent. `before_exec`, run in
  // the child (posix_spawn, system, popen), may refuse or _exit instead of returning.
  long fork_process();
  // In the parent, on the engine, after fork_process: waits for the child's end and takes what
  // it reported. The child's pid.
  long await_child(pid_t pid, const char* call);
  // Whether this process is a target's child that has not exec'd yet: the simulation in it is
  // a copy, frozen at the fork, and must not run.
  bool forked() const { return report_ >= 0; }
  // In the child, on simulated descriptors: close, dup, dup2, dup3, F_DUPFD and the descriptor
  // flags, on the child's own table. -errno on failure.
  long child_close(int fd);
  long child_dup(int fd, int to, bool cloexec, bool lowest);
  long child_fcntl(int fd, int cmd, long arg);
  // In the child, on a simulated connection it holds (one its parent accepted: a server that
  // forks a child per connection, busybox's httpd): read, write and shutdown, made by the
  // parent, which waits in fork, on its own descriptor for the same connection, and answered
  // over the report channel (processes.cpp). Whether `call` is one of the interposers that come
  // here; the call made.
  static bool forwarded(const char* call);
  long child_forward(char op, int fd, void* buffer, std::size_t size, int how, bool nonblocking);
  // In the child, at exec: each simulated descriptor the new program would keep (not
  // close-on-exec) stays a placeholder there (EBADF to any call), or is refused by name as the
  // new program's stdin, stdout or stderr (it would be used unsimulated). Pipes' write ends
  // were made real buffers at the fork (buffer_pipes), whose bytes the parent delivers.
  void before_exec(const char* call);
  // In the child: posix_spawn failed with `error`, which the parent's call returns; no child is
  // left to wait for.
  [[noreturn]] void spawn_failed(int error);
  // Whether nothing the simulation sees has happened yet: no virtual time has passed, and there
  // is no simulated descriptor, no thread and nothing in the trace. A target that execs then (a
  // wrapper script) is replaced by the new program, which starts the run as if it had been the
  // target (posix/host.cpp, handover_environment).
  bool pristine() const;
  // waitpid(2), wait4(2) and waitid(2)'s P_PID and P_ALL (pid -1) on the program's children:
  // each ended before its fork returned, so there is never anything to wait for. The child's
  // pid, with its wait status in `status`; -ECHILD when none is left to reap. With `keep`
  // (WNOWAIT) it stays to be reaped again.
  long reap(pid_t pid, int& status, bool keep);

  // A test's hook: with LOOPSIM_SEAM_TEST_ERRNO=N in the target's environment, the engine writes
  // errno = N on its OS thread every millisecond of virtual time, from a scheduled happening, as
  // a client or a timer calling libc would; and each baton a thread takes sets it, as a futex
  // wait that finds the baton given already does. The seam's tests show with it that a call
  // which waited meanwhile hands the program back its own errno (calls::served), and that a
  // call cut short by a signal says EINTR on any thread.
  static constexpr const char* test_errno_variable = "LOOPSIM_SEAM_TEST_ERRNO";
  // Set, the seam reads one byte past a heap block of its own as it starts: what only the seam
  // built with AddressSanitizer notices (scripts/seam_asan.sh shows that it does).
  static constexpr const char* test_overrun_variable = "LOOPSIM_SEAM_TEST_OVERRUN";
  // Set, the seam built with ThreadSanitizer passes the baton with relaxed atomics, which order
  // nothing: what its threads hand each other races, and TSan must say so (scripts/seam_tsan.sh
  // shows that it does). Other builds ignore it.
  static constexpr const char* test_race_variable = "LOOPSIM_SEAM_TEST_RACE";

 private:
  void scribble_errno(int value, Instant at);

  // An open file description, as Linux keeps one: what `dup` shares. Its descriptors (Slot) hold
  // only their close-on-exec flag apart.
  struct Fd {
    Kind kind = Kind::none;
    int sim = -1;  // the SimKernel descriptor
    int slots = 0;  // the program's descriptors for it: more than one after a dup
    bool nonblocking = false;   // O_NONBLOCK: the file's status flag, shared with its duplicates
    bool inet6 = false;         // an AF_INET6 socket (its clients come over IPv4)
    bool v6only = false;        // ...IPV6_V6ONLY: net.ipv6.bindv6only's 0 until set
    bool connected = false;     // a UDP socket: connect named its peer
    bool signalled = false;     // a signalfd: its wake object says readable
    std::uint16_t peer_port = 0;
    bool semaphore = false;     // eventfd: EFD_SEMAPHORE
    bool linger_zero = false;   // SO_LINGER {1, 0}: close resets
    bool request_open = false;  // a read took bytes since the last write (the trace's request)
    std::uint16_t port = 0;     // unbound or listener: its port
    std::uint64_t counter = 0;  // eventfd: its count; signalfd: the seam's signals it reads
    // A poller: its registrations, by the watched file's SimKernel descriptor, each with the
    // program's descriptor it was made through (Linux keys one by both) and what it asked for.
    struct Watch {
      int fd;
      epoll_event event;
    };
    std::map<int, Watch> watched;
  };
  // A descriptor: the file it opens (its SimKernel descriptor, -1 for none) and FD_CLOEXEC, as
  // the program set it.
  struct Slot {
    int sim = -1;
    bool cloexec = false;
    int held = -1;  // a duplicate's: the SimKernel descriptor that counts it against the limit
  };

  Kind kind_of(int fd) const {
    return fd >= 0 && std::size_t(fd) < fds_.size() && fds_[std::size_t(fd)].sim >= 0 ? file_of(fd).kind : Kind::none;
  }
  Fd& file_of(int fd) { return files_[std::size_t(fds_[std::size_t(fd)].sim)]; }
  const Fd& file_of(int fd) const { return files_[std::size_t(fds_[std::size_t(fd)].sim)]; }
  // The table's entry for a simulated descriptor, or null. A call an interposer passed on because
  // its descriptor was simulated may find it gone: another of the program's threads closed it in
  // between (a preemption before the call reached the engine), and the call fails EBADF, as
  // Linux's would.
  Fd* simulated(int fd) { return owns(fd) ? &file_of(fd) : nullptr; }
  // `fd`'s number made a descriptor of `sim`'s file, in the seam's table (the real one is the
  // caller's to take).
  void share(int fd, int sim, bool cloexec);
  // A placeholder descriptor for `sim`. The placeholder itself is always close-on-exec; `cloexec`
  // is what the program asked for, which F_GETFD reports and exec honours (posix/processes.cpp).
  int adopt(Kind kind, int sim, bool nonblocking, bool cloexec);
  // Forgets `fd`, and closes its placeholder unless told not to (a number already another's).
  void forget(int fd, bool placeholder = true);
  void closed_unseen(int fd);
  long release(int fd, bool placeholder);  // close()'s body: the simulated descriptor closes
  int process_fd(int sim) const;
  void known_as(int sim, int fd);  // the program's descriptor for SimKernel's `sim`
  // false: a signal interrupted the wait, and the call fails EINTR.
  bool block_until(int sim, std::uint32_t ready);
  // Pending signals the running thread does not block, and so would be delivered now.
  std::uint64_t deliverable() const { return pending_here() & ~here().blocked; }
  // What the running thread may take: its own pending signals and the process's.
  std::uint64_t pending_here() const { return pending_signals_ | here().pending; }
  std::uint64_t& mask_of(model::ThreadId thread) const;  // the thread's mask of the seam's signals
  bool ignored(int signal) const;
  struct sigaction sigaction_of(int signal) const;  // what the program asked, or SIG_DFL
  void post_signal(int signal);  // a signal comes for the process, from the scenario or the program
  bool interrupt(model::ThreadId thread);  // cuts short the wait `thread` is in, if a signal can
  void shutdown_begins(int signal);  // the program takes `signal`: a shutdown_begin, if the scenario sent it
  static std::uint64_t simulated_bits(const sigset_t& set);  // the seam's signals in `set`
  // Blocks main() until a signal wakes it (SimKernel::interrupt), for `call`, or until
  // `deadline` if given.
  void await_signal(const char* call, std::optional<Instant> deadline = std::nullopt);
  void arm_real_timer(Instant due);
  // The signalfds' readiness, after what is pending changed.
  void signals_changed();
  int take_signal(std::uint64_t among);  // the lowest pending one of `among` (one is), taken
  long read_signals(Fd& f, void* into, std::size_t size);  // a signalfd's read, never blocking
  // What the seam keeps for each simulated thread (by ThreadId; [0] for the scheduler's own).
  struct PerThread {
    int worker = 0;    // the target thread's index, for the trace
    int depth = 0;     // Inside's count
    int blocker = -1;  // a simulated poller for its blocking calls, made when first needed
    bool in_pass = false;
    bool restart = false;  // take_restart
    std::uint64_t passes = 0;
    std::uint64_t blocked = 0;  // its signal mask, for the seam's signals
    // Signals sent to this thread alone (raise, a tgkill of its own), pending while its mask
    // blocks them: Linux's task pending set, which no other thread takes or sees.
    std::uint64_t pending = 0;
    std::optional<std::uint64_t> suspended;  // its own mask, while its handlers run under sigsuspend's
    // The futex word it waits on, in FUTEX_WAIT (a wait a signal cuts short), and whether
    // post_signal cut it short (took it off the word's queue).
    std::optional<const void*> futex_wait;
    bool futex_interrupted = false;
  };
  PerThread& here();
  const PerThread& here() const;
  PerThread& of(model::ThreadId thread) const;  // any thread's, made if need be
  // `signal` pends for the thread `t`, unless it is ignored and `t` does not block it: Linux
  // drops such a signal as it is sent. Whether it pended.
  bool pend_for(PerThread& t, int signal);
  int blocker();  // here()'s poller, made if need be; -errno if none could be
  void run_request(Request request);
  void stop_if_ended();
  void run_thread(TargetThread& thread);  // a proxy's body
  [[noreturn]] void spun(const std::string& who, Duration limit);
  // main() runs the program's code (`yes`: a call returns to it) or the seam's: counted in the
  // page loopsim watches (sim::MainWatch), when main()'s simulated thread is the one running.
  void main_running(bool yes);
  long failed(long error);  // charges a failing call its cost
  sim::ClientIndex client_of(int fd) const;
  std::uint64_t begin_pass(std::optional<Duration> timeout);  // a wait begins the thread's next pass: its number
  void end_pass();
  std::string where(int fd) const;

  const sim::Scenario& scenario_;
  int (*main_)(int, char**, char**);
  int argc_;
  char** argv_;
  char** envp_;
  int host_;
  model::Scheduler* scheduler_ = nullptr;
  model::SimKernel* kernel_ = nullptr;
  sim::Trace* trace_ = nullptr;
  const sim::Clients* clients_ = nullptr;
  model::ThreadId thread_ = model::no_thread;
  pthread_t main_os_{};  // main()'s OS thread: the engine's, which runs its fiber
  pid_t main_tid_ = 0;   // ...and its id
  void send_to_thread(model::ThreadId to, bool finished, int signal);
  int anchor_ = -1;   // the real descriptor placeholders are copied from
  mutable std::vector<PerThread> per_thread_;  // by ThreadId + 1
  std::vector<std::unique_ptr<TargetThread>> threads_;  // in the order they were started
  // The newest of the program's threads that `matches`: Linux gives an ended thread's
  // identifiers (its pthread_t, its id) to a later one.
  template <typename Matches>
  TargetThread* newest_thread(Matches matches) const {
    for (auto it = threads_.rbegin(); it != threads_.rend(); ++it) {
      if (matches(**it)) return it->get();
    }
    return nullptr;
  }
  // Who waits on each address, by ThreadId: looked up, never iterated.
  std::map<const void*, std::deque<model::ThreadId>> waiting_;
  // main()'s futex wait, while it waits: its address, and whether a signal ended it.
  int preemptions_ = 0;  // switches taken at switch_point, bounded by [target] preemptions
  std::uint64_t pending_signals_ = 0;       // bit n: signal n came and was not delivered yet
  // What each thread waits for in sigwait and its kin, while it does: by ThreadId, in order.
  std::map<model::ThreadId, std::uint64_t> awaiting_;
  std::uint64_t asked_ = 0;     // stopping signals the scenario sent, their shutdown not begun
  std::map<int, struct sigaction> actions_;  // what the program asked for each simulated signal
  // The program's children that ended and are not reaped yet, in the order they were forked:
  // pid and wait status.
  std::vector<std::pair<pid_t, int>> children_;
  int report_ = -1;        // in a forked child: its socket to the parent, for refusals and pipes
  int child_report_ = -1;  // in the parent, between fork_process and await_child: the other end
  [[noreturn]] void tell_parent_refused(const std::string& message);
  void serve_child_call(int report, const char* bytes, std::size_t size);
  Instant child_now_{};  // in a forked child: the parent's virtual time at its last answer
  void buffer_pipes();  // in the child, at the fork
  // The run stops (exit status 2) with `message`, from the parent; from a child, its parent stops it.
  [[noreturn]] void stop_run(const std::string& message);
  // ITIMER_REAL: when it runs out next (-1: disarmed), and its interval. Each arming counts
  // one more, so that a happening scheduled for an earlier arming does nothing.
  std::uint64_t random_state_ = 0;  // splitmix64's; 0 until first used
  std::optional<Instant> timer_due_;  // none: the real timer is not armed
  Duration timer_interval_{0};
  std::uint64_t timer_armings_ = 0;
  // By the program's descriptor number.
  std::deque<Slot> fds_;
  // The open files, by SimKernel descriptor. A deque: a thread blocked in a call holds its entry
  // while another thread's new descriptor grows the table, which must not move it.
  std::deque<Fd> files_;
  std::vector<int> by_sim_;          // SimKernel descriptor -> the program's
  std::vector<int> pollers_;         // the program's pollers, to forget closed descriptors in
  std::vector<std::uint16_t> ports_;  // every port it listened on
  int listener_ = -1;                // SimKernel's descriptor of the listener on the port
  bool listened_ = false;
  std::uint64_t passes_ = 0;
  std::uint64_t calls_ = 0;
  std::uint64_t hard_limit_ = 0;  // RLIMIT_NOFILE's hard limit: the scenario's, or lowered since
  bool ended_ = false;  // main() returned, or the program called exit
  int exit_status_ = 0;  // ...with this status
  Instant ended_at_{};
};

// For a target replaced by exec before it did anything the simulation saw: the environment the
// new program needs to start the run in its place (the seam preloaded, loopsim's descriptors
// kept open, and the start message it would otherwise wait for). Empty if it could not be made.
std::vector<std::string> handover_environment();

// The Seam of this process, while a simulation runs in it; null otherwise.
extern Seam* current;
// The page loopsim shares to watch main() (LOOPSIM_SEAM_WATCH_FD), or null.
extern sim::MainWatch* main_watch;

}  // namespace loopsim::posix
