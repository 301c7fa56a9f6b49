#include "target/run.hpp"
#include "target/target.hpp"

#include <nlohmann/json.hpp>

#include <elf.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "scenario/files.hpp"
#include "trace/trace_codec.hpp"

extern char** environ;

namespace loopsim::sim {

// ---- the wire ----

bool wire::send(int fd, Type type, std::string_view body) {
  std::string frame;
  frame.reserve(5 + body.size());
  frame.push_back(char(type));
  put(frame, std::uint32_t(body.size()));
  frame.append(body);
  std::size_t done = 0;
  while (done < frame.size()) {
    ssize_t n = ::send(fd, frame.data() + done, frame.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += std::size_t(n);
  }
  return true;
}

bool wire::send_failure(int fd, Failure failure, std::string_view message) {
  std::string body(1, char(failure));
  body.append(message);
  return send(fd, Type::error, body);
}

namespace {

bool read_exactly(int fd, char* into, std::size_t size) {
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = ::recv(fd, into + done, size - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += std::size_t(n);
  }
  return true;
}

}  // namespace

bool wire::sent_by_target(Type type) {
  return type == Type::choose || type == Type::report || type == Type::trace || type == Type::error;
}

namespace {

// A frame's header: its type and body size, checked as a target's.
std::pair<wire::Type, std::uint32_t> frame_header(std::string_view header, wire::From from = wire::From::target) {
  std::size_t at = 1;
  const auto size = wire::get<std::uint32_t>(header, at);
  const auto type = wire::Type(header[0]);
  if (from == wire::From::loopsim) return {type, size};
  if (!wire::sent_by_target(type)) throw std::runtime_error("a message of a type no target sends");
  if (size > wire::body_max) throw std::runtime_error("a message of " + std::to_string(size) + " bytes");
  return {type, size};
}

}  // namespace

std::optional<wire::Message> wire::take_message(std::string_view& in) {
  if (in.size() < 5) return std::nullopt;
  auto [type, size] = frame_header(in.substr(0, 5));
  if (in.size() - 5 < size) return std::nullopt;
  Message message{type, std::string(in.substr(5, size))};
  in.remove_prefix(5 + std::size_t(size));
  return message;
}

std::optional<wire::Choose> wire::decode_choose(std::string_view body, std::uint8_t kinds) {
  if (body.size() != 5) return std::nullopt;
  std::size_t at = 0;
  Choose c{get<std::uint8_t>(body, at), get<std::uint32_t>(body, at)};
  if (c.kind >= kinds || c.options < 2) return std::nullopt;
  return c;
}

std::optional<wire::Message> wire::receive(int fd, From from) {
  char header[5];
  if (!read_exactly(fd, header, sizeof header)) return std::nullopt;
  auto [type, size] = frame_header(std::string_view(header, sizeof header), from);
  Message message{type, std::string(size, '\0')};
  if (!read_exactly(fd, message.body.data(), size)) return std::nullopt;
  return message;
}

// ---- starting the program ----

namespace {

// Each target runs in a process group of its own, ended with killpg on every way out of
// loopsim: with its TargetProcess, at exit(), and at a signal that ends loopsim (SIGINT,
// SIGTERM, SIGHUP, SIGQUIT, and SIGABRT, which an uncaught exception raises). SIGKILL cannot
// be caught: PR_SET_PDEATHSIG then ends the target itself. The groups are kept where a signal
// handler may read them: fixed slots, lock-free.
constexpr std::size_t live_groups_max = 256;
std::array<std::atomic<pid_t>, live_groups_max> live_groups{};
constexpr std::array ending_signals{SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT};
std::array<struct sigaction, ending_signals.size()> before_ending{};

void end_live_groups() {
  for (std::atomic<pid_t>& group : live_groups) {
    if (pid_t leader = group.exchange(0); leader > 0) ::killpg(leader, SIGKILL);
  }
}

// Async-signal-safe: ends the groups, then lets the signal do what it did before.
void on_ending_signal(int signal) {
  end_live_groups();
  for (std::size_t i = 0; i < ending_signals.size(); ++i) {
    if (ending_signals[i] == signal) ::sigaction(signal, &before_ending[i], nullptr);
  }
  ::raise(signal);  // delivered as the handler returns, to the disposition restored
}

void watch_ending() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::atexit(end_live_groups);
    struct sigaction action {};
    action.sa_handler = on_ending_signal;
    sigemptyset(&action.sa_mask);
    for (std::size_t i = 0; i < ending_signals.size(); ++i) ::sigaction(ending_signals[i], &action, &before_ending[i]);
  });
}

