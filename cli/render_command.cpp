// loopsim render TRACE --out F: a JSON Lines trace to a pass timeline (.svg, .png, .dot) or a
// Chrome trace (.json).
#include <iostream>

#include "cli/commands.hpp"
#include "reports/output.hpp"
#include "reports/timeline.hpp"
#include "trace/trace_reader.hpp"

namespace loopsim::cli {

namespace {

struct RenderArgs {
  std::string trace;
  std::string out;
};

int render(const RenderArgs& args) {
  auto kind = reports::output_kind(args.out, reports::any_kind);
  if (!kind) {
    return report_error("--out:1:1: " + args.out + ": unknown output format",
                        reports::output_hint(reports::any_kind));
  }
  try {
    check_output("--out", args.out, {args.trace});
    sim::Trace trace = sim::read_trace_file(args.trace);
    if (!trace.keeps<sim::ev::PassBegin>() || !trace.keeps<sim::ev::Events>()) {
      return report_error(args.trace + ":1:1: this trace keeps only what its properties read (--trace-level verdicts): "
                          "it has no passes to draw",
                          "record it again with --trace-level full (the default)");
    }
    reports::write_output(trace, *kind, args.out);
  } catch (const sim::ScenarioError& e) {
    return report_error(e);
  } catch (const sim::TraceError& e) {
    return report_error(e.what(), e.hint);
  } catch (const reports::RenderError& e) {
    return report_error(std::string("--out:1:1: ") + e.what(), "check that its folder exists and is writable");
  }
  std::cout << "wrote " << sim::escape_controls(args.out) << '\n';
  return exit_held;
}

}  // namespace

void add_render(CLI::App& app, int& status) {
  auto args = std::make_shared<RenderArgs>();
  auto* cmd = app.add_subcommand("render", "Render a trace as a pass timeline or a Chrome trace");
  cmd->add_option("trace", args->trace, "Trace file (JSON Lines, from loopsim run --trace)")->required()->check(non_empty);
  cmd->add_option("--out", args->out, "Output file: F.svg, F.png, F.dot (the timeline) or F.json (Chrome trace) (a regular file: never through a link, never a FIFO or a device, never an input)")
      ->required();
  cmd->footer("Exit status: 0 written, 2 bad input (an unreadable trace, an unknown extension).");
  cmd->callback([args, &status] { status = render(*args); });
}

}  // namespace loopsim::cli
