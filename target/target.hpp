// loopsim's end of a target run (docs/targets.md). A scenario's [target] program is started in
// a process of its own with the POSIX seam preloaded; that process runs the simulation, with
// the program's main() as its server thread, and this end answers its choices and reads back
// what it reports. One process per execution: the program's globals start fresh every time.
#pragma once

#include <atomic>
#include <chrono>
#include <csignal>

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "model/choice.hpp"
#include "scenario/scenario.hpp"
#include "sim/world.hpp"
#include "target/target_wire.hpp"
#include "trace/trace.hpp"

namespace loopsim::sim {

enum class TargetMode : std::uint8_t {
  run,    // the whole run at once (loopsim run, check)
  steps,  // a step at a time, as the explorer drives it
};

// The target's process died of its own fault: killed by SIGSEGV, SIGBUS, SIGFPE, SIGILL,
// SIGABRT, SIGTRAP or SIGSYS.
// `loopsim run` reports it as any target error (exit 2); a search that reached it after a
// decision reports it as a finding: the program crashed under that schedule.
class TargetDied : public ScenarioError {
 public:
  TargetDied(const std::string& where_and_what, const std::string& hint, std::string how)
      : ScenarioError(where_and_what, hint), how(std::move(how)) {}
  std::string how;  // "killed by signal 11 (Segmentation fault)"
};

// What a target's death under a schedule is called where properties are named: among an
// explorer's violated ones, and as the failed verdict of a counterexample's replay.
inline constexpr std::string_view target_died = "target_died";

// A page loopsim shares with its target's process (a memfd, LOOPSIM_SEAM_WATCH_FD): the seam
// counts in it each time main() enters the program's code or leaves it for a served call, so
// that loopsim can see a main() that spins. main() runs on the engine's own OS thread, so
// nothing in the target could watch it but another thread, and a thread of the seam's own
// there made a target's thread schedules replay otherwise under load.
// A target's thread, main() included, that runs this much of its own CPU time without a call
// the simulation serves is asked to give way (by a real-time signal, SIGRTMAX - 2, which the
// seam handles), as Linux preempts a thread that spins on a lock another holds; giving way costs
// it spin_cost of virtual time. target.spin_limit of it in all, a spin nothing ends, is an error.
inline constexpr Duration spin_slice = std::chrono::milliseconds(100);
inline constexpr Duration spin_cost = std::chrono::milliseconds(1);
// That signal: glibc keeps SIGRTMIN's first two for itself.
inline int preempt_signal() { return SIGRTMAX - 2; }

// What a process's threads are doing, from /proc/PID/task/*/syscall: how many run, and in which
// of Linux's system calls the others are blocked, by name, e.g. "1 running; 2 blocked in
// futex, 1 in epoll_wait". Said when a target falls silent: a call Linux serves for real, where
// the seam's never returns, means the program reached the kernel past the seam. Empty where
// /proc does not say.
std::string threads_seen(pid_t pid);

// A socket of the machine's own (TCP or UDP, IPv4 or IPv6) that process `pid` holds on local
// `port`, from /proc/net and /proc/PID/fd: "listening", "bound" (UDP), "connected" or, where it
// holds none, empty. Linux lists a TCP socket there once it listens or connects, not when it is
// only bound. A target's simulated descriptors are placeholders, never sockets; one of these
// on the scenario's port is a call that got past the seam.
std::string real_socket_on(pid_t pid, int port);

struct MainWatch {
  std::atomic<std::uint64_t> runs{0};            // odd while main() runs the program's code
  std::atomic<std::int64_t> since_virtual_ns{0};  // virtual time when it last went in
  // Set by loopsim before it signals main() to give way: it has spun a slice of its CPU time
  // (posix/threads.cpp, preempt_signal).
  std::atomic<std::uint32_t> preempt{0};
};

class TargetProcess {
 public:
  // Starts the program. Throws ScenarioError at target.exec when it cannot be started: no seam
  // library, a static binary the seam does not load, not an executable.
  // `chooser`, if given, is a portable chooser's text (model::Chooser::portable): the target's
  // process then decides by it itself, and run() checks the decisions afterwards.
  TargetProcess(const Scenario& scenario, const std::string& arm, TargetMode mode,
                const std::string& chooser = {});
  TargetProcess(const TargetProcess&) = delete;
  TargetProcess& operator=(const TargetProcess&) = delete;
  ~TargetProcess();