void add_group(pid_t leader) {
  for (std::atomic<pid_t>& group : live_groups) {
    pid_t empty = 0;
    if (group.compare_exchange_strong(empty, leader)) return;
  }
  // All slots taken: the group still ends with its TargetProcess, only not at a signal.
}

void remove_group(pid_t leader) {
  for (std::atomic<pid_t>& group : live_groups) {
    pid_t mine = leader;
    if (group.compare_exchange_strong(mine, 0)) return;
  }
}

// What keeps `program` from running under the seam, or empty. The seam is a preloaded library:
// a dynamically linked program (an ELF file with a program interpreter) loads it itself; a
// statically linked one (`load`), position-dependent or static-pie, is loaded by the seam into a
// host that does (posix/loaded.cpp).
std::string unfit_program(const std::string& program, bool& load) {
  load = false;
  if (::access(program.c_str(), X_OK) != 0) return "is not executable (" + std::string(std::strerror(errno)) + ")";
  std::ifstream in(program, std::ios::binary);
  Elf64_Ehdr header{};
  if (!in.read(reinterpret_cast<char*>(&header), sizeof header)) return "is not a program (too short for ELF)";
  if (std::memcmp(header.e_ident, "#!", 2) == 0) return {};  // a script: its interpreter runs under the seam
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0) return "is not an ELF program";
  if (header.e_ident[EI_CLASS] != ELFCLASS64) return "is not a 64-bit ELF program";
  for (unsigned i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr ph{};
    in.seekg(std::streamoff(header.e_phoff + std::uint64_t(i) * header.e_phentsize));
    if (!in.read(reinterpret_cast<char*>(&ph), sizeof ph)) break;
    if (ph.p_type == PT_INTERP) return {};
  }
  if (header.e_machine != EM_X86_64) return "is statically linked for another machine than x86-64";
  if (header.e_type != ET_EXEC && header.e_type != ET_DYN) return "is an ELF file that is not a program (a relocatable object, a core)";
  load = true;
  return {};
}

// x86-64's numbers of the calls a blocked server thread is likeliest to be in.
std::string system_call_name(long number) {
  static const std::map<long, const char*> names = {
      {SYS_read, "read"}, {SYS_write, "write"}, {SYS_poll, "poll"}, {SYS_select, "select"},
      {SYS_nanosleep, "nanosleep"}, {SYS_accept, "accept"}, {SYS_connect, "connect"},
      {SYS_recvfrom, "recvfrom"}, {SYS_recvmsg, "recvmsg"}, {SYS_wait4, "wait4"}, {SYS_pause, "pause"},
      {SYS_rt_sigsuspend, "rt_sigsuspend"}, {SYS_futex, "futex"}, {SYS_epoll_wait, "epoll_wait"},
      {SYS_clock_nanosleep, "clock_nanosleep"}, {SYS_pselect6, "pselect6"}, {SYS_ppoll, "ppoll"},
      {SYS_epoll_pwait, "epoll_pwait"}, {SYS_accept4, "accept4"}, {SYS_rt_sigtimedwait, "rt_sigtimedwait"},
  };
  auto it = names.find(number);
  return it != names.end() ? it->second : "system call " + std::to_string(number);
}

}  // namespace

std::string real_socket_on(pid_t pid, int port) {
  // The machine's sockets on the port, by inode, with their state (/proc/net/tcp's st: 0A is
  // LISTEN, 07 CLOSE: bound or unconnected UDP).
  std::map<std::string, std::string> on_port;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6", "/proc/net/udp", "/proc/net/udp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode)) continue;
      const std::size_t colon = local.rfind(':');
      if (colon == std::string::npos || std::strtol(local.c_str() + colon + 1, nullptr, 16) != port || inode == "0") continue;
      on_port[inode] = state == "0A" ? "listening" : state == "07" ? "bound" : "connected";
    }
  }
  if (on_port.empty()) return {};
  std::error_code error;
  std::filesystem::directory_iterator fds("/proc/" + std::to_string(pid) + "/fd", error), end;
  for (; !error && fds != end; fds.increment(error)) {
    const std::string link = std::filesystem::read_symlink(fds->path(), error).string();
    if (error || !link.starts_with("socket:[")) continue;
    auto found = on_port.find(link.substr(8, link.size() - 9));
    if (found != on_port.end()) return found->second;
  }
  return {};
}

