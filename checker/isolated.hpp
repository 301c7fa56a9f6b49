// A piece of work run in a child process, so that a crash in it (a failed assertion, a
// segfault, an allocation that kills the process) ends that piece alone. `loopsim check` runs
// each scenario this way: one scenario that brings loopsim down is an ERROR in its row, and
// the others still run.
#pragma once

#include <functional>
#include <string>
#include <variant>

namespace loopsim::checker {

// How the child ended when it gave no result: "died of signal 6 (Aborted)", "exited 3".
struct Crashed {
  std::string how;
};

// Runs `work` in a forked child and returns the bytes it returned, or how it died. The child
// has the default signal dispositions, so a crash is reported as the crash it is. Safe to
// call from several threads at once: each call has its own child and pipe.
std::variant<std::string, Crashed> run_isolated(const std::function<std::string()>& work);

}  // namespace loopsim::checker
