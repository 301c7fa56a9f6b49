// A target's children (posix/processes.cpp): each way a server starts one, compared with Linux
// by running the probe both ways, and what the seam refuses of a child, by name.
#include <catch2/catch.hpp>

#include <string>

#include "posix/probe_for_tests.hpp"
#include "sim/world.hpp"
#include "target/run.hpp"

#ifdef LOOPSIM_SEAM_BUILT

using namespace loopsim;
using namespace loopsim::testing;

TEST_CASE("seam: fork and exec, system, popen and posix_spawn run their children as Linux does, waited for in virtual time") {
  const auto [native, simulated, result] = both_ways("children");
  INFO("Linux:\n" << native << "the seam:\n" << simulated);
  CHECK(native.find("pipe2(O_CLOEXEC): 1 1\nafter F_SETFD 0: 0\n"
                    "read \"from the child|second line|\"; waited for the child 1\n"
                    "fork and exec: exited 3, SIGCHLD 1\nagain: ECHILD\nkilled: killed by KILL, SIGCHLD 2\n"
                    "system: exited 5, SIGCHLD 3\npopen gave popen\npopen gave again\npclose: exited 0, SIGCHLD 4\n"
                    "posix_spawn 0 read \"spawned|\"\nspawned: exited 0, SIGCHLD 5\n"
                    "posix_spawn of nothing: ENOENT\nno child left: ECHILD\nepoll copied in a child: exited 0, SIGCHLD 7\n"
                    "ignored SIGCHLD: ECHILD\n") == 0);
  CHECK(simulated == native);
  CHECK(result.stats.accepted == 1);
  CHECK(result.stats.exit_status == 0);
  // Each child is in the trace, with the call that started it and how it ended.
  const std::string trace = jsonl(result.trace);
  CHECK(trace.find("\"ev\":\"child\",\"worker\":0,\"call\":\"fork\",\"status\":3}") != std::string::npos);
  CHECK(trace.find("\"ev\":\"child\",\"worker\":0,\"call\":\"fork\",\"status\":137,\"signal\":9}") != std::string::npos);
  CHECK(trace.find("\"call\":\"system\",\"status\":5}") != std::string::npos);
}

namespace {
std::string refused_child(const std::string& what, const std::string& target = "") {
  return error_of(probe("child-refused\", \"" + what, "seam_probe_dynamic", target));
}
}  // namespace

TEST_CASE("seam: a child that would need its parent meanwhile is refused by name") {
  // A child that serves the simulation's descriptors: its copy of the simulation is frozen.
  std::string error = refused_child("accept");
  CHECK(error.find("probe.toml:4:8: the target's child (forked, not yet exec'd) called accept4 at ") == 0);
  CHECK(error.find("a child is served only as far as its exec") != std::string::npos);
  // An exec handed a simulated socket as its stdin: the new program would serve it for real.
  error = refused_child("exec-socket");
  CHECK(error.find("the target's child (forked, not yet exec'd) called execl on simulated descriptor 0") != std::string::npos);
  CHECK(error.find("as its stdin, stdout or stderr") != std::string::npos);
  // A child that never ends: stopped at target.spin_limit, and gone.
  error = refused_child("runs-on", "spin_limit = \"300ms\"\n");
  CHECK(error.find("the target called fork at ") != std::string::npos);
  CHECK(error.find("its child ran for longer than target.spin_limit (300 ms of wall-clock time)") != std::string::npos);
  // The target replacing its own program once the simulation has seen it act (a listener).
  error = refused_child("exec-self");
  CHECK(error.find("the target called execl at ") != std::string::npos);
  CHECK(error.find("after the simulation saw it act") != std::string::npos);
}

TEST_CASE("seam: a child per connection serves the connection its parent accepted, its calls made by the parent") {
  // busybox's httpd: accept, fork, the child reads the request and answers it, the parent closes
  // its copy. The child's read, write and shutdown go to the parent, waiting in fork, which makes
  // them on its own descriptor for the connection, in virtual time. Dynamic and static builds.
  for (const std::string program : {"seam_probe_dynamic", "seam_probe_static"}) {
    INFO(program);
    const std::string prefix = temp_path("child-serves-" + program);
    sim::RunResult result = sim::run(writing_to(probe("child-serves", program, "", 3), prefix));
    CHECK(result.stats.accepted == 3);
    CHECK(result.stats.answered == 3);
    // Each child reads the simulation's calendar (2026-01-01 at virtual 0, and the clients came
    // at 10 ms), not the machine's: with the machine's, busybox's Date header made the same run
    // answer differently, and explore's replays parted from the executions they repeat.
    CHECK(file_text(prefix + ".base.stdout") == "child's time 1767225600\nchild's time 1767225600\nchild's time 1767225600\n");
    const std::string trace = jsonl(result.trace);
    CHECK(trace.find("\"ev\":\"child\",\"worker\":0,\"call\":\"fork\",\"status\":0}") != std::string::npos);
    CHECK(trace.find("\"ev\":\"answer\",\"client\":\"c#2\",\"path\":\"/\",\"status\":200}") != std::string::npos);
    // A child that answers nothing: the clients are owed, and answered says so.
    sim::RunResult mute = sim::run(probe("child-serves\", \"mute", program, "", 3));
    CHECK(mute.stats.accepted == 3);
    CHECK(mute.stats.answered == 0);
  }
}

TEST_CASE("seam: a wrapper that execs the server at once hands the run over, and its children inherit no seam") {
  // bash defines getenv and unsetenv of its own: the seam's variables were once left in what
  // its children inherit, and each child then took the seam and died (exit 2) looking for loopsim.
  const std::string seen = temp_path("wrapper-env");
  const sim::Scenario scenario = sim::parse_scenario(
      "name = \"wrapper\"\nhorizon = \"1s\"\n[target]\nexec = [\"bash\", \"-c\", \"env > " + seen +
          "; exec " + probes + "/seam_probe_dynamic names\"]\nport = 8080\n[[clients]]\nname = \"c\"\n"
          "connect_at = \"10ms\"\nrequests = [{ at = \"10ms\", path = \"/\" }]\n",
      "wrapper.toml");
  // The probe, run in bash's place, listens: else the run would be the error "never listened".
  CHECK_NOTHROW(sim::run(scenario));
  const std::string environment = file_text(seen);
  CHECK(environment.find("PATH=") != std::string::npos);
  CHECK(environment.find("LD_PRELOAD=") == std::string::npos);
  CHECK(environment.find("LOOPSIM_SEAM") == std::string::npos);
}

#endif  // LOOPSIM_SEAM_BUILT
