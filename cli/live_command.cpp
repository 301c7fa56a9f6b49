// loopsim live: the same loop on real sockets.
#include <arpa/inet.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "cli/commands.hpp"
#include "realloop/live/serve.hpp"

namespace loopsim::cli {

namespace {

// A live drain that could not finish: it reset connections past --drain-timeout, or a second
// signal cut it short.
constexpr int exit_drain_unfinished = 4;

struct LiveArgs {
  std::string listen = "127.0.0.1:8080";
  int workers = 0;  // 0: as the configuration says (loop.workers, 1 by default)
  std::string drain_timeout;
  bool reuse_port = false;
  std::string config;
  std::vector<std::string> set;
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

// The loop's configuration, checked exactly as a scenario's: --config's [kernel] and [loop]
// (its clients and the rest are checked too, and not used), then --workers, --drain-timeout
// and every --set on top. Of [kernel], only listen_backlog applies live (511 when unset): the
// rest describes a simulated kernel, and Linux is the kernel here.
sim::Scenario load_config(const LiveArgs& args) {
  std::vector<sim::Override> overrides;
  if (args.workers > 0) overrides.push_back({"loop.workers", std::to_string(args.workers)});
  if (!args.drain_timeout.empty()) {
    option_duration("--drain-timeout", args.drain_timeout);  // its own error, at its option
    overrides.push_back({"loop.drain_timeout", "\"" + args.drain_timeout + "\""});
  }
  for (auto& o : parse_overrides(args.set)) overrides.push_back(std::move(o));
  return args.config.empty() ? sim::parse_scenario("name = \"live\"\n", "live", overrides)
                             : sim::load_scenario(args.config, overrides);
}

void configure(LiveArgs& args) {
  const sim::Scenario scenario = load_config(args);
  args.options.loop = scenario.loop;
  args.options.workers = scenario.workers;
  args.options.reuse_port = args.reuse_port;
  // Unset, the backlog is nginx's 511 rather than the simulation's 128: a live server meets
  // bursts of real SYNs.
  args.options.backlog = scenario.where.count("kernel.listen_backlog") ? scenario.kernel.listen_backlog : 511;
}

// SIGHUP: --config read again, with the command line's overrides on top, and checked as at the
// start. A file that does not pass is refused with its error on stderr, and the loops keep
// what they had. What cannot change live is named, and left as it was.
void reload_on_hangup(LiveArgs& args) {
  auto running = std::make_shared<std::pair<LoopConfig, int>>(args.options.loop, args.options.workers);
  const std::string from = args.config.empty() ? "the command line" : args.config;
  args.options.reload = [&args, running, from]() -> std::optional<LoopConfig> {
    try {
      const sim::Scenario scenario = load_config(args);
      LoopConfig kept = running->first;
      take_reloadable(kept, scenario.loop);
      if (kept != scenario.loop || scenario.workers != running->second) {
        std::cerr << ("loopsim live: reload: " + from +
                      " changes keys that cannot change live (the mode and the pool, workers, max_connections, "
                      "the handle table, the rules' switches): left as they were; restart to apply them\n");
      }
      running->first = kept;
      return scenario.loop;
    } catch (const sim::ScenarioError& e) {
      report_error(e);
      std::cerr << "loopsim live: reload refused: still serving as before\n";
      return std::nullopt;
    }
  };
  args.options.on_reloaded = [from](bool changed) {
    // One write, so that the line arrives whole (std::cerr writes each piece at once).
    std::cerr << ("loopsim live: reloaded " + from +
                  (changed ? ": what begins now gets its timeouts, limits and batches\n" : ": nothing that can change live changed\n"));
  };
}

int live(LiveArgs& args) {
  try {
    parse_listen(args.listen, args.options);
    configure(args);
  } catch (const sim::ScenarioError& e) {
    return report_error(e);
  }
  reload_on_hangup(args);
  if (args.options.address.rfind("127.", 0) != 0) {
    std::cerr << "warning: --listen " << args.listen << " is not a loopback address: loopsim live will serve "
              << (args.options.address == "0.0.0.0" ? "every interface" : "that interface") << "\n";
  }
  // The process exits once serve_live returns: a signal after that changes nothing.
  args.options.keep_stop_handlers = true;
  const live::LiveResult result = live::serve_live(args.options);
  if (result.error < 0) {
    return report_error("--listen:1:1: cannot listen on " + args.listen + ": " + std::strerror(-result.error),
                        -result.error == EADDRINUSE ? "another server holds that port; pick another, or 0 for any free one"
                                                    : "check the address is one of this machine's");
  }
  if (result.unfinished > 0 || result.forced) {
    std::cerr << "loopsim live: stopped " << (result.forced ? "by a second signal" : "at --drain-timeout")
              << " with " << result.unfinished << " connection(s) unfinished";
    if (result.handlers_dropped > 0) std::cerr << " and " << result.handlers_dropped << " queued handler(s) dropped";
    std::cerr << "\n";
    return exit_drain_unfinished;
  }
  std::cerr << "loopsim live: stopped: every connection drained\n";
  return exit_held;
}

}  // namespace

void add_live(CLI::App& app, int& status) {
  auto args = std::make_shared<LiveArgs>();
  auto* cmd = app.add_subcommand("live", "Serve the app on real sockets with the same loop (epoll)");
  cmd->add_option("--listen", args->listen, "Address and port; port 0 picks a free one")
      ->capture_default_str();
  cmd->add_option("--workers", args->workers,
                  "Worker loops on threads of their own (loop.workers); with 2 or more, one more thread accepts and hands connections over (loop.accept_thread)")
      ->check(CLI::Range(1, 256));
  cmd->add_flag("--reuse-port", args->reuse_port,
                "With several workers, give each a listener of its own (SO_REUSEPORT) instead of hand-offs. "
                "The kernel then picks the worker by the connection's addresses, busy or not: a connection sent to a "
                "worker whose handler blocks (/slow, or pool-less slow work) waits for that handler, where the accept "
                "thread would have handed it to an idle worker");
  cmd->add_option("--drain-timeout", args->drain_timeout,
                  "How long the drain after SIGTERM/SIGINT may last (loop.drain_timeout; default 30s, 0s: no bound)")
      ->check(non_empty);
  cmd->add_option("--config", args->config,
                  "A scenario file whose [kernel] and [loop] configure the loop; checked as `loopsim run` checks it")
      ->check(non_empty);
  cmd->add_option("--set", args->set, "Override one key, as for run: --set loop.mode=pool (repeatable)");
  cmd->footer(
      "Routes: /fast, /hello, /slow?ms=N, /slow?us=N, /bytes?n=N. Prints \"listening on ADDR:PORT\" first.\n"
      "The first SIGTERM or SIGINT drains (R5): queued connections are admitted, the listener closes,\n"
      "what is in flight is answered, then idle connections close. A second signal stops at once.\n"
      "With a handler pool, handlers still queued when the drain ends are dropped (and counted): the\n"
      "exit comes within --drain-timeout and one handler, whatever the pool holds.\n"
      "Every loop rule's knob applies live, so each arm can be run live: --set loop.head_timeout=0s.\n"
      "SIGHUP reads --config again (with --set on top) and applies what can change live: the timeouts,\n"
      "the request and buffer limits and the batches (accept_batch, drain_chunk, yield_batch); what\n"
      "begins after gets them. A file that does not pass is refused on stderr and nothing changes.\n"
      "The process keeps running either way. Logs are stderr's alone: there is no log file to reopen.\n"
      "--reuse-port with a blocking handler: the kernel spreads connections by their addresses, so a\n"
      "new one may wait behind a busy worker's handler; the accept thread (the default) does not.\n"
      "Exit status: 0 after a clean drain; 2 bad input or no listener; 4 the drain reset connections\n"
      "past --drain-timeout, or a second signal cut it short, even one sent while the pool finishes\n"
      "(the count of connections, and of handlers dropped, is on stderr).");
  cmd->callback([args, &status] { status = live(*args); });
}

}  // namespace loopsim::cli
