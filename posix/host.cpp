// The target's process: the seam takes over its start, runs the simulation with the program's
// main() as the server's thread, and talks to loopsim over the descriptor it inherited
// (target/target_wire.hpp). Without LOOPSIM_SEAM_FD the program just runs.
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/auxv.h>
#include <sys/random.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/choice.hpp"
#include "posix/seam.hpp"
#include "sim/world.hpp"
#include "target/run.hpp"
#include "target/target.hpp"
#include "target/target_wire.hpp"
#include "trace/trace_codec.hpp"


namespace loopsim::posix {

namespace {

namespace wire = sim::wire;

int (*program_main)(int, char**, char**) = nullptr;
// A program libc does not start is entered here (below).
int enter_program(int argc, char** argv, char** envp);

[[noreturn]] void leave(int status) {
  LOOPSIM_REAL(_exit)(status);
  __builtin_unreachable();
}

// Every decision goes to loopsim, which holds the chooser (seeded, pinned or the explorer's).
// A search (steps mode) explores windows: its chooser is asked where each lands.
class RemoteChooser final : public model::Chooser {
 public:
  RemoteChooser(int host, bool searched) : host_(host), searched_(searched) {}
  bool explores_windows() const override { return searched_; }
  std::uint32_t choose(model::ChoiceKind kind, std::uint32_t options) override {
    std::string body;
    wire::put(body, std::uint8_t(kind));
    wire::put(body, options);
    if (!wire::send(host_, wire::Type::choose, body)) leave(2);
    std::optional<wire::Message> answer = wire::receive(host_, wire::From::loopsim);
    if (!answer || answer->type != wire::Type::pick) leave(2);
    std::size_t at = 0;
    return wire::get<std::uint32_t>(answer->body, at);
  }

 private:
  int host_;
  bool searched_;
};

void fail(int host, wire::Failure failure, const std::string& message) {
  wire::send_failure(host, failure, message);
  leave(2);
}

// The last line of the target's stderr: what the seam served, for bench/seam_overhead.sh.
void tell_calls(const Seam* seam) {
  if (seam == nullptr) return;
  std::string line = "loopsim seam: " + std::to_string(seam->calls()) + " calls served\n";
  LOOPSIM_REAL(write)(2, line.data(), line.size());
}

void send_trace(int host, const sim::RunResult& result) {
  std::string body;
  wire::put(body, result.stats.passes);
  wire::put(body, result.stats.steps);
  body += sim::encode_trace(result.trace);
  if (!wire::send(host, wire::Type::trace, body)) leave(2);
}

void check_listened(int host, const Seam* seam, const sim::Scenario& scenario) {
  if (seam != nullptr && seam->listened()) return;
  std::string why = "the target never listened on port " + std::to_string(scenario.target->port);
  if (seam != nullptr && seam->ended()) {
    char at[48];
    std::snprintf(at, sizeof at, "%.1f ms", double(since_start(seam->ended_at()).count()) / 1e6);
    why = "the target exited with status " + std::to_string(seam->exit_status()) + " at " + at +
          " of virtual time, before it listened on port " + std::to_string(scenario.target->port);
  }
  why += std::string(" (it listened on: ") + (seam ? seam->listened_on() : "none") + "); its clients had nowhere to connect";
  const std::string starved = sim::starved_of_descriptors(scenario);
  fail(host, wire::Failure::bad_input,
       starved.empty() ? scenario.position_of({"target.port"}) + ": " + why : starved + "; " + why);
}

wire::Report report_of(const sim::World& world, bool stepped) {
  wire::Report r;
  r.stepped = stepped;
  r.backlog = world.backlog() > 0;
  r.quiescent = world.quiescent();
  r.digest = world.digest();
  r.accepted = world.accepted();
  r.now = since_start(world.now()).count();
  return r;
}

// The real process may need many descriptors: each simulated one has a placeholder.
void raise_descriptor_limit() {
  rlimit limit{};
  if (LOOPSIM_REAL(getrlimit)(RLIMIT_NOFILE, &limit) != 0) return;
  limit.rlim_cur = limit.rlim_max;
  LOOPSIM_REAL(setrlimit)(RLIMIT_NOFILE, &limit);
}

// What the seam keeps for a target that replaces its program before it has done anything the
// simulation saw (a wrapper script's exec): the new program starts as this one did.
struct Handover {
  std::string start;    // loopsim's start message, consumed by this program
  std::string preload;  // LD_PRELOAD as loopsim set it
  int host = -1;
  int watch = -1;       // LOOPSIM_SEAM_WATCH_FD's descriptor, kept open (close-on-exec)
} handover;

// The environment's entry `name`, and its removal, on the array itself: a program may define
// getenv and unsetenv of its own (bash does), which would not yet see, or not change, what
// its children inherit.
const char* variable(const char* name) {
  const std::size_t length = std::strlen(name);
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    if (std::strncmp(*entry, name, length) == 0 && (*entry)[length] == '=') return *entry + length + 1;
  }
  return nullptr;
}

void remove_variable(const char* name) {
  const std::size_t length = std::strlen(name);
  char** kept = environ;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    if (std::strncmp(*entry, name, length) == 0 && (*entry)[length] == '=') continue;
    *kept++ = *entry;
  }
  if (kept != nullptr) *kept = nullptr;
}

