// loopsim: the command line. It wires the layers together and holds no logic of its own.
#include <iostream>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  using namespace loopsim::cli;
  CLI::App app{"loopsim: deterministic simulation and model checking of event loops"};
  app.set_version_flag("--version", std::string("loopsim ") + LOOPSIM_VERSION);
  app.require_subcommand(1);
  int status = exit_held;
  add_run(app, status);
  add_live(app, status);
  add_render(app, status);
  add_check(app, status);
  add_seeds(app, status);
  add_explore(app, status);
  add_generate(app, status);
  add_probe(app, status);
  add_merge(app, status);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e) == 0 ? exit_held : exit_bad_input;  // --help
    // A bad command line, in the one error form: position, message, hint.
    std::string where = "command line";
    for (const CLI::App* sub : app.get_subcommands()) where = "loopsim " + sub->get_name();
    report_error(loopsim::sim::ScenarioError(where + ":1:1: " + e.what(),
                                             where == "command line" ? "loopsim --help lists the commands"
                                                                     : where + " --help lists its options"));
    return exit_bad_input;
  } catch (const std::invalid_argument& e) {
    return report_error(std::string("command line:1:1: ") + e.what(), "loopsim --help lists the commands");
  }
  return status;
}