std::string threads_seen(pid_t pid) {
  std::error_code error;
  std::map<std::string, int> blocked;  // by call, so that the text reads the same each time
  int running = 0;
  // Increments that fail (the process gone meanwhile) end the walk rather than throw.
  std::filesystem::directory_iterator task("/proc/" + std::to_string(pid) + "/task", error), end;
  for (; !error && task != end; task.increment(error)) {
    std::ifstream in(task->path() / "syscall");
    std::string first;
    if (!(in >> first)) continue;
    if (first == "running") {
      ++running;
    } else if (first != "-1" && std::all_of(first.begin(), first.end(), ::isdigit)) {
      ++blocked[system_call_name(std::stol(first))];
    }
  }
  if (running == 0 && blocked.empty()) return {};
  std::string text = std::to_string(running) + " running";
  const char* lead = "; blocked in ";
  // The most common first; ties by name.
  std::vector<std::pair<int, std::string>> order;
  for (const auto& [call, n] : blocked) order.emplace_back(-n, call);
  std::sort(order.begin(), order.end());
  for (const auto& [n, call] : order) {
    text += lead + std::to_string(-n) + " " + call;
    lead = ", ";
  }
  return text;
}

namespace {

std::string output_for(const Scenario& scenario, const std::string& arm) {
  const std::string& prefix = scenario.target->output;
  return (prefix.empty() ? "out/targets/" + scenario.name : prefix) + "." + arm;
}

}  // namespace

std::string seam_library() {
  if (const char* path = std::getenv("LOOPSIM_SEAM"); path != nullptr && *path != '\0') return path;
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  const std::filesystem::path beside = self.parent_path() / "libloopsim_seam.so";  // a build tree
  const std::filesystem::path installed = self.parent_path() / "../lib/loopsim/libloopsim_seam.so";
  if (!std::filesystem::exists(beside, error) && std::filesystem::exists(installed, error))
    return installed.lexically_normal().string();
  return beside.string();
}

namespace {

// The scenario as the target's process reads it back: its resolved text, with the program
// named by the path found here (the target's process finds no examples beside itself), and
// shrunk as this scenario was (shrinking changes it after the text was made).
std::string text_for(const Scenario& scenario) {
  std::vector<std::string> exec = scenario.target->exec;
  exec.front() = scenario.target->program;
  // Both absolute: the target's process reads it from the target's folder. The seed is the
  // run's (--seed), not the file's: the target's process draws the windows' instants and its
  // program's entropy from it.
  return pinned_scenario(scenario.source, scenario.file, Arm{"base", {}, {}},
                         {Override{"target.exec", toml_strings(exec)},
                          Override{"target.dir", toml_string(scenario.target->folder)},
                          Override{"seed", std::to_string(scenario.seed)}},
                         {}, scenario.shrunk);
}

}  // namespace