// loopsim's start message: from loopsim, or from the program this one replaced.
std::optional<std::string> start_message(int host) {
  if (const char* kept = variable("LOOPSIM_SEAM_START_FD")) {
    const int fd = std::atoi(kept);
    remove_variable("LOOPSIM_SEAM_START_FD");
    std::string body;
    char chunk[65536];
    for (off_t at = 0;;) {
      const ssize_t n = ::pread(fd, chunk, sizeof chunk, at);
      if (n <= 0) break;
      body.append(chunk, std::size_t(n));
      at += n;
    }
    LOOPSIM_REAL(close)(fd);
    return body;
  }
  std::optional<wire::Message> start = wire::receive(host, wire::From::loopsim);
  if (!start || start->type != wire::Type::start) return std::nullopt;
  return start->body;
}

int host_main(int argc, char** argv, char** envp) {
  const char* inherited = variable("LOOPSIM_SEAM_FD");
  if (inherited == nullptr) return program_main(argc, argv, envp);
  int host = std::atoi(inherited);
  const bool resumed = variable("LOOPSIM_SEAM_START_FD") != nullptr;
  handover.host = host;
  if (const char* preload = variable("LD_PRELOAD")) handover.preload = preload;
  remove_variable("LOOPSIM_SEAM_FD");
  remove_variable("LD_PRELOAD");
  LOOPSIM_REAL(fcntl)(host, F_SETFD, FD_CLOEXEC);
  if (const char* watch = variable("LOOPSIM_SEAM_WATCH_FD")) {
    const int fd = std::atoi(watch);
    void* page = LOOPSIM_REAL(mmap)(nullptr, sizeof(sim::MainWatch), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (page != MAP_FAILED) main_watch = static_cast<sim::MainWatch*>(page);
    LOOPSIM_REAL(fcntl)(fd, F_SETFD, FD_CLOEXEC);
    handover.watch = fd;
    remove_variable("LOOPSIM_SEAM_WATCH_FD");
  }
  raise_descriptor_limit();
  const char* trap = variable("LOOPSIM_TRAP");
  const bool trap_wanted = trap == nullptr || std::strcmp(trap, "off") != 0;
  remove_variable("LOOPSIM_TRAP");

  std::optional<std::string> start = start_message(host);
  if (!start) leave(2);
  handover.start = *start;
  std::istringstream in(*start);
  std::string mode, arm, file, portable;
  std::getline(in, mode);
  std::getline(in, arm);
  std::getline(in, file);
  std::getline(in, portable);
  std::string where;
  std::getline(in, where);
  std::string text = start->substr(std::min<std::size_t>(std::size_t(in.tellg()), start->size()));

  try {
    sim::Scenario scenario = sim::parse_scenario(text, file);
    // Positions in the user's file, not in the text above (target/target.cpp).
    scenario.where = nlohmann::json::parse(where).get<std::map<std::string, std::string>>();
    // A statically linked program, which this host loads (posix/loaded.cpp): every call it
    // makes is its own, so it runs only with the trap.
    if (const char* load = variable("LOOPSIM_SEAM_LOAD")) {
      const std::string path = load;
      remove_variable("LOOPSIM_SEAM_LOAD");
      if (!trap_wanted) {
        fail(host, wire::Failure::bad_input,
             scenario.position_of({"target.exec"}) + ": the program is statically linked, and runs only with the "
             "trap, which LOOPSIM_TRAP=off turns off");
      }
      if (const std::string why = load_program(path.c_str()); !why.empty()) {
        fail(host, wire::Failure::bad_input,
             scenario.position_of({"target.exec"}) + ": the seam cannot load the statically linked program " + path +
             ": " + why);
      }
      program_main = enter_loaded;
    }
    // The program's own system calls, trapped before its first (posix/interpose_trap.cpp).
    if (trap_wanted) {
      if (const std::string why = install_trap(program_main == enter_program || program_main == enter_loaded);
          !why.empty()) {
        fail(host, wire::Failure::bad_input,
             scenario.position_of({"target.exec"}) + ": the seam cannot trap the system calls the program makes "
             "itself, outside libc: " + why + ". LOOPSIM_TRAP=off runs it without the trap, where such calls reach "
             "Linux unseen (docs/targets.md)");
      }
    }
    Seam* seam = nullptr;
    sim::ServerFactories servers;  // this process's program, made by the World that runs it
    servers.foreign = [&](const sim::Scenario& s) {
      auto made = std::make_unique<Seam>(s, program_main, argc, argv, environ, host);
      seam = made.get();
      return made;
    };
    RemoteChooser chooser(host, mode != "run");
    std::unique_ptr<model::Chooser> local = model::rebuild_chooser(portable);  // decides here, unasked
    if (mode == "run") {
      sim::RunResult result = sim::run(scenario, arm, local ? local.get() : &chooser, servers);
      check_listened(host, seam, scenario);
      tell_calls(seam);
      send_trace(host, result);
      leave(0);
    }
    auto* world = new sim::World(scenario, arm, &chooser, true, servers);  // never destroyed: the process ends
    // The program this one replaced reported the start already, and was in its first step.
    if (!resumed && !wire::send(host, wire::Type::report, wire::encode(report_of(*world, true)))) leave(2);
    for (bool first = true;; first = false) {
      std::optional<wire::Message> message;
      if (resumed && first) {
        message = wire::Message{wire::Type::step, {}};
      } else {
        message = wire::receive(host, wire::From::loopsim);
      }
      if (!message) leave(2);
      if (message->type == wire::Type::step) {
        bool stepped = world->step();
        if (!wire::send(host, wire::Type::report, wire::encode(report_of(*world, stepped)))) leave(2);
      } else if (message->type == wire::Type::finish) {
        sim::RunResult result = world->finish();
        check_listened(host, seam, scenario);
        send_trace(host, result);
        leave(0);
      } else {
        leave(2);
      }
    }
  } catch (const sim::ScenarioError& e) {
    fail(host, wire::Failure::bad_input, e.what());
  } catch (const std::exception& e) {
    fail(host, wire::Failure::bad_input, std::string("the seam failed: ") + e.what());
  }
  leave(2);
}

// ---- a program that libc does not start (Go's runtime, linked with cgo) ----
//
// Such a program's entry point is its own: __libc_start_main is never called, and the seam
// would never take its start. The seam's constructor puts a jump to the seam at the entry
// point; once every constructor has run and the loader jumps there, the seam puts the
// program's bytes back and runs host_main with a main() that enters the program at its entry
// point, on the simulation's thread, with the stack Linux gives a new process (argc, argv, the
// environment, the auxiliary vector) laid out anew there. Two entries of the auxiliary vector
// differ from Linux's: no vDSO (AT_SYSINFO_EHDR), so that the program's clock reads are system
// calls the trap serves in virtual time, and AT_RANDOM's 16 bytes come from the run's seed.

}  // namespace
}  // namespace loopsim::posix

