// loopsim: the command line. It wires the layers together and holds no logic of its own.
#include <iostream>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  using namespace loopsim::cli;
  CLI::App app{"loopsim: deterministic simulation and model checking of event loops"};
  app.require_subcommand(1);
  int status = exit_held;
  add_run(app, status);
  add_live(app, status);
  add_render(app, status);
  add_check(app, status);
  add_seeds(app, status);
  add_explore(app, status);
  add_generate(app, status);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? exit_held : exit_bad_input;
  } catch (const std::invalid_argument& e) {
    std::cerr << "error: " << e.what() << '\n';
    return exit_bad_input;
  }
  return status;
}