TargetProcess::TargetProcess(const Scenario& scenario, const std::string& arm, TargetMode mode,
                             const std::string& chooser)
    : local_(!chooser.empty()), scenario_(scenario), output_(output_for(scenario, arm)) {
  const TargetSpec& target = *scenario.target;
  const std::string where = scenario.position_of({"target.exec"});
  bool load = false;
  if (std::string why = unfit_program(target.program, load); !why.empty())
    throw ScenarioError(where + ": the target " + target.program + " " + why,
                        "targets are ELF programs for x86-64, dynamically or statically linked (docs/targets.md)");
  const std::string seam = seam_library();
  if (::access(seam.c_str(), R_OK) != 0)
    throw ScenarioError(where + ": the POSIX seam " + seam + " is missing", "build the project (it builds libloopsim_seam.so beside loopsim), or set LOOPSIM_SEAM");
  // A statically linked program runs in the seam's host, which loads it (posix/loaded.cpp).
  const std::string host = (std::filesystem::path(seam).parent_path() / "loopsim_seam_host").string();
  if (load && ::access(host.c_str(), X_OK) != 0)
    throw ScenarioError(where + ": the target " + target.program + " is statically linked, and the seam's host " + host +
                            " that loads such a program is missing",
                        "build the project (it builds loopsim_seam_host beside the seam)");

  std::error_code error;
  std::filesystem::create_directories(std::filesystem::path(output_).parent_path(), error);
  out_.path = output_ + ".stdout";
  err_.path = output_ + ".stderr";
  // Never over what the run reads (the scenario, the program itself), never through a link or
  // into a FIFO; made now, so that one that cannot be written is an error before the program runs.
  for (const Output* o : {&out_, &err_}) {
    if (std::string input = input_overwritten(o->path, {scenario.file, target.program}); !input.empty())
      throw ScenarioError(where + ": cannot write the target's output to " + o->path + ": it is the input " + input,
                          "name a trace with --trace elsewhere: the target's output goes beside it");
    std::string why;
    if (const int fd = open_output(o->path, why); fd >= 0) {
      ::close(fd);
      continue;
    }
    throw ScenarioError(where + ": cannot write the target's output to " + o->path + why,
                        "run where out/ is writable, or name a trace with --trace");
  }
  // Its output goes through pipes, so that loopsim keeps only the tail of each (target_output_max).
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error(std::string("target: pipe: ") + std::strerror(errno));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    throw std::runtime_error(std::string("target: pipe: ") + std::strerror(errno));
  }
  out_.fd = out_pipe[0];
  err_.fd = err_pipe[0];
  ::fcntl(out_.fd, F_SETFL, O_NONBLOCK);
  ::fcntl(err_.fd, F_SETFL, O_NONBLOCK);
  const int out = out_pipe[1], err = err_pipe[1];
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    ::close(out);
    ::close(err);
    throw std::runtime_error(std::string("target: socketpair: ") + std::strerror(errno));
  }

  // Everything the child needs is made before the fork: between fork and exec only
  // async-signal-safe calls.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry(*e);
    // loopsim's own: the target sees none of them (LOOPSIM_SEAM and LOOPSIM_SEAM_PRELOAD[_AFTER]
    // only say what to preload, below).
    if (entry.starts_with("LD_PRELOAD=") || entry.starts_with("LOOPSIM_SEAM_FD=") ||
        entry.starts_with("LOOPSIM_SEAM_WATCH_FD=") || entry.starts_with("LOOPSIM_SEAM=") ||
        entry.starts_with("LOOPSIM_SEAM_PRELOAD=") || entry.starts_with("LOOPSIM_SEAM_PRELOAD_AFTER=") ||
        entry.starts_with("LOOPSIM_SEAM_LOAD="))
      continue;
    env_strings.emplace_back(entry);
  }
  // A sanitizer's runtime goes before the seam built with it (LOOPSIM_SEAM_PRELOAD: ASan's, which
  // must be first), or after it (LOOPSIM_SEAM_PRELOAD_AFTER: TSan's, whose interceptors then see
  // the seam's calls to libc, and not the program's calls to the seam as well).
  const char* before = std::getenv("LOOPSIM_SEAM_PRELOAD");
  const char* after = std::getenv("LOOPSIM_SEAM_PRELOAD_AFTER");
  const bool preload_before = before != nullptr && *before != '\0';
  const bool preload_after = after != nullptr && *after != '\0';
  const bool sanitized = preload_before || preload_after;
  env_strings.push_back("LD_PRELOAD=" + (preload_before ? std::string(before) + " " : std::string()) + seam +
                        (preload_after ? " " + std::string(after) : std::string()));
  env_strings.push_back("LOOPSIM_SEAM_FD=" + std::to_string(pair[1]));
  // The watch on main(): a page both processes map (MainWatch).
  const int watch_fd = ::memfd_create("loopsim-main-watch", MFD_CLOEXEC);
  if (watch_fd >= 0 && ::ftruncate(watch_fd, sizeof(MainWatch)) == 0) {
    void* page = ::mmap(nullptr, sizeof(MainWatch), PROT_READ | PROT_WRITE, MAP_SHARED, watch_fd, 0);
    if (page != MAP_FAILED) {
      watch_ = new (page) MainWatch;
      env_strings.push_back("LOOPSIM_SEAM_WATCH_FD=" + std::to_string(watch_fd));
    }
  }
  std::vector<char*> envp, argv;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = target.exec;
  args.front() = target.program;
  if (load) {
    std::error_code ignored;
    const std::string program = std::filesystem::absolute(target.program, ignored).string();
    args.insert(args.begin(), std::filesystem::absolute(host, ignored).string());
    env_strings.push_back("LOOPSIM_SEAM_LOAD=" + program);
    envp.clear();
    for (std::string& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
  }
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string folder = target.folder.empty() ? "." : target.folder;  // target.dir, or the file's
  int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_t parent = ::getpid();
  watch_ending();

  pid_ = ::fork();
  if (pid_ == 0) {
    // No target outlives loopsim, whatever ends it: the kernel kills the child when the
    // thread that forked it dies (and at once if that happened before this line).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::setpgid(0, 0);  // its own group, which loopsim ends as it ends (watch_ending)
    // Its memory is bounded: heap and anonymous mappings (RLIMIT_DATA) past target_data_max
    // fail to allocate, and the program's end (bad_alloc, abort, or its own error) is reported.
    // Not under a sanitizer's runtime (LOOPSIM_SEAM_PRELOAD[_AFTER]): its shadow memory is a reservation
    // of terabytes that the cap would refuse.
    if (!sanitized) {
      rlimit data{rlim_t(target_data_max), rlim_t(target_data_max)};
      ::setrlimit(RLIMIT_DATA, &data);
    }
    // Its addresses are the same each run: a program that orders by them (Python's sets of
    // objects, whose hash is the address; tornado closes its connections in such an order)
    // then replays as it ran. Where a seccomp filter forbids it, the run goes on randomized.
    ::personality(ADDR_NO_RANDOMIZE);
    ::dup2(devnull, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::fcntl(pair[1], F_SETFD, 0);  // the descriptors the program inherits: the seam's socket,
    if (watch_ != nullptr) ::fcntl(watch_fd, F_SETFD, 0);  // and the watch on main()
    if (::chdir(folder.c_str()) == 0) ::execve(argv[0], argv.data(), envp.data());
    const char* why = std::strerror(errno);
    (void)!::write(2, "loopsim: cannot execute the target: ", 36);
    (void)!::write(2, why, std::strlen(why));
    ::_exit(127);
  }
  int fork_error = errno;
  if (pid_ > 0) {
    ::setpgid(pid_, pid_);  // as the child does: whichever runs first
    add_group(pid_);
  }
  ::close(out);
  ::close(err);
  ::close(pair[1]);
  if (watch_fd >= 0) ::close(watch_fd);
  if (devnull >= 0) ::close(devnull);
  socket_ = pair[0];
  if (pid_ < 0) {
    ::close(socket_);
    throw std::runtime_error(std::string("target: fork: ") + std::strerror(fork_error));
  }
  // Where each knob was written in the user's file: the target's process reads the scenario
  // back from text of its own, whose lines are not the user's.
  std::string positions = nlohmann::json(scenario.where).dump();
  std::string start = std::string(mode == TargetMode::run ? "run" : "steps") + "\n" + arm + "\n" +
                      scenario.file + "\n" + chooser + "\n" + positions + "\n" + text_for(scenario);
  if (!wire::send(socket_, wire::Type::start, start)) failed("it ended before it was sent the scenario");
}

std::int64_t TargetProcess::main_cpu_ns() const {
  if (pid_ <= 0) return -1;
  const std::string path = "/proc/" + std::to_string(pid_) + "/task/" + std::to_string(pid_) + "/schedstat";
  std::ifstream in(path);
  std::int64_t ns = -1;
  if (!(in >> ns)) return -1;
  return ns;
}

std::int64_t TargetProcess::watch_clock_ns() const {
  const std::int64_t cpu = main_cpu_ns();
  if (cpu >= 0) return cpu;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// main()'s own CPU time is what counts, so that a loaded machine, which gives it less of each
// second, judges it as an idle one does; where the kernel does not say it, the machine's time.
void TargetProcess::watch_main(std::uint64_t& seen, std::int64_t& since) {
  if (watch_ == nullptr) return;
  const std::uint64_t runs = watch_->runs.load(std::memory_order_acquire);
  const std::int64_t now = watch_clock_ns();
  if (runs != seen) {
    seen = runs;
    since = now;
    return;
  }
  const Duration limit = scenario_.target->spin_limit;
  if (runs % 2 == 0) return;
  // Each spin slice of it, main() is asked to give way, as Linux preempts a thread that spins on
  // a lock another holds (the seam's handler yields where main() is in the program's own code).
  if (now - since >= spin_slice.count() && now - preempted_ns_ >= spin_slice.count() && now - since < limit.count()) {
    preempted_ns_ = now;
    watch_->preempt.store(1, std::memory_order_release);
    ::syscall(SYS_tgkill, pid_, pid_, preempt_signal());
  }
  if (now - since < limit.count()) return;
  char text[160];
  std::snprintf(text, sizeof text, "the target's main thread at %.3f ms of virtual time ran for %.0f ms",
                double(watch_->since_virtual_ns.load(std::memory_order_acquire)) / 1e6, double(limit.count()) / 1e6);
  const char* clock = main_cpu_ns() >= 0 ? " of its own CPU time" : " of the machine's time";
  end_process();
  throw ScenarioError(scenario_.position_of({"target.spin_limit", "target.exec"}) + ": " + text + clock +
                          " without a call the simulation serves, giving way each 100 ms of it: a spin "
                          "that nothing ends (target.spin_limit)",
                      "the target's stderr is in " + output_ + ".stderr; docs/targets.md lists what the seam serves");
}

TargetProcess::~TargetProcess() {
  if (watch_ != nullptr) ::munmap(watch_, sizeof(MainWatch));
  if (socket_ >= 0) ::close(socket_);
  end_process();
  for (Output* o : {&out_, &err_}) {
    if (o->fd >= 0) ::close(o->fd);
    write_out(*o);
  }
}

int TargetProcess::end_process(bool let_end) {
  if (pid_ <= 0) return -1;
  if (let_end) {
    siginfo_t info{};
    while (::waitid(P_PID, id_t(pid_), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
    }
  }
  // Until the leader is reaped its number cannot be another's: the group is ended first.
  ::killpg(pid_, SIGKILL);
  remove_group(pid_);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  // The whole group is gone: every write end is closed, and the pipes come to their end.
  drain(out_, true);
  drain(err_, true);
  return status;
}

void TargetProcess::drain(Output& output, bool until_end) {
  char buffer[65536];
  while (output.fd >= 0) {
    if (until_end) {
      // Its group is gone; a writer that left it (setsid) is not waited for long.
      constexpr int end_wait_ms = 5'000;
      pollfd p{output.fd, POLLIN, 0};
      const int ready = ::poll(&p, 1, end_wait_ms);
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) return;
    }
    ssize_t n = ::read(output.fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN && until_end) continue;
    if (n < 0) return;
    if (n == 0) {
      ::close(output.fd);
      output.fd = -1;
      return;
    }
    output.written += std::uint64_t(n);
    output.tail.append(buffer, std::size_t(n));
    // Kept within twice the cap, cut to it at the end.
    if (output.tail.size() > 2 * target_output_max) output.tail.erase(0, output.tail.size() - target_output_max);
  }
}

void TargetProcess::write_out(const Output& output) const {
  std::string_view kept(output.tail);
  if (kept.size() > target_output_max) kept.remove_prefix(kept.size() - target_output_max);
  // As every output is written: never through a link planted since the run began.
  write_output_file(output.path, [&](std::ostream& file) {
    if (output.written > kept.size()) {
      file << "[loopsim: the target wrote " << output.written << " bytes here; the first "
           << output.written - kept.size() << " were cut, the last " << kept.size() << " follow]\n";
    }
    file << kept;
  });
}

// The last line the target wrote to its stderr (less the seam's own), cut to 200 bytes: what
// a program that died usually says about why.
std::string TargetProcess::last_stderr_line() const {
  const std::string tail = err_.tail.substr(err_.tail.size() - std::min<std::size_t>(err_.tail.size(), 4096));
  std::string last;
  std::size_t start = 0;
  while (start < tail.size()) {
    std::size_t end = std::min(tail.find('\n', start), tail.size());
    std::string line = tail.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty() && line.rfind("loopsim seam: ", 0) != 0) last = line;
    start = end + 1;
  }
  if (last.size() > 200) last = last.substr(0, 200) + "...";
  for (char& c : last) {
    if (static_cast<unsigned char>(c) < 0x20 && c != '\t') c = '?';
  }
  return last;
}

std::string starved_of_descriptors(const Scenario& scenario) {
  // Below this, even a poller, a listener and one connection do not fit beside stdio.
  constexpr int starved_below = 6;
  const int limit = scenario.kernel.rlimit_nofile;
  if (scenario.where.count("kernel.rlimit_nofile") == 0 || limit >= starved_below) return {};
  return scenario.position_of({"kernel.rlimit_nofile"}) + ": kernel.rlimit_nofile = " + std::to_string(limit) +
         " leaves the target " + std::to_string(std::max(0, limit - 3)) + " descriptor(s) beyond its standard streams";
}

namespace {

// The signals a program dies of by its own fault (a bad access, an abort, a trap), as opposed
// to one sent to end it.
bool crashed(int signal) {
  for (int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS})
    if (signal == fault) return true;
  return false;
}

}  // namespace