// Where the program's entry point jumps: %rsp as Linux left it (argc) is the argument, and the
// stack is aligned for the call.
extern "C" void loopsim_seam_entry();
__asm__(".text\n"
        ".type loopsim_seam_entry, @function\n"
        "loopsim_seam_entry:\n"
        "  mov %rsp, %rdi\n"
        "  and $-16, %rsp\n"
        "  call loopsim_seam_entered\n"
        "  ud2\n"
        ".size loopsim_seam_entry, . - loopsim_seam_entry\n");

namespace loopsim::posix {
namespace {

// The auxiliary vector as Linux gave it, read before anything else runs.
std::vector<std::pair<std::uint64_t, std::uint64_t>> auxiliary;

// The program's dynamic section, as the loader mapped it (the first object it lists), read for
// the two questions below: its string table, and whether it needs any library.
struct ProgramDynamic {
  std::string_view strings;
  bool needs = false;  // a DT_NEEDED entry
};

ProgramDynamic program_dynamic() {
  ProgramDynamic found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto& found = *static_cast<ProgramDynamic*>(data);
        const char* strings = nullptr;
        std::size_t size = 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          if (info->dlpi_phdr[i].p_type != PT_DYNAMIC) continue;
          const auto* entry = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
          for (; entry->d_tag != DT_NULL; ++entry) {
            if (entry->d_tag == DT_STRTAB) strings = reinterpret_cast<const char*>(entry->d_un.d_ptr);
            if (entry->d_tag == DT_STRSZ) size = entry->d_un.d_val;
            if (entry->d_tag == DT_NEEDED) found.needs = true;
          }
        }
        if (strings != nullptr) found.strings = std::string_view(strings, size);
        return 1;  // the first object is the program
      },
      &found);
  return found;
}

