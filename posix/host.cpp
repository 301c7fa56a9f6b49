// The target's process: the seam takes over its start, runs the simulation with the program's
// main() as the server's thread, and talks to loopsim over the descriptor it inherited
// (target/target_wire.hpp). Without LOOPSIM_SEAM_FD the program just runs.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

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

}  // namespace

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
