// The seed notes' tables beside loopsim's figures. Each row names the seed's figure (quoted
// from the note), the scenario, arm and overrides that reproduce its shape, and how loopsim's
// figure is read from the run. The figures in loopsim's column come from running them.
#pragma once

#include <iosfwd>
#include <string>

namespace loopsim::reports {

// Runs every row's scenario from `scenario_dir` and writes the Markdown document to `out`.
// Throws sim::ScenarioError when a scenario cannot be loaded.
void write_seed_tables(const std::string& scenario_dir, std::ostream& out);

}  // namespace loopsim::reports