// Whether the program imports __libc_start_main, as every program libc starts does: the name
// is in its dynamic string table.
bool started_by_libc() {
  return program_dynamic().strings.find("__libc_start_main") != std::string_view::npos;
}

// Whether it needs any library: Go built without cgo as a PIE needs none (nor libc).
bool links_libraries() { return program_dynamic().needs; }

[[noreturn]] void jump_to(std::uintptr_t stack, std::uintptr_t entry) {
  // As the kernel starts a process: %rsp at argc, %rdx (a function for atexit) null.
  __asm__ volatile("mov %0, %%rsp\n\txor %%edx, %%edx\n\txor %%ebp, %%ebp\n\tjmp *%1\n"
                   :
                   : "c"(stack), "a"(entry)
                   : "memory");
  __builtin_unreachable();
}

// The auxiliary vector as Linux gave this process.
void read_auxiliary() {
  if (!auxiliary.empty()) return;
  for (unsigned long type = 1; type < 64; ++type) {
    errno = 0;
    const unsigned long value = ::getauxval(type);
    if (value != 0 || errno == 0) auxiliary.emplace_back(type, value);
  }
}

int enter_program(int argc, char** argv, char** envp) {
  adopt_main_thread();
  enter_with(argc, argv, envp, {});
}

// The program's first bytes, at its entry point, while the seam's jump stands there.
constexpr std::size_t jump_size = 12;  // movabs $to, %rax; jmp *%rax
unsigned char entry_bytes[jump_size];

// The entry point's page made writable, or back to what a program's code is. Where it cannot
// be, the program cannot be started under the seam: it says so on stderr, which the run's error
// quotes, and ends.
void protect_entry(std::uintptr_t entry, int protection) {
  const std::uintptr_t page = entry & ~std::uintptr_t(4095);
  if (LOOPSIM_REAL(mprotect)(reinterpret_cast<void*>(page), entry + jump_size - page, protection) == 0) return;
  static const char text[] = "loopsim seam: cannot change the protection of the program's entry point\n";
  LOOPSIM_REAL(write)(2, text, sizeof text - 1);
  leave(2);
}

// A constructor runs before the program's entry point. For a program libc starts it does
// nothing: __libc_start_main (below) takes the start. Else it puts the jump at the entry point
// (the constructors of the objects the loader runs after this one's still run before it).
__attribute__((constructor)) void take_start() {
  if (variable("LOOPSIM_SEAM_FD") == nullptr || started_by_libc()) return;
  // One that links no library at all (Go without cgo, built as a PIE) sets its own %fs.
  if (!links_libraries()) keep_thread_pointer();
  read_auxiliary();
  const std::uintptr_t entry = ::getauxval(AT_ENTRY);
  auto* at = reinterpret_cast<unsigned char*>(entry);
  std::memcpy(entry_bytes, at, jump_size);
  protect_entry(entry, PROT_READ | PROT_WRITE | PROT_EXEC);
  const auto to = reinterpret_cast<std::uint64_t>(&loopsim_seam_entry);
  at[0] = 0x48;
  at[1] = 0xb8;
  std::memcpy(at + 2, &to, sizeof to);
  at[10] = 0xff;
  at[11] = 0xe0;
  protect_entry(entry, PROT_READ | PROT_EXEC);
}

}  // namespace

