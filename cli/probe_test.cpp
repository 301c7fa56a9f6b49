// loopsim probe: the same scenario simulated and live, against loopsim live on loopback.
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <fstream>
#include <functional>
#include <regex>
#include <thread>

#include "cli/loopsim_process_for_tests.hpp"
#include "probe/figures.hpp"
#include "probe/live_clients.hpp"
#include "scenario/scenario.hpp"

using namespace loopsim;
using namespace loopsim::testing;
using namespace std::chrono_literals;

namespace {

// A measured time in the probe's property table: the row's simulated and live columns, in ms.
std::pair<double, double> property_row(const std::string& output, const std::string& property) {
  std::smatch m;
  const std::regex row("\n" + property + " +[^\n]*? ([0-9.]+) ms +([0-9.]+) ms ");
  REQUIRE(std::regex_search(output, m, row));
  return {std::stod(m[1]), std::stod(m[2])};
}

// A server on a free loopback port that reads one request on each connection and then answers
// as `serve` says, for as long as the peer is there and the test has not ended.
class HostileServer {
 public:
  explicit HostileServer(std::function<void(int fd, const std::atomic<bool>& stop)> serve) : serve_(std::move(serve)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t size = sizeof a;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &size);
    port = ntohs(a.sin_port);
    ::listen(listener_, 16);
    thread_ = std::thread([this] {
      int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) return;
      char request[4096];
      (void)::recv(fd, request, sizeof request, 0);
      serve_(fd, stop_);
      ::close(fd);
    });
  }
  ~HostileServer() {
    stop_ = true;
    ::shutdown(listener_, SHUT_RDWR);
    thread_.join();
    ::close(listener_);
  }
  std::uint16_t port = 0;

 private:
  std::function<void(int, const std::atomic<bool>&)> serve_;
  std::atomic<bool> stop_{false};
  int listener_ = -1;
  std::thread thread_;
};

// Sends `head`, then `filler` for as long as the peer takes it.
void send_endlessly(int fd, const std::atomic<bool>& stop, const std::string& head, const std::string& filler) {
  if (::send(fd, head.data(), head.size(), MSG_NOSIGNAL) < 0) return;
  while (!stop && ::send(fd, filler.data(), filler.size(), MSG_NOSIGNAL) > 0) {
  }
}

sim::Scenario one_request() {
  return sim::parse_scenario(
      "name = \"one\"\nhorizon = \"30s\"\n[[clients]]\nname = \"a\"\nrequests = [{ at = \"0s\", path = \"/\" }]\n"
      "[[expect]]\nproperty = \"answered\"\n",
      "one.toml");
}

long max_rss_kib() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

}  // namespace

TEST_CASE("probe against a server whose answer never ends: the time limit holds inside reads, and no body is kept") {
  // A 2^59-byte body at loopback speed: before, the probe read it in one loop that never looked
  // at the clock, and kept every byte (1 GiB of RSS for a 1 GiB body).
  HostileServer server([](int fd, const std::atomic<bool>& stop) {
    send_endlessly(fd, stop, "HTTP/1.1 200 OK\r\nContent-Length: 576460752303423488\r\n\r\n", std::string(1 << 20, 'x'));
  });
  probe::LiveOptions options;
  options.port = server.port;
  options.time_limit = 1s;
  const long rss_before = max_rss_kib();
  const auto started = std::chrono::steady_clock::now();
  probe::LiveRun run = probe::drive_live(one_request(), options);
  const auto took = std::chrono::steady_clock::now() - started;
  CHECK(run.end == probe::LiveRun::End::time_limit);
  CHECK(took < 5s);  // 1 s, and a loaded machine's scheduling
  CHECK(max_rss_kib() - rss_before < 64 * 1024);
  CHECK(run.unframed == 0);
}

TEST_CASE("probe against a server whose head never ends: the answer is unframed past 64 KiB, and the probe hangs up") {
  HostileServer server([](int fd, const std::atomic<bool>& stop) {
    send_endlessly(fd, stop, "HTTP/1.1 200 OK\r\n", "X-A: " + std::string(1 << 20, 'y'));
  });
  probe::LiveOptions options;
  options.port = server.port;
  options.time_limit = 10s;
  probe::LiveRun run = probe::drive_live(one_request(), options);
  CHECK(run.end == probe::LiveRun::End::quiet);  // its one client done: it ended long before 10 s
  CHECK(run.unframed == 1);
  CHECK(run.ran < 5s);
  bool refused = false;
  for (const sim::TraceEvent& e : run.trace.events) {
    if (const auto* r = std::get_if<sim::ev::Refused>(&e)) refused = r->error == EPROTO;
  }
  CHECK(refused);
}

