// The seed notes' tables beside loopsim's figures. Each row names the seed's figure (quoted
// from the note), the scenario, arm and overrides that reproduce its shape, and how loopsim's
// figure is read from the run. The figures in loopsim's column come from running them.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>

namespace loopsim::checker {

// What a row measures, for a live run of the same scenario and arm.
struct LiveAsk {
  std::string scenario;  // its path
  std::string arm;
  std::string property;        // or the group, with answers_of_group
  bool answers_of_group = false;
  bool in_ms = true;           // a time (else a count)
};
// A row's figure from a live run, as text: measured, or why there is none.
using LiveFigure = std::function<std::string(const LiveAsk&)>;

// Runs every row's scenario from `scenario_dir` and writes the Markdown document to `out`;
// with `live`, a "loopsim live" column beside the simulated one.
// Throws sim::ScenarioError when a scenario cannot be loaded, or a row names an arm or a
// property its scenario lacks (then `loopsim seeds` exits 2 and writes nothing whole).
void write_seed_tables(const std::string& scenario_dir, std::ostream& out, const LiveFigure& live = {});

}  // namespace loopsim::checker