// The jump's end: the stack as Linux left it at the entry point, argc first.
extern "C" [[noreturn]] __attribute__((visibility("hidden"), used)) void loopsim_seam_entered(std::uint64_t* stack) {
  const std::uintptr_t entry = ::getauxval(AT_ENTRY);
  protect_entry(entry, PROT_READ | PROT_WRITE | PROT_EXEC);
  std::memcpy(reinterpret_cast<void*>(entry), entry_bytes, jump_size);
  protect_entry(entry, PROT_READ | PROT_EXEC);
  __builtin___clear_cache(reinterpret_cast<char*>(entry), reinterpret_cast<char*>(entry + jump_size));
  const int argc = int(stack[0]);
  char** argv = reinterpret_cast<char**>(stack + 1);
  program_main = enter_program;
  leave(host_main(argc, argv, argv + argc + 1));
}

void enter_with(int argc, char** argv, char** envp, const std::vector<std::pair<std::uint64_t, std::uint64_t>>& replaced) {
  read_auxiliary();
  static unsigned char random[16];
  ::getrandom(random, sizeof random, 0);  // the seam's: from the run's seed
  std::vector<std::uint64_t> words;
  words.push_back(std::uint64_t(argc));
  for (int i = 0; i < argc; ++i) words.push_back(reinterpret_cast<std::uint64_t>(argv[i]));
  words.push_back(0);
  for (char** e = envp; e != nullptr && *e != nullptr; ++e) words.push_back(reinterpret_cast<std::uint64_t>(*e));
  words.push_back(0);
  std::uint64_t entry = 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> vector = auxiliary;
  for (const auto& [type, value] : replaced) {
    auto same = std::find_if(vector.begin(), vector.end(), [&](const auto& e) { return e.first == type; });
    if (same != vector.end()) same->second = value;
    else vector.emplace_back(type, value);
  }
  for (const auto& [type, value] : vector) {
    if (type == AT_NULL || type == AT_SYSINFO_EHDR) continue;
    if (type == AT_ENTRY) entry = value;
    words.push_back(type);
    words.push_back(type == AT_RANDOM ? reinterpret_cast<std::uint64_t>(random) : value);
  }
  words.push_back(AT_NULL);
  words.push_back(0);
  LOOPSIM_ASSERT(entry != 0);  // Linux always gives AT_ENTRY
  // Well below this frame, on the same stack, 16-byte aligned as Linux leaves it.
  std::uintptr_t stack = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0)) - 65536;
  stack = (stack - words.size() * sizeof(std::uint64_t)) & ~std::uintptr_t(15);
  std::memcpy(reinterpret_cast<void*>(stack), words.data(), words.size() * sizeof(std::uint64_t));
  std::vector<std::uint64_t>().swap(words);  // nothing of this frame is left to free
  std::vector<std::pair<std::uint64_t, std::uint64_t>>().swap(vector);
  jump_to(stack, entry);
}

std::vector<std::string> handover_environment() {
  const int start = ::memfd_create("loopsim-start", 0);
  if (start < 0) return {};
  for (std::size_t at = 0; at < handover.start.size();) {
    const ssize_t n = LOOPSIM_REAL(write)(start, handover.start.data() + at, handover.start.size() - at);
    if (n <= 0) return {};
    at += std::size_t(n);
  }
  LOOPSIM_REAL(fcntl)(handover.host, F_SETFD, 0);
  std::vector<std::string> environment{"LD_PRELOAD=" + handover.preload,
                                       "LOOPSIM_SEAM_FD=" + std::to_string(handover.host),
                                       "LOOPSIM_SEAM_START_FD=" + std::to_string(start)};
  if (handover.watch >= 0) {
    LOOPSIM_REAL(fcntl)(handover.watch, F_SETFD, 0);
    environment.push_back("LOOPSIM_SEAM_WATCH_FD=" + std::to_string(handover.watch));
  }
  return environment;
}

}  // namespace loopsim::posix

// The program's start: its main() is kept for the simulation's thread, and the seam's runs
// in its place.
SEAM_EXPORT int __libc_start_main(int (*main)(int, char**, char**), int argc, char** argv, void (*init)(),
                                  void (*fini)(), void (*rtld_fini)(), void* stack_end) {
  loopsim::posix::program_main = main;
  // Declared in no header of libc's: the one symbol typed here by hand.
  using Start = int(int (*)(int, char**, char**), int, char**, void (*)(), void (*)(), void (*)(), void*);
  return loopsim::posix::real<Start, "__libc_start_main">()(loopsim::posix::host_main, argc, argv, init, fini,
                                                                   rtld_fini, stack_end);
}
