// tiny_loop: a loop of its own (tiny_loop.hpp), judged by loopsim on the simulated kernel and
// served live on epoll: the same class both times.
//
//   tiny_loop check SCENARIO.toml [key=value ...]  every arm of the scenario, with this loop in
//                                                  place of the built-in one; exit 0 when each
//                                                  arm meets its expectation, 1 when one does
//                                                  not, 2 for a bad scenario
//   tiny_loop live [PORT]                          serve 127.0.0.1:PORT until SIGINT or SIGTERM
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string>

#include "checker/suite.hpp"
#include "realloop/live/linux_kernel.hpp"
#include "reports/summary.hpp"
#include "tiny_loop.hpp"

namespace {

int check(const std::string& file, const std::vector<std::string>& assignments) {
  try {
    loopsim::checker::SuiteOptions options;
    options.servers.own_loop = [](loopsim::Kernel& kernel, loopsim::LoopObserver& observer,
                                  const loopsim::LoopConfig& config) {
      return std::make_unique<tiny::TinyLoop>(kernel, observer, config);
    };
    for (const std::string& a : assignments) options.overrides.push_back(loopsim::sim::parse_override(a));
    loopsim::checker::SuiteResult result = loopsim::checker::run_suite(file, options);
    loopsim::reports::print_table(result.report, std::cout);
    return result.report.errored() ? 2 : result.report.held() ? 0 : 1;
  } catch (const loopsim::sim::ScenarioError& e) {
    std::cerr << "error: " << e.what() << "\n  hint: " << e.hint << '\n';
    return 2;
  }
}

tiny::TinyLoop* serving = nullptr;

int live(int port) {
  loopsim::live::LinuxKernel kernel;
  loopsim::LoopObserver quiet;  // live, nobody records a trace
  tiny::TinyLoop loop(kernel, quiet, loopsim::LoopConfig{});
  int listener = loop.open(loopsim::ListenSpec{"127.0.0.1", std::uint16_t(port), 128});
  if (listener < 0) {
    std::cerr << "tiny_loop: cannot listen on 127.0.0.1:" << port << " (errno " << -listener << ")\n";
    return 1;
  }
  std::cout << "tiny_loop: serving http://127.0.0.1:" << kernel.local_port(listener) << "/" << std::endl;
  serving = &loop;
  auto stop = [](int) { serving->shutdown(); };  // a flag and a wake-up: async-signal-safe
  std::signal(SIGINT, stop);
  std::signal(SIGTERM, stop);
  loop.run();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string verb = argc > 1 ? argv[1] : "";
  if (verb == "check" && argc > 2) return check(argv[2], std::vector<std::string>(argv + 3, argv + argc));
  if (verb == "live") return live(argc > 2 ? std::atoi(argv[2]) : 8080);
  std::cerr << "usage: tiny_loop check SCENARIO.toml [key=value ...]\n       tiny_loop live [PORT]\n";
  return 2;
}
