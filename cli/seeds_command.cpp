// loopsim seeds: the seed notes' tables beside loopsim's figures, as a Markdown document.
#include <iostream>

#include "cli/commands.hpp"
#include "reports/seed_tables.hpp"

namespace loopsim::cli {

void add_seeds(CLI::App& app, int& status) {
  auto out = std::make_shared<std::string>("docs/seed-tables.md");
  auto dir = std::make_shared<std::string>("scenarios");
  auto* cmd = app.add_subcommand("seeds", "Regenerate the seed notes' tables from simulation runs");
  cmd->add_option("--out", *out, "The document to write")->capture_default_str();
  cmd->add_option("--scenarios", *dir, "Where the scenarios are")->capture_default_str();
  cmd->callback([out, dir, &status] {
    try {
      check_output("--out", *out);
      write_output_file("--out", *out, [&](std::ostream& file) { reports::write_seed_tables(*dir, file); });
      std::cout << "wrote " << *out << '\n';
      status = exit_held;
    } catch (const sim::ScenarioError& e) {
      status = report_error(e);
    }
  });
}

}  // namespace loopsim::cli