void TargetProcess::failed(const std::string& why) {
  std::string how, died;
  // It may be stuck: ended, its end is what is reported.
  if (int status = end_process(); status >= 0) {
    if (WIFEXITED(status)) how = ", exit status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL) {
      how = ", killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
      if (crashed(WTERMSIG(status))) died = how.substr(2);
    }
  }
  std::string said = last_stderr_line();
  if (!said.empty()) how += "; its last line on stderr: \"" + said + "\"";
  if (std::string starved = starved_of_descriptors(scenario_); !starved.empty()) {
    throw ScenarioError(starved + ", and the target " + scenario_.target->program + ": " + why + how,
                        "a poller and a listener need 2; its stderr is in " + output_ + ".stderr");
  }
  std::string what = scenario_.position_of({"target.exec"}) + ": the target " + scenario_.target->program + ": " + why + how;
  if (!died.empty()) throw TargetDied(what, "its stderr is in " + output_ + ".stderr", died);
  throw ScenarioError(what, "its stderr is in " + output_ + ".stderr");
}

// A target that sent nothing for a long while: what its threads were doing then. One blocked in
// Linux's own call is waiting where the seam never sees it; all of them running is a spin.
std::string TargetProcess::silent_for_long() const {
  std::string why = "it sent nothing for 120 s of wall time";
  const std::string seen = threads_seen(pid_);
  if (seen.empty()) return why + " (a spin that never calls the kernel?)";
  why += "; its threads then: " + seen;
  if (seen.find("blocked in") != std::string::npos) {
    return why + " (a thread waiting for the seam's baton waits in futex; any other call named is Linux's own, "
                 "which the program reached past the seam: where neither its interposers nor its trap see it, "
                 "or with LOOPSIM_TRAP=off; docs/targets.md)";
  }
  return why + " (a spin that never calls the kernel?)";
}

