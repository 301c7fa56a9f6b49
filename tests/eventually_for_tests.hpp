// For tests that wait on another process or thread: look at a condition until it holds or a
// deadline passes, then assert on what was seen. A fixed sleep before an assertion guesses how
// long the other side takes, and a loaded machine proves the guess wrong; a condition with a
// generous deadline costs nothing when things go well and only fails when they do not.
#pragma once

#include <chrono>
#include <thread>

namespace loopsim::testing {

// Calls `condition` every `step` until it returns true (then true, at once) or `within` has
// passed (then false, after one last look). Blocks the calling thread for at most `within`
// plus a step and the condition's own time.
template <class Condition>
bool eventually(Condition&& condition, std::chrono::milliseconds within = std::chrono::seconds(10),
                std::chrono::milliseconds step = std::chrono::milliseconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  for (;;) {
    const bool past = std::chrono::steady_clock::now() >= deadline;
    if (condition()) return true;
    if (past) return false;
    std::this_thread::sleep_for(step);
  }
}

}  // namespace loopsim::testing