TEST_CASE("probe accept-burst against its own loopsim live: the batch shape, or the other order with its choice named") {
  // Which order the live run takes is a race, and how long live sleeps overshoot depends on the
  // machine: this asserts the shape and what the probe says, not a timing. (On a quiet machine
  // the batch order agreed within 10 % in 23 probe runs of 23: docs/design-notes.md.)
  testing::Outcome o = run_loopsim("probe " + accept_burst + " --live self", true);
  INFO(o.output);
  CHECK(o.status == 0);
  CHECK(o.output.find("loopsim live --config") != std::string::npos);
  CHECK(std::regex_search(o.output, std::regex("\nburst +120/120 ")));
  auto [sim, live] = property_row(o.output, "latency +fast after blocker");
  CHECK(sim == 150.0);
  const bool apart = o.output.find("latency of fast after blocker") != std::string::npos;
  if (live >= 145.0) {  // the batch order: a batch of the burst's 10 ms sleeps, which never undershoot
    const bool within = live <= 165.0;
    CHECK((within || (apart && o.output.find("kernel.timer_slack") != std::string::npos)));
  } else {  // the loop accepted before the bytes: /fast first
    CHECK(live < 10.0);
    CHECK(apart);
    CHECK(o.output.find("send_after_connect = \"0s\"") != std::string::npos);
  }
  CHECK(o.output.find("not judged live") != std::string::npos);  // no_stranded_backlog is the server's
}

TEST_CASE("probe with the blocker's request 20 ms after its connect: /fast goes first in both") {
  std::ifstream in(accept_burst);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string blocker = "path = \"/slow?ms=600\" }]\n";
  text.insert(text.find(blocker) + blocker.size(), "send_after_connect = \"20ms\"\n");
  const std::string file = temp_path("gap.toml");
  std::ofstream(file) << text;
  auto o = run_loopsim("probe " + file + " --live self", true);
  INFO(o.output);
  CHECK(o.status == 0);
  auto [sim, live] = property_row(o.output, "latency +fast after blocker");
  CHECK(sim == 0.0);
  CHECK(live < 10.0);  // 20 ms is long enough for the loop to accept first, however loaded
}

TEST_CASE("probe against a port nobody listens on: every client refused, answered violated live") {
  // Port 1 (tcpmux) has no listener on a machine of ours: each connect is refused at once.
  auto o = run_loopsim("probe " + accept_burst + " --live 127.0.0.1:1 --time-limit 5s --seed 7", true);
  INFO(o.output);
  CHECK(o.status == 1);
  CHECK(std::regex_search(o.output, std::regex("\nanswered +0 +122 +- +held +VIOLATED")));
  // Said as what it is, not only as requests never answered; and the seed asked for is the one run.
  CHECK(o.output.find("live: 122 connection(s) refused (ECONNREFUSED): nothing listened on 127.0.0.1:1: the server "
                      "was not running there") != std::string::npos);
  CHECK(o.output.find("), seed 7\n") != std::string::npos);
  // The notes on where the two part name the send buffer.
  CHECK(o.output.find("the send buffer: the simulation's holds kernel.send_buffer") != std::string::npos);
}

TEST_CASE("probe refuses what it cannot do, in the one error form") {
  auto o = run_loopsim("probe " + accept_burst + " --live 10.1.2.3:80");
  CHECK(o.status == 2);
  CHECK(o.output.find("error: --live:1:1: 10.1.2.3 is not a loopback address") != std::string::npos);
  o = run_loopsim("probe " + accept_burst + " --live 127.0.0.1:http");
  CHECK(o.status == 2);
  CHECK(o.output.find("\"http\" is not a port") != std::string::npos);
  o = run_loopsim("probe " + accept_burst + " --live self --set loop.bogus=1");
  CHECK(o.status == 2);
  CHECK(o.output.find("unknown key") != std::string::npos);
  o = run_loopsim("probe " + accept_burst + " --live self --time-limit 5");
  CHECK(o.status == 2);
  CHECK(o.output.find("--time-limit") != std::string::npos);
  o = run_loopsim("probe " + std::string(LOOPSIM_SOURCE_DIR) + "/scenarios/flood.toml --live 127.0.0.1:1");
  CHECK(o.status == 3);
  CHECK(o.output.find("limit: 100001 clients") != std::string::npos);
}

TEST_CASE("the probe's figures: percentiles, the widest gap, and ratios that mean something") {
  sim::Trace t;
  t.groups = {"g"};
  t.group_sizes = {1};
  t.clients = {{0, 0, 3}};
  t.events = {sim::ev::Send{Instant{0ms}, 0, "/"}, sim::ev::Answer{Instant{10ms}, 0, "/", 200}, sim::ev::Send{Instant{10ms}, 0, "/"},
              sim::ev::Answer{Instant{40ms}, 0, "/", 200}, sim::ev::Send{Instant{40ms}, 0, "/"}};
  auto f = probe::group_figures(t, "g");
  CHECK(f.asked == 3);
  CHECK(f.answered == 2);
  CHECK(f.p50 == 30ms);
  CHECK(f.max == 30ms);
  CHECK(f.last_answer == Instant{40ms});
  CHECK(f.widest_gap == 30ms);
  CHECK(probe::ratio(10, 11) == Approx(1.1));
  CHECK_FALSE(probe::ratio(-1, 5));
  CHECK_FALSE(probe::ratio(0, 5));
  CHECK(probe::ratio(0, 0) == Approx(1.0));
  CHECK(probe::judged_from_clients("max_gap"));
  CHECK_FALSE(probe::judged_from_clients("no_stranded_backlog"));
}