wire::Message TargetProcess::expect(model::Chooser& chooser, wire::Type type) {
  // A program that spins without ever calling into the kernel stops virtual time, and sends
  // nothing: after this much wall time of silence the run is given up.
  constexpr int silence_ms = 120'000;
  auto heard = std::chrono::steady_clock::now();
  // main() is looked at 8 times a spin_limit, at most 4 times a second.
  const int tick_ms = int(std::clamp<std::int64_t>(scenario_.target->spin_limit.count() / 8'000'000, 1, 250));
  std::uint64_t seen = watch_ != nullptr ? watch_->runs.load(std::memory_order_acquire) : 0;
  std::int64_t since = watch_clock_ns();
  for (;;) {
    // Its output is drained meanwhile: a program blocked writing to a full pipe sends nothing.
    pollfd p[3] = {{socket_, POLLIN, 0}, {out_.fd, POLLIN, 0}, {err_.fd, POLLIN, 0}};
    int ready = ::poll(p, 3, watch_ != nullptr ? tick_ms : silence_ms);
    if (ready < 0 && errno == EINTR) continue;
    drain(out_, false);
    drain(err_, false);
    watch_main(seen, since);
    // A socket of the machine's own on the scenario's port: the program reached Linux past the
    // seam, and clients of the machine's could reach it (looked for 4 times a second).
    const std::int64_t now_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
    const bool look = now_ns - escape_checked_ns_ >= 250'000'000;
    if (look) escape_checked_ns_ = now_ns;
    if (const std::string real = look ? real_socket_on(pid_, scenario_.target->port) : ""; !real.empty()) {
      failed("it holds a socket of the machine's own, " + real + " on port " + std::to_string(scenario_.target->port) +
             ": a bind, listen or connect that reached Linux past the seam (neither its interposers nor its trap "
             "saw it: LOOPSIM_TRAP=off, a shared object's own syscall instruction, or io_uring; docs/targets.md)");
    }
    if (p[0].revents == 0) {
      if (std::chrono::steady_clock::now() - heard >= std::chrono::milliseconds(silence_ms))
        failed(silent_for_long());
      continue;
    }
    heard = std::chrono::steady_clock::now();
    std::optional<wire::Message> message;
    try {
      message = wire::receive(socket_);
    } catch (const std::runtime_error& e) {
      failed(std::string("it sent what is not a message of the seam's: ") + e.what());
    }
    if (!message) failed("it ended before the run did");
    if (message->type == wire::Type::choose) {
      auto choice = wire::decode_choose(message->body, model::choice_kinds);
      if (!choice) failed("it asked for a choice that is not one (an unknown kind, or fewer than 2 options)");
      std::string pick;
      wire::put(pick, chooser.choose(model::ChoiceKind(choice->kind), choice->options));
      if (!wire::send(socket_, wire::Type::pick, pick)) failed("it ended while choosing");
      continue;
    }
    if (message->type == wire::Type::error) {
      std::string text = message->body.size() > 1 ? message->body.substr(1) : "";
      end_process();  // it ends as it sends an error: what it said last is then all read
      std::string said = last_stderr_line();
      if (!said.empty()) text += "; its last line on stderr: \"" + said + "\"";
      throw ScenarioError(text, "the target's stderr is in " + output_ + ".stderr; docs/targets.md lists what the seam serves");
    }
    if (message->type != type) failed("it sent a message out of turn");
    return std::move(*message);
  }
}

