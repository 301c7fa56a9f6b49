// loopsim live: the same loop on real sockets.
#include <arpa/inet.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "cli/commands.hpp"
#include "realloop/live/serve.hpp"

namespace loopsim::cli {

namespace {

struct LiveArgs {
  std::string listen = "127.0.0.1:8080";
  live::LiveOptions options;
};

constexpr const char* listen_hint = "e.g. --listen 127.0.0.1:8080 (an IPv4 address, then a port 0-65535)";

// ADDR:PORT, strictly: a dotted IPv4 address and a port of digits alone, nothing around them.
void parse_listen(const std::string& listen, live::LiveOptions& options) {
  const auto colon = listen.rfind(':');
  if (colon == std::string::npos)
    throw sim::ScenarioError("--listen:1:" + std::to_string(listen.size() + 1) + ": expected ADDR:PORT, not \"" + listen + "\"", listen_hint);
  const std::string address = listen.substr(0, colon), port = listen.substr(colon + 1);
  in_addr parsed{};
  if (address.empty() || ::inet_pton(AF_INET, address.c_str(), &parsed) != 1)
    throw sim::ScenarioError("--listen:1:1: \"" + address + "\" is not an IPv4 address", listen_hint);
  const bool digits = !port.empty() && port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || std::stoi(port) > 65535)
    throw sim::ScenarioError("--listen:1:" + std::to_string(colon + 2) + ": \"" + port + "\" is not a port", listen_hint);
  options.address = address;
  options.port = std::uint16_t(std::stoi(port));
}

int live(LiveArgs& args) {
  try {
    parse_listen(args.listen, args.options);
    if (args.options.workers != 1) {
      throw sim::ScenarioError("--workers:1:1: " + std::to_string(args.options.workers) + " workers: loopsim live runs 1 for now",
                               "leave --workers out; several workers come later");
    }
  } catch (const sim::ScenarioError& e) {
    return report_error(e);
  }
  if (args.options.address.rfind("127.", 0) != 0) {
    std::cerr << "warning: --listen " << args.listen << " is not a loopback address: loopsim live will serve "
              << (args.options.address == "0.0.0.0" ? "every interface" : "that interface") << "\n";
  }
  const int rc = live::serve_live(args.options);
  if (rc < 0) {
    return report_error("--listen:1:1: cannot listen on " + args.listen + ": " + std::strerror(-rc),
                        -rc == EADDRINUSE ? "another server holds that port; pick another, or 0 for any free one"
                                          : "check the address is one of this machine's");
  }
  return exit_held;
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
  cmd->callback([args, &status] { status = live(*args); });
}

}  // namespace loopsim::cli
