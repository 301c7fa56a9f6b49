// What the seam's tests share: scenarios that run the probe (posix/probe/), and the probe run
// both ways, natively and under the seam, to compare the two.
#pragma once

#include <catch2/catch.hpp>
#include <sys/wait.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/loopsim_process_for_tests.hpp"
#include "scenario/scenario.hpp"
#include "sim/world.hpp"
#include "target/run.hpp"
#include "target/target.hpp"
#include "trace/trace.hpp"

#ifdef LOOPSIM_SEAM_BUILT

namespace loopsim::testing {

inline const std::string source = LOOPSIM_SOURCE_DIR;
inline const std::string probes = LOOPSIM_PROBES_DIR;

inline std::string jsonl(const sim::Trace& trace) {
  std::ostringstream out;
  sim::write_jsonl(trace, out);
  return out.str();
}

// A scenario running the probe with `what`; one client connects at 10 ms.
// `target` adds lines to its [target] table, `clients` sets how many clients there are.
inline sim::Scenario probe(const std::string& what, const std::string& program = "seam_probe_dynamic",
                           const std::string& target = "", int clients = 1) {
  std::string text = "name = \"probe\"\nhorizon = \"3s\"\n[target]\nexec = [\"" + probes + "/" + program +
                     "\", \"" + what + "\"]\nport = 8080\n" + target + "[[clients]]\nname = \"c\"\ncount = " +
                     std::to_string(clients) + "\nconnect_at = \"10ms\"\n"
                     "requests = [{ at = \"10ms\", path = \"/\" }]\n[[expect]]\nproperty = \"answered\"\n";
  return sim::parse_scenario(text, "probe.toml");
}

// What running `scenario` throws, as text.
// The scenario with its target's stdout and stderr going to PREFIX.ARM.stdout and .stderr.
inline sim::Scenario writing_to(sim::Scenario scenario, const std::string& prefix) {
  scenario.target->output = prefix;
  return scenario;
}

inline std::string error_of(const sim::Scenario& scenario) {
  try {
    sim::run(scenario);
  } catch (const sim::ScenarioError& e) {
    return e.what();
  }
  return "(no error)";
}

// The builds of the probe a comparison runs: the static one too, but where the seam's tests run
// under ThreadSanitizer (scripts/seam_tsan.sh preloads its runtime after the seam): a static
// program's libc is its own, and TSan's runtime never sees its threads.
inline std::vector<std::string> probe_builds() {
  if (std::getenv("LOOPSIM_SEAM_PRELOAD_AFTER") != nullptr) return {"seam_probe_dynamic"};
  return {"seam_probe_dynamic", "seam_probe_static"};
}

// Sets an environment variable for a scope: the target inherits this process's environment.
struct ScopedEnvironment {
  ScopedEnvironment(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnvironment() { ::unsetenv(name_); }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  const char* name_;
};

// The probe's `mode` run twice: natively, without a listener (Linux's answers), and under the
// seam. Its stdout each time, and the run. Natively it must exit 0, or, given `dies_of`, be
// ended by that signal (or its shell report 128 + it). `program`: which build of the probe, the
// same both ways (a static one's libc calls reach the seam as trapped system calls).
struct BothWays {
  std::string native, simulated;
  sim::RunResult result;
};
inline BothWays both_ways(const std::string& mode, int dies_of = 0, const std::string& program = "seam_probe_dynamic") {
  BothWays both;
  const std::string native_out = temp_path("seam-" + mode + "-native");
  const int status = std::system((probes + "/" + program + " " + mode + " alone > " + native_out).c_str());
  if (dies_of == 0) {
    REQUIRE(status == 0);
  } else {
    INFO("native wait status " << status);
    REQUIRE(((WIFSIGNALED(status) && WTERMSIG(status) == dies_of) ||
             (WIFEXITED(status) && WEXITSTATUS(status) == 128 + dies_of)));
  }
  both.native = file_text(native_out);
  const std::string prefix = temp_path("seam-" + mode);
  both.result = sim::run(loopsim::testing::writing_to(probe(mode, program), prefix));
  both.simulated = file_text(prefix + ".base.stdout");
  return both;
}

}  // namespace loopsim::testing

#endif  // LOOPSIM_SEAM_BUILT
