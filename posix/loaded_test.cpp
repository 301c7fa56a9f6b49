// A statically linked program, loaded by the seam into a host of its own (posix/loaded.cpp):
// the probe built statically (its own glibc making every system call itself, its threads by
// its own clone) gives what its dynamic build gives, under the same scenarios.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <sstream>
#include <string>

#include "posix/probe_for_tests.hpp"
#include "sim/world.hpp"
#include "target/run.hpp"

#ifdef LOOPSIM_SEAM_BUILT

using namespace loopsim;
using namespace loopsim::testing;

namespace {

// The probe's `mode` under the seam, built `flavour`: its stdout, and the run's trace.
struct Ran {
  std::string out, trace;
};
Ran run_probe(const std::string& mode, const std::string& flavour) {
  const std::string prefix = temp_path("loaded-" + mode + "-" + flavour);
  sim::RunResult result = sim::run(writing_to(probe(mode, "seam_probe_" + flavour), prefix));
  return {file_text(prefix + ".base.stdout"), jsonl(result.trace)};
}

std::string without_lines_starting(const std::string& text, const std::string& start) {
  std::istringstream in(text);
  std::string kept, line;
  while (std::getline(in, line)) {
    if (line.rfind(start, 0) != 0) kept += line + "\n";
  }
  return kept;
}

}  // namespace

TEST_CASE("loaded: a statically linked C program runs as its dynamic build does: the same output, the same trace") {
  // Threads (static glibc's pthread_create is clone3, its join a futex on the word the exit
  // clears), mutexes and condition variables, signals and their handlers (whose %fs is the
  // program's), timers, readiness, descriptors, fstat, datagrams, SIGSYS and SA_ONSTACK.
  for (const char* mode : {"sync", "threads", "signals", "timers", "calls", "files", "msgs", "polls", "cond-clock",
                           "signalfd", "signal-waits", "raw", "onstack", "datagrams", "families"}) {
    INFO(mode);
    const Ran dynamic = run_probe(mode, "dynamic");
    // Position-dependent (-static), and position-independent (-static-pie: loaded at a base of
    // the seam's, where glibc relocates itself).
    for (const char* flavour : {"static", "static_pie"}) {
      INFO(flavour);
      const Ran loaded = run_probe(mode, flavour);
      CHECK(loaded.out == dynamic.out);
      CHECK(loaded.trace == dynamic.trace);
    }
  }
}

TEST_CASE("loaded: Go built without cgo, statically or as a PIE the loader starts, runs alike: the same trace") {
  // Both keep a thread pointer of their own; the PIE is started by Linux's loader with the seam
  // preloaded, and links no library.
  const auto go_run = [](const std::string& program) {
    const std::string text =
        "name = \"go\"\nhorizon = \"1s\"\n[target]\nexec = [\"" + probes + "/../examples/" + program +
        "\", \"--port\", \"8080\"]\nport = 8080\n[[clients]]\nname = \"c\"\ncount = 3\nconnect_at = \"10ms\"\n"
        "keep_alive = true\nrequests = [{ at = \"10ms\", path = \"/\" }, { at = \"20ms\", path = \"/slow\" }]\n"
        "[[expect]]\nproperty = \"answered\"\n";
    return sim::run(sim::parse_scenario(text, "go.toml"));
  };
  const sim::RunResult loaded = go_run("go_http_static"), pie = go_run("go_http_pie");
  CHECK(loaded.stats.answered == 6);
  CHECK(jsonl(pie.trace) == jsonl(loaded.trace));
}

TEST_CASE("loaded: a statically linked program forks, execs, waits and reaps as its dynamic build does") {
  // Its fork is its own clone (static glibc's _Fork), served as libc's fork is; system and
  // posix_spawn clone with CLONE_VM|CLONE_VFORK, and the child is a copy on the stack given.
  // The one difference: a copy cannot tell its parent that its exec failed through the memory
  // they would have shared, so posix_spawn of nothing returns 0 and its child exits 127, as
  // POSIX allows an implementation to report it.
  const Ran dynamic = run_probe("children", "dynamic"), loaded = run_probe("children", "static");
  CHECK(loaded.out.find("fork and exec: exited 3, SIGCHLD 1\n") != std::string::npos);
  CHECK(loaded.out.find("system: exited 5, SIGCHLD 3\n") != std::string::npos);
  CHECK(loaded.out.find("posix_spawn of nothing: 0\nno child left: exited 127") != std::string::npos);
  CHECK(without_lines_starting(without_lines_starting(loaded.out, "posix_spawn of nothing"), "no child left") ==
        without_lines_starting(without_lines_starting(dynamic.out, "posix_spawn of nothing"), "no child left"));
}

TEST_CASE("loaded: a statically linked program's break lies past its last segment, as Linux places it") {
  // Natively without address randomization (as loopsim runs every target), and under the seam,
  // which serves brk from its own region: the host's heap is not the program's.
  const std::string native_out = temp_path("loaded-brk-native");
  REQUIRE(std::system(("setarch x86_64 -R " + probes + "/seam_probe_static brk alone > " + native_out).c_str()) == 0);
  const std::string native = file_text(native_out);
  CHECK(native.find("grown by 1 MiB: yes\nshrunk back: yes\n") != std::string::npos);
  CHECK(run_probe("brk", "static").out == native);
}

TEST_CASE("loaded: a missing program is an error at target.exec, and an ELF file that is no program is refused by name") {
  // An object file: ELF, x86-64, but neither EXEC nor DYN.
  const std::string object = temp_path("loaded-object") + ".o";
  REQUIRE(std::system(("printf 'int f(void) { return 0; }' | cc -x c -c -o " + object + " - && chmod +x " + object).c_str()) == 0);
  std::string up;  // from the probes' folder to the root
  for (int i = 0; i < 32; ++i) up += "../";
  CHECK(error_of(probe("names", up + object)).find("is an ELF file that is not a program") != std::string::npos);
  std::string missing;
  try {
    probe("names", "no_such_program");
  } catch (const sim::ScenarioError& e) {
    missing = e.what();
  }
  CHECK(missing.find("probe.toml:4:8: target.exec: no program") == 0);
}

#endif  // LOOPSIM_SEAM_BUILT