  // TargetMode::run: the whole run, every decision asked of `chooser`, or made by the target's
  // process with the chooser it was given and then put to `chooser`, which must agree.
  RunResult run(model::Chooser& chooser);
  // TargetMode::steps: the state at the start, then after each step.
  wire::Report begin(model::Chooser& chooser);
  wire::Report step(model::Chooser& chooser);
  RunResult finish(model::Chooser& chooser);

  // Where the program's stdout and stderr went.
  const std::string& output() const { return output_; }

 private:
  // One of the program's output streams: a pipe loopsim drains, of which it keeps the last
  // target_output_max bytes, written to its file when the process is gone.
  struct Output {
    int fd = -1;  // the pipe's read end; -1 once it said end of file
    std::string path;
    std::string tail;
    std::uint64_t written = 0;  // all the program wrote
  };
  void drain(Output& output, bool until_end);
  void write_out(const Output& output) const;
  // Ends the program's process group (with `let_end`, once the program has exited by itself),
  // reaps the program and takes the rest of its output. Its wait status, or -1 when it was
  // already reaped.
  int end_process(bool let_end = false);
  wire::Message expect(model::Chooser& chooser, wire::Type type);
  RunResult take_trace(const std::string& body);
  void agree(model::Chooser& chooser, const Trace& trace);
  bool local_ = false;
  [[noreturn]] void failed(const std::string& why);
  std::string last_stderr_line() const;
  std::string silent_for_long() const;

  const Scenario& scenario_;
  pid_t pid_ = -1;
  int socket_ = -1;
  std::string output_;  // the path before ".stdout" and ".stderr"
  Output out_, err_;
  MainWatch* watch_ = nullptr;  // the shared page (MainWatch), or null if none could be made
  // main() in the program's code for spin_limit of the machine's time: the run's end.
  // The spin watch on main(): `seen` its last count of runs, `since` when it last changed, in
  // main()'s own CPU time where the kernel says it (main_cpu_ns), or else the machine's time.
  void watch_main(std::uint64_t& seen, std::int64_t& since);
  std::int64_t watch_clock_ns() const;
  std::int64_t preempted_ns_ = 0;  // watch_clock_ns when main() was last asked to give way
  std::int64_t escape_checked_ns_ = 0;  // the machine's monotonic clock when real_socket_on last looked
  // CPU time the program's main thread has run (/proc/PID/task/PID/schedstat), ns; -1 if unsaid.
  std::int64_t main_cpu_ns() const;
};

// What is kept of each of a target's stdout and stderr: its last bytes (what a program that
// dies says last is what matters), after a line that says how much was cut before them.
inline constexpr std::size_t target_output_max = std::size_t(1) << 20;

// The seam library preloaded into a target: $LOOPSIM_SEAM, else libloopsim_seam.so beside the
// running executable (a build tree), else in ../lib/loopsim/ from it (an installed loopsim).
std::string seam_library();

// A target's process may hold at most this much heap and anonymous memory (RLIMIT_DATA), its
// simulation's trace included (at most trace_events_max events, about 1 GiB).
inline constexpr std::int64_t target_data_max = std::int64_t(4) << 30;

// When the scenario sets kernel.rlimit_nofile so low that an event loop cannot open its poller
// and a listener, the likelier cause of a target that never served: "POSITION: kernel.rlimit_nofile
// = N leaves the target K descriptor(s) beyond its standard streams" at the knob's own position
// (its line, or --set's). Empty otherwise.
std::string starved_of_descriptors(const Scenario& scenario);

}  // namespace loopsim::sim
