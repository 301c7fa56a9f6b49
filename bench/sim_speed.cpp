// The simulator's speed: virtual time simulated per second of wall time, on a scenario run
// whole (its base, to its horizon). Reports the median of several runs; these machines are
// shared and noisy, so one run says little.
//
//   bench_sim_speed [SCENARIO] [RUNS]     (defaults: scenarios/accept-burst.toml, 9)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "scenario/scenario.hpp"
#include "sim/world.hpp"
#include "target/run.hpp"

namespace {

using Clock = std::chrono::steady_clock;

template <class T>
T median(std::vector<T> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// The time of the last answer any client received (the part of the run with work in it), and
// how many answers there were.
loopsim::Instant last_answer(const loopsim::sim::Trace& trace, std::size_t& answers) {
  loopsim::Instant last{};
  answers = 0;
  for (const auto& event : trace.events) {
    if (std::holds_alternative<loopsim::sim::ev::Answer>(event)) {
      last = loopsim::sim::time_of(event);
      ++answers;
    }
  }
  return last;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path = argc > 1 ? argv[1] : "scenarios/accept-burst.toml";
  int runs = argc > 2 ? std::max(5, std::atoi(argv[2])) : 9;
  loopsim::sim::Scenario scenario;
  try {
    scenario = loopsim::sim::load_scenario(path);
  } catch (const loopsim::sim::ScenarioError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  std::vector<double> wall_ms, to_horizon, to_last_answer, answers_per_s;
  std::size_t events = 0, answers = 0;
  for (int i = 0; i < runs; ++i) {
    auto start = Clock::now();
    auto result = loopsim::sim::run(scenario);
    double wall_ns = double(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
    events = result.trace.events.size();
    wall_ms.push_back(wall_ns / 1e6);
    to_horizon.push_back(double(loopsim::since_start(scenario.horizon).count()) / wall_ns);
    to_last_answer.push_back(double(loopsim::since_start(last_answer(result.trace, answers)).count()) / wall_ns);
    answers_per_s.push_back(double(answers) * 1e9 / wall_ns);
  }
  std::printf("scenario            %s (base arm, %zu trace events a run)\n", path.c_str(), events);
  std::printf("runs                %d\n", runs);
  std::printf("wall per run        %.3f ms (median; min %.3f, max %.3f)\n", median(wall_ms),
              *std::min_element(wall_ms.begin(), wall_ms.end()),
              *std::max_element(wall_ms.begin(), wall_ms.end()));
  std::printf("virtual / wall      %.0fx to the horizon (%.1f s virtual), median\n",
              median(to_horizon), double(loopsim::since_start(scenario.horizon).count()) / 1e9);
  std::printf("                    %.0fx to the last answer, median\n", median(to_last_answer));
  std::printf("requests / wall s   %.0f (%zu answered a run, trace recorded), median\n",
              median(answers_per_s), answers);
  return 0;
}