RunResult TargetProcess::take_trace(const std::string& body) {
  std::size_t at = 0;
  auto passes = wire::get<std::uint64_t>(body, at);
  auto steps = wire::get<std::uint64_t>(body, at);
  RunResult result;
  try {
    result.trace = sim::decode_trace(std::string_view(body).substr(std::min(at, body.size())));
  } catch (const std::runtime_error& e) {
    failed(std::string("it sent a trace that does not read back: ") + e.what());
  }
  result.stats = stats_of(result.trace, passes, steps);
  // The trace is its last word: it ends, and what it said is then all read.
  end_process(true);
  if (result.stats.exit_status) result.stats.last_stderr = last_stderr_line();
  return result;
}

RunResult TargetProcess::run(model::Chooser& chooser) {
  RunResult result = take_trace(expect(chooser, wire::Type::trace).body);
  if (local_) agree(chooser, result.trace);
  return result;
}

// The decisions the target's process made itself, put to loopsim's chooser in the same order:
// it ends as if it had been asked (a replay counts its divergences), and must have picked alike.
void TargetProcess::agree(model::Chooser& chooser, const Trace& trace) {
  for (const TraceEvent& event : trace.events) {
    const auto* c = std::get_if<ev::Choice>(&event);
    if (c == nullptr) continue;
    if (chooser.choose(model::ChoiceKind(c->kind), c->options) != c->pick)
      failed("its process decided a choice otherwise than loopsim's chooser (a seam out of step with loopsim?)");
  }
}

wire::Report TargetProcess::begin(model::Chooser& chooser) {
  return wire::decode_report(expect(chooser, wire::Type::report).body);
}

wire::Report TargetProcess::step(model::Chooser& chooser) {
  if (!wire::send(socket_, wire::Type::step, {})) failed("it ended before the run did");
  return wire::decode_report(expect(chooser, wire::Type::report).body);
}

RunResult TargetProcess::finish(model::Chooser& chooser) {
  if (!wire::send(socket_, wire::Type::finish, {})) failed("it ended before the run did");
  return take_trace(expect(chooser, wire::Type::trace).body);
}

RunResult run_target(const Scenario& scenario, const std::string& arm, model::Chooser* chooser) {
  std::optional<model::ReplayChooser> pinned;
  std::optional<model::SeededChooser> seeded;
  if (chooser == nullptr) {
    chooser = !scenario.choices.empty() ? static_cast<model::Chooser*>(&pinned.emplace(scenario.choices))
                                        : &seeded.emplace(scenario.seed);
  }
  TargetProcess process(scenario, arm, TargetMode::run, chooser->portable());
  return process.run(*chooser);
}

}  // namespace loopsim::sim
