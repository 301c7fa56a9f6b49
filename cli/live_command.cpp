// loopsim live: the same loop on real sockets.
#include "cli/commands.hpp"
#include "realloop/live/serve.hpp"

namespace loopsim::cli {

namespace {

struct LiveArgs {
  std::string listen = "127.0.0.1:8080";
  live::LiveOptions options;
};

void parse_listen(const std::string& listen, live::LiveOptions& options) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos) throw CLI::ValidationError("--listen", "expected ADDR:PORT");
  options.address = listen.substr(0, colon);
  int port = -1;
  try {
    port = std::stoi(listen.substr(colon + 1));
  } catch (const std::exception&) {
  }
  if (port < 0 || port > 65535) throw CLI::ValidationError("--listen", "bad port in " + listen);
  options.port = std::uint16_t(port);
}

}  // namespace

void add_live(CLI::App& app, int& status) {
  auto args = std::make_shared<LiveArgs>();
  auto* cmd = app.add_subcommand("live", "Serve the app on real sockets with the same loop (epoll)");
  cmd->add_option("--listen", args->listen, "Address and port; port 0 picks a free one")
      ->capture_default_str();
  cmd->add_option("--workers", args->options.workers, "Worker loops")->capture_default_str();
  cmd->footer(
      "Routes: /fast, /hello, /slow?ms=N, /slow?us=N. Prints \"listening on ADDR:PORT\" first;\n"
      "stops cleanly on SIGINT or SIGTERM.");
  cmd->callback([args, &status] {
    parse_listen(args->listen, args->options);
    status = live::serve_live(args->options);
  });
}

}  // namespace loopsim::cli
