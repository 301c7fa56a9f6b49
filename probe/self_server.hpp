// A loopsim live of a scenario's own [kernel] and [loop] (loopsim live --config FILE), on a
// free loopback port: started, and stopped with SIGTERM when the caller is done. This process
// must be loopsim itself (/proc/self/exe).
#pragma once

#include <cstdint>
#include <string>
#include <sys/types.h>
#include <vector>

namespace loopsim::probe {

class SelfServer {
 public:
  SelfServer() = default;
  SelfServer(const SelfServer&) = delete;
  SelfServer& operator=(const SelfServer&) = delete;
  ~SelfServer() { stop(); }

  // The port it listens on, or a sim::ScenarioError at --live saying why it did not start.
  // `set`: --set arguments ("loop.accept_batch=0") for it.
  std::uint16_t start(const std::string& file, const std::vector<std::string>& set);
  // SIGTERM, and its exit status (-1 if it had to be killed, or was never started).
  int stop();

 private:
  pid_t pid_ = 0;
};

}  // namespace loopsim::probe
