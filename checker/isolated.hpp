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

// Runs work(i) for every i below `count`, each in a forked child of its own, at most
// `parallel` at once, and calls done(i, result) as each one ends (in the order they end). Every
// child is forked from the calling thread, which waits for them all on their pipes: a fork from
// one of several threads can leave the child holding a lock another thread had (ASan's
// allocator did, and `loopsim check --jobs 3` hung).
void run_isolated_all(std::size_t count, std::size_t parallel, const std::function<std::string(std::size_t)>& work,
                      const std::function<void(std::size_t, std::variant<std::string, Crashed>)>& done);

}  // namespace loopsim::checker
