// The POSIX seam: unmodified programs on the simulated kernel (docs/targets.md). The probes
// (posix/probe/seam_probe.c) each do one thing; the examples are real libraries' servers.
#include <catch2/catch.hpp>
#include <chrono>
#include <unistd.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <time.h>
#include <signal.h>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <iterator>
#include <regex>
#include <sstream>
#include <set>
#include <string>

#include "checker/properties.hpp"
#include "checker/suite.hpp"
#include "cli/loopsim_process_for_tests.hpp"
#include "posix/probe_for_tests.hpp"
#include "posix/seam.hpp"
#include "scenario/scenario.hpp"
#include "sim/world.hpp"
#include "target/run.hpp"
#include "target/target.hpp"
#include "tests/eventually_for_tests.hpp"

#ifdef LOOPSIM_SEAM_BUILT

using namespace loopsim;
using namespace loopsim::testing;

TEST_CASE("seam: the same scenario, seed and binary give a byte-identical trace") {
  for (const char* file : {"/examples/libuv/uv-burst.toml", "/examples/libevent/ev-burst.toml"}) {
    INFO(file);
    sim::Scenario s = sim::load_scenario(source + file);
    std::string first = jsonl(sim::run(s).trace);
    CHECK(first.find("\"ev\":\"accept\"") != std::string::npos);  // the program did serve
    CHECK(jsonl(sim::run(s).trace) == first);
  }
}

TEST_CASE("seam: the built-in loop judged from the kernel's side gives the verdicts of its observer") {
  // loopsim live, unmodified, as a target, against accept-burst's base run in this process.
  checker::SuiteOptions options;
  options.only_arm = "base";
  checker::SuiteResult inside = checker::run_suite(source + "/scenarios/accept-burst.toml", options);
  // A failing call costs the target nothing here, as the built-in loop's calls cost nothing:
  // then even the times measured are the same, to the nanosecond.
  checker::SuiteOptions free_calls = options;
  free_calls.overrides.push_back(sim::Override{"target.call_cost", "\"0ns\""});
  checker::SuiteResult seam = checker::run_suite(source + "/examples/live/live-burst.toml", free_calls);
  const auto& a = inside.report.arms.front().verdicts;
  const auto& b = seam.report.arms.front().verdicts;
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].property);
    CHECK(a[i].property == b[i].property);
    CHECK(a[i].held == b[i].held);
    CHECK(a[i].measured == b[i].measured);
  }
  CHECK(inside.report.arms.front().stats.accepted == seam.report.arms.front().stats.accepted);
  CHECK(inside.report.arms.front().stats.passes == seam.report.arms.front().stats.passes);
}

TEST_CASE("seam: a call it does not serve stops the run, naming the call, the descriptor and the time") {
  std::string error = error_of(probe("unserved"));
  CHECK(error.find("probe.toml:") == 0);
  CHECK(error.find("the target called fcntl(F_SETOWN) on simulated descriptor") != std::string::npos);
  CHECK(error.find("10.000 ms of virtual time") != std::string::npos);
}

TEST_CASE("seam: a fortified read told its buffer is too small ends the target as glibc ends it") {
  // Natively glibc's __read_chk ends the program (SIGABRT) before reading; the seam stands in
  // front of __read_chk, and must keep the check (it used to drop the buffer's size and read).
  const std::string native_out = temp_path("seam-fortify-native");
  const int status = std::system((probes + "/seam_probe_dynamic fortify alone > " + native_out + " 2>/dev/null").c_str());
  CHECK(((WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT) || (WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGABRT)));
  CHECK(file_text(native_out) == "reading 64 bytes into a buffer said to hold 16\n");
  const std::string error = error_of(probe("fortify"));
  INFO(error);
  CHECK(error.find("killed by signal 6 (Aborted)") != std::string::npos);
  CHECK(error.find("buffer overflow detected") != std::string::npos);
}

TEST_CASE("seam: a target's memory is bounded at target_data_max, and running past it is its end") {
  // The probe asks for 64 MiB at a time without touching it: refused at 4 GiB of heap, whatever
  // the machine has. (Before, a target grew until the machine's own limits stopped it.)
  const std::string error = error_of(probe("hog"));
  INFO(error);
  CHECK(error.find("the target exited with status 4") != std::string::npos);
  std::smatch m;
  REQUIRE(std::regex_search(error, m, std::regex("allocated ([0-9]+) MiB, then refused")));
  CHECK(std::stol(m[1]) * (std::int64_t(1) << 20) <= sim::target_data_max);
  CHECK(std::stol(m[1]) * (std::int64_t(1) << 20) >= sim::target_data_max - (std::int64_t(256) << 20));
}

TEST_CASE("seam: a target's shared memory is bounded at target_data_max too") {
  // RLIMIT_DATA does not count MAP_SHARED: a target touched 4.4 GiB of it and the run held.
  // The probe maps 64 MiB at a time without touching it, so the test uses no memory.
  const std::string error = error_of(probe("shared-hog"));
  INFO(error);
  CHECK(error.find("the target exited with status 4") != std::string::npos);
  std::smatch m;
  REQUIRE(std::regex_search(error, m, std::regex("mapped ([0-9]+) MiB shared, then refused")));
  CHECK(std::stol(m[1]) * (std::int64_t(1) << 20) <= sim::target_data_max);
  CHECK(std::stol(m[1]) * (std::int64_t(1) << 20) >= sim::target_data_max - (std::int64_t(256) << 20));
}

TEST_CASE("seam: a target's thread starts, ends and is joined, with its return value") {
  const std::string prefix = loopsim::testing::temp_path("seam-thread");
  sim::RunResult result = sim::run(loopsim::testing::writing_to(probe("thread"), prefix));
  CHECK(file_text(prefix + ".base.stdout").find("joined 0 value (nil)") != std::string::npos);
  (void)result;
}

TEST_CASE("seam: a target's threads serve in virtual time, one at a time, each seed its own schedule") {
  // The main thread accepts; two workers take connections from a queue (a mutex and a
  // condition variable); a third thread computes and is joined.
  sim::Scenario s = probe("threads", "seam_probe_dynamic", "", 6);
  std::set<std::string> schedules;
  std::set<int> answered_by;  // the workers that read a request, over all seeds
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    s.seed = seed;
    sim::RunResult first = sim::run(s);
    CHECK(first.stats.accepted == 6);
    CHECK(checker::evaluate(first.trace, s.expect, {}).front().held);
    const std::string trace = jsonl(first.trace);
    CHECK(jsonl(sim::run(s).trace) == trace);  // the same seed, byte for byte
    CHECK(trace.find("\"kind\":\"preempt\"") != std::string::npos);
    schedules.insert(trace);
    for (const sim::TraceEvent& e : first.trace.events) {
      if (auto* r = std::get_if<sim::ev::RequestBegin>(&e)) answered_by.insert(r->worker);
    }
  }
  CHECK(schedules.size() == 4);
  CHECK(answered_by == std::set<int>{1, 2});  // the trace names the thread: both workers answered
  // Without preemptions the run offers none: each thread runs until it blocks.
  s = probe("threads", "seam_probe_dynamic", "preemptions = 0\n", 6);
  CHECK(jsonl(sim::run(s).trace).find("\"kind\":\"preempt\"") == std::string::npos);
}

namespace {

// The "signals" probe with a SIGHUP at 100 ms and `last` at 200 ms; two clients answered early,
// one connected at 150 ms whose request comes at 300 ms.
sim::Scenario signalled(const std::string& last) {
  std::string text = "name = \"signals\"\nhorizon = \"3s\"\n[target]\nexec = [\"" + probes +
                     "/seam_probe_dynamic\", \"signals\"]\nport = 8080\n"
                     "[[clients]]\nname = \"early\"\ncount = 2\nconnect_at = \"10ms\"\nrequests = [{ at = \"10ms\", path = \"/\" }]\n"
                     "[[clients]]\nname = \"held\"\nconnect_at = \"150ms\"\nrequests = [{ at = \"300ms\", path = \"/\" }]\n"
                     "[[actions]]\nkind = \"signal\"\nsignal = \"SIGHUP\"\nat = \"100ms\"\n"
                     "[[actions]]\nkind = \"signal\"\nsignal = \"" + last + "\"\nat = \"200ms\"\n"
                     "[[expect]]\nproperty = \"answered\"\n[[expect]]\nproperty = \"shutdown_clean\"\n";
  return sim::parse_scenario(text, "signals.toml");
}

}  // namespace

TEST_CASE("seam: signals reach a target's handlers in virtual time, and shutdown_clean judges its drain") {
  const std::string prefix = loopsim::testing::temp_path("seam-signals");
  sim::Scenario s = signalled("SIGTERM");
  sim::RunResult r = sim::run(loopsim::testing::writing_to(s, prefix));
  const std::string out = file_text(prefix + ".base.stdout");
  INFO(out);
  CHECK(out.find("SIGTERM's handler kept 1") != std::string::npos);  // sigaction answers what was set
  CHECK(out.find("raised twice, handled 2") != std::string::npos);   // raise and kill(getpid()) deliver at once
  // epoll_wait is never restarted: each signal ends the wait with EINTR, its handler run first.
  CHECK(out.find("epoll_wait EINTR hup 1 term 0\nepoll_wait EINTR hup 1 term 1\nclosed the listener, holding 1") !=
        std::string::npos);
  std::vector<checker::Verdict> verdicts = checker::evaluate(r.trace, s.expect, {});
  CHECK(verdicts.at(0).held);  // the held client was answered during the drain
  CHECK(verdicts.at(1).held);
  const std::string trace = jsonl(r.trace);
  CHECK(trace.find("{\"t\":200000000,\"ev\":\"shutdown_asked\"}") != std::string::npos);
  CHECK(trace.find("\"ev\":\"listener_closed\",\"worker\":0") != std::string::npos);
  CHECK(trace.find("{\"t\":300000000,\"ev\":\"process_exit\",\"status\":0}") != std::string::npos);

  // SIGQUIT has no handler: its default action ends the process at once, holding the
  // connection whose request is still to come. Nothing was owed it as the process ended, so
  // the drain lost nothing; the request it sends later is never answered.
  s = signalled("SIGQUIT");
  r = sim::run(s);
  verdicts = checker::evaluate(r.trace, s.expect, {});
  CHECK_FALSE(verdicts.at(0).held);
  CHECK(verdicts.at(1).held);
  CHECK(verdicts.at(1).detail.find("worker 0 exited holding 1 idle connection(s), with nothing outstanding") !=
        std::string::npos);
  // 128 + SIGQUIT, as a shell reports it, and which signal it was.
  CHECK(jsonl(r.trace).find("\"ev\":\"process_exit\",\"status\":131,\"signal\":3}") != std::string::npos);
  CHECK(sim::exit_text(r.stats).find("the target was ended by SIGQUIT (status 131) at") == 0);
}

TEST_CASE("seam: a thread blocked in a call keeps its descriptor while another opens a thousand") {
  // Found by node: its task scheduler's epoll_wait read a descriptor table that another thread's
  // new descriptors had moved, and failed EBADF.
  const std::string prefix = loopsim::testing::temp_path("seam-grow");
  sim::run(loopsim::testing::writing_to(probe("grow", "seam_probe_dynamic", "", 1), prefix));
  CHECK(file_text(prefix + ".base.stdout") == "woke with 1 event(s), data 77\n");
}

TEST_CASE("examples: redis exits at SIGTERM holding an idle client, which loses nothing, and one owed an answer, which does") {
  // examples/redis/redis.toml, with one more client that stays connected, idle, past the signal.
  std::string text = file_text(source + "/examples/redis/redis.toml");
  const std::string idle = "\n[[clients]]\nname = \"idle\"\nconnect_at = \"150ms\"\nkeep_alive = true\nframing = \"resp\"\n"
                           "requests = [{ at = \"150ms\", bytes = \"PING\\r\\n\" }]\n";
  sim::Scenario s = sim::parse_scenario(text + idle, source + "/examples/redis/redis.toml");
  sim::RunResult r = sim::run(s);
  std::vector<checker::Verdict> verdicts = checker::evaluate(r.trace, s.expect, {});
  REQUIRE(verdicts.size() == 3);
  CHECK(verdicts[0].held);  // every request was answered, the idle client's PING too
  CHECK(verdicts[2].held);  // it sees the close, as a client of redis does live
  CHECK(verdicts[2].detail.find("worker 0 exited holding 1 idle connection(s), with nothing outstanding") !=
        std::string::npos);

  // A client 100 ms away sends its second PING just before the signal: in flight as redis exits.
  const std::string far = "\n[[clients]]\nname = \"far\"\nconnect_at = \"150ms\"\nkeep_alive = true\nframing = \"resp\"\n"
                          "rtt = \"100ms\"\nrequests = [{ at = \"150ms\", bytes = \"PING\\r\\n\" },"
                          " { at = \"990ms\", bytes = \"PING\\r\\n\" }]\n";
  s = sim::parse_scenario(text + idle + far, source + "/examples/redis/redis.toml");
  r = sim::run(s);
  verdicts = checker::evaluate(r.trace, s.expect, {});
  CHECK_FALSE(verdicts[0].held);
  CHECK_FALSE(verdicts[2].held);
  INFO(verdicts[2].detail);
  CHECK(verdicts[2].detail.find("worker 0 exited holding 1 connection(s) owed an answer (and 1 idle connection(s)") !=
        std::string::npos);
  CHECK(verdicts[2].detail.find("1 request(s) outstanding at an exit never answered") != std::string::npos);
}

TEST_CASE("a silent target's threads are named by the call Linux holds them in") {
  // Said when a target sends nothing for 120 s: a thread blocked in Linux's own call reached
  // the kernel past the seam. A child of this test, asleep in Linux's clock_nanosleep.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const timespec day{86400, 0};
    ::syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &day, nullptr);
    ::_exit(0);
  }
  std::string seen;
  for (int i = 0; i < 200 && seen.find("blocked") == std::string::npos; ++i) {  // until it sleeps
    seen = sim::threads_seen(child);
    ::usleep(10'000);
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  CHECK(seen == "0 running; blocked in 1 clock_nanosleep");
  CHECK(sim::threads_seen(child).empty());  // gone: /proc says nothing
}

TEST_CASE("examples: explore finds a Go handler that never answers, and its counterexample replays") {
  // examples/go/go_http.go with --hold: /hold's handler blocks for ever, its keep-alive
  // connection open and unanswered. Go's runtime makes every call itself: the trap serves them,
  // in the cgo build and in the static one, which the seam loads (posix/loaded.cpp).
  for (const std::string program : {"go_http", "go_http_static"}) {
    INFO(program);
    const std::string folder = loopsim::testing::temp_path("go-hold-" + program);
    std::filesystem::create_directories(folder);
    const std::string scenario = folder + "/go-hold.toml";
    std::ofstream(scenario) << "name = \"go-hold\"\nhorizon = \"500ms\"\n[target]\nexec = [\"" << program
                            << "\", \"--port\", \"8080\", \"--hold\"]\nport = 8080\n[[clients]]\nname = \"c\"\n"
                               "connect_at = \"10ms\"\nkeep_alive = true\nrequests = [{ at = \"10ms\", path = \"/\" }, "
                               "{ at = \"20ms\", path = \"/hold\" }]\n[[expect]]\nproperty = \"answered\"\n";
    const auto found = loopsim::testing::run_loopsim("explore " + scenario + " --out " + folder + "/out");
    INFO(found.output);
    REQUIRE(found.status == 1);
    CHECK(found.output.find("never answered: \"/hold\"") != std::string::npos);
    std::smatch replay;
    REQUIRE(std::regex_search(found.output, replay, std::regex("replay: loopsim run (\\S+)")));
    const auto replayed = loopsim::testing::run_loopsim("run " + replay[1].str());
    INFO(replayed.output);
    CHECK(replayed.status == 1);
    // Without --hold the same scenario holds: the run is the handler's doing.
    std::string text = file_text(scenario);
    text.replace(text.find(", \"--hold\""), 10, "");
    std::ofstream(scenario) << text;
    CHECK(loopsim::testing::run_loopsim("run " + scenario).status == 0);
  }
}

TEST_CASE("explore tries a target's thread interleavings within the preemption bound, and counts them") {
  const std::string file = loopsim::testing::temp_path("threads-explore") + ".toml";
  {
    std::ofstream out(file);
    out << "name = \"threads\"\nhorizon = \"1s\"\n[target]\nexec = [\"" << probes
        << "/seam_probe_dynamic\", \"threads\"]\nport = 8080\npreemptions = 1\n"
           "[[clients]]\nname = \"c\"\ncount = 2\nconnect_at = \"10ms\"\nrequests = [{ at = \"10ms\", path = \"/\" }]\n"
           "[[expect]]\nproperty = \"answered\"\n";
  }
  auto outcome = loopsim::testing::run_loopsim("explore " + file + " --json --max-executions 300", true);
  INFO(outcome.output);
  nlohmann::json doc = nlohmann::json::parse(outcome.output);
  CHECK(doc["preemption_bound"] == 1);
  CHECK(doc["executions"].get<int>() == 300);
  CHECK(doc["preempted_executions"].get<int>() > 0);
  CHECK(doc["preempted_executions"].get<int>() < 300);  // the bound leaves room for runs that never switch
}

TEST_CASE("seam: the spin watch counts a thread's CPU time: one blocked a second for real is not a spin") {
  // A wall-clock watchdog of 300 ms would call this a spin; a thread blocked in the kernel runs
  // no CPU, as a loaded machine's threads run less of each second, and neither is one.
  const sim::RunResult r = sim::run(probe("thread-waits-for-real", "seam_probe_dynamic", "spin_limit = \"300ms\"\n"));
  CHECK(r.stats.accepted == 1);
}

TEST_CASE("seam: a target thread that never makes a served call is reported, not waited for") {
  const std::string error = error_of(probe("thread-spins", "seam_probe_dynamic", "spin_limit = \"300ms\"\n"));
  // It gave way twice, each 100 ms of CPU time, each costing 1 ms of virtual time: nothing ended it.
  CHECK(error.find("the target's thread 1 at 2.000 ms of virtual time ran for 300 ms of its own CPU time without a call "
                   "the simulation serves, giving way each 100 ms of it: a spin that nothing ends") != std::string::npos);
}

TEST_CASE("seam: a main thread that never makes a served call is reported, not waited for") {
  // main() runs on the engine's own OS thread, so no proxy watches it: loopsim watches it
  // through the page it shares with the target (sim::MainWatch). Without it, a spinning main()
  // was caught only by loopsim's 120 s of silence, whatever spin_limit said.
  const auto started = std::chrono::steady_clock::now();
  const std::string error = error_of(probe("spins-main", "seam_probe_dynamic", "spin_limit = \"300ms\"\n"));
  CHECK(error.find("probe.toml:6:14: the target's main thread at 0.000 ms of virtual time ran for 300 ms of its "
                   "own CPU time without a call the simulation serves") == 0);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(60));
}

TEST_CASE("seam: a program that never listens on its port is named, with where it did listen") {
  CHECK(error_of(probe("elsewhere")).find("never listened on port 8080 (it listened on: 9090)") != std::string::npos);
  // At the port's own line and column in the user's file, not in the text the target reads.
  CHECK(error_of(probe("elsewhere")).find("probe.toml:5:8: the target never listened") == 0);
  CHECK(error_of(probe("nothing")).find("the target exited with status 0 at 0.0 ms of virtual time, before it listened on port 8080 (it listened on: none)") != std::string::npos);
}

TEST_CASE("seam: a target whose free failing calls stop the clock is a livelock, found by run and by explore") {
  std::string text = "name = \"spin\"\nhorizon = \"1s\"\n[target]\nexec = [\"" + probes +
                     "/seam_probe_dynamic\", \"spin\"]\nport = 8080\ncall_cost = \"0ns\"\n[[clients]]\nname = \"c\"\n"
                     "connect_at = \"10ms\"\nrequests = [{ at = \"10ms\", path = \"/\" }]\n[[expect]]\nproperty = \"answered\"\n";
  sim::Scenario s = sim::parse_scenario(text, "spin.toml");
  sim::RunResult r = sim::run(s);
  CHECK(r.trace.stalled);
  CHECK(r.trace.cut.find("livelock: virtual time stood still for 1000000 kernel calls at 0.0 ms") == 0);
  std::vector<checker::Verdict> verdicts = checker::evaluate(r.trace, s.expect, {});
  REQUIRE(verdicts.size() == 2);
  CHECK_FALSE(verdicts[0].decided);  // answered needs the end
  CHECK(verdicts[1].property == "livelock");
  CHECK_FALSE(verdicts[1].held);
}

namespace {

// Whether a process whose command line holds `token` is alive.
bool running_with(const std::string& token) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::string line((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (line.find(token) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("seam: no target outlives loopsim, even one killed with SIGKILL mid-run") {
  // As root the probe also becomes nobody first, which makes Linux forget PR_SET_PDEATHSIG: the
  // seam arms it again.
  const std::string as = GENERATE(std::string("as-itself"), std::string("as-nobody"));
  std::string token = "outlive-token-" + as + std::to_string(::getpid());
  std::string file = loopsim::testing::temp_path("outlive") + ".toml";
  // Failing accepts at 1 us each for 1,000 s of virtual time: far longer than the test waits.
  std::ofstream(file) << "name = \"outlive\"\nhorizon = \"1000s\"\n[target]\nexec = [\"" + probes +
                             "/seam_probe_dynamic\", \"spin\", \"" + token + "\", \"" + as + "\"]\nport = 8080\n[[clients]]\n"
                             "name = \"c\"\nconnect_at = \"10ms\"\nrequests = [{ at = \"10ms\", path = \"/\" }]\n";
  pid_t loopsim = ::fork();
  if (loopsim == 0) {
    ::execl(LOOPSIM_BINARY, "loopsim", "run", file.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  REQUIRE(loopsim > 0);
  REQUIRE(loopsim::testing::eventually([&] { return running_with(token); }, std::chrono::seconds(5), std::chrono::milliseconds(50)));
  ::kill(loopsim, SIGKILL);
  int status = 0;
  ::waitpid(loopsim, &status, 0);
  CHECK(loopsim::testing::eventually([&] { return !running_with(token); }, std::chrono::seconds(2), std::chrono::milliseconds(20)));
}

namespace {

// A scenario running the probe's "starts WAY TOKEN": it starts a process by WAY, which stays.
sim::Scenario starting(const std::string& way, const std::string& token) {
  return sim::parse_scenario("name = \"starts\"\nhorizon = \"1s\"\n[target]\nexec = [\"" + probes +
                                 "/seam_probe_dynamic\", \"starts\", \"" + way + "\", \"" + token +
                                 "\"]\nport = 8080\nspin_limit = \"300ms\"\n[[clients]]\nname = \"c\"\nconnect_at = \"10ms\"\n",
                             "starts.toml");
}

// Whether no process with `token` on its command line is left, waited for up to 2 s: a process
// killed with SIGKILL is gone a moment later, not at once.
bool none_left_with(const std::string& token) {
  for (int i = 0; i < 100; ++i) {
    if (!running_with(token)) return true;
    ::usleep(20'000);
  }
  return false;
}

}  // namespace

TEST_CASE("seam: every way to start a process is served or refused by name, and none is left running") {
  // Only glibc's fork() was refused once: vfork, posix_spawn, system, popen, syscall(SYS_fork)
  // and clone started their child, which outlived loopsim with PPID 1. Now each child the seam
  // serves runs to its end as its call returns: one that stays is stopped at spin_limit, and
  // system's shell leaves its background sleep to the end of the target's process group.
  const auto [way, said] = GENERATE(table<std::string, std::string>(
      {{"fork", "the target called fork at 0.000 ms of virtual time: its child ran for longer than target.spin_limit"},
       {"vfork", "the target called vfork at 0.000 ms of virtual time: its child ran for longer than target.spin_limit"},
       {"posix_spawn", "the target called posix_spawn at 0.000 ms of virtual time: its child ran for longer"},
       {"popen", "the target called popen at 0.000 ms of virtual time: its child ran for longer"},
       {"system", "(no error)"},
       {"syscall-fork", "the target called syscall(SYS_fork) at 0.000 ms of virtual time: the target starts a process the seam cannot run to its end"},
       {"clone", "the target called clone at 0.000 ms of virtual time: the target starts a process the seam cannot run to its end"}}));
  INFO(way);
  const std::string token = "starts-token-" + way + "-" + std::to_string(::getpid());
  const std::string error = error_of(starting(way, token));
  CHECK(error.find(said == "(no error)" ? said : "starts.toml:4:8: " + said) == 0);
  CHECK(none_left_with(token));
}

TEST_CASE("seam: a process started by the program's own system call is trapped and refused by name") {
#if defined(__x86_64__)
  // The syscall instruction itself, in the program's code: it once passed every interposer, and
  // its child outlived the run until the target's process group was ended. The trap
  // (posix/interpose_trap.cpp) catches it before Linux sees it.
  const std::string token = "starts-token-raw-" + std::to_string(::getpid());
  const std::string error = error_of(starting("raw", token));
  CHECK(error.find("starts.toml:4:8: the target called fork (its own system call) at 0.000 ms of virtual time: the "
                   "target starts a process the seam cannot run to its end") == 0);
  CHECK(none_left_with(token));
#endif
}

TEST_CASE("seam: generate with a relative target program writes scenarios whose replay finds it") {
  std::string program = std::filesystem::relative(probes + "/seam_probe_dynamic").string();
  REQUIRE(program.find('/') != std::string::npos);
  std::string out = loopsim::testing::temp_path("gen-relative");
  auto found = loopsim::testing::run_loopsim("generate --runs 5 --json --out " + out + " --set 'target.exec=[\"" + program +
                                             "\", \"names\"]' --set target.port=8080", true);
  REQUIRE(found.status == 1);  // names accepts one client and ends: a failure to shrink
  std::string scenario = nlohmann::json::parse(found.output)["scenario"];
  CHECK(file_text(scenario).find("exec = [ '" + std::filesystem::absolute(program).lexically_normal().string()) != std::string::npos);
  CHECK(loopsim::testing::run_loopsim("run " + scenario).status == 1);  // not 2: the program is found
}

TEST_CASE("seam: a target that dies at start-up is an error naming its status and what it said") {
  std::string error = error_of(probe("fails-to-start"));
  CHECK(error.find("the target exited with status 1 at 0.0 ms of virtual time, before it listened on port 8080") != std::string::npos);
  CHECK(error.find("its last line on stderr: \"seam_probe: cannot read its configuration\"") != std::string::npos);
}

TEST_CASE("seam: an arm whose target cannot start is an error in its row, and the other arms keep their verdicts") {
  const std::string file = loopsim::testing::temp_path("needs-descriptors") + ".toml";
  {
    std::ofstream out(file);
    out << "name = \"needs\"\nhorizon = \"1s\"\n[target]\nexec = [\"" << probes
        << "/seam_probe_dynamic\", \"needs-descriptors\"]\nport = 8080\n[[clients]]\nname = \"c\"\n"
           "connect_at = \"10ms\"\n[[expect]]\nproperty = \"no_spin\"\n"
           "[[arms]]\nname = \"low-limit\"\nset = { \"kernel.rlimit_nofile\" = 36 }\n"
           "[[arms]]\nname = \"also-runs\"\nset = { \"kernel.rlimit_nofile\" = 512 }\n";
  }
  const auto run = run_loopsim("run " + file);
  INFO(run.output);
  CHECK(run.status == 2);
  CHECK(run.output.find("low-limit  -") != std::string::npos);
  CHECK(run.output.find("  base: held") != std::string::npos);
  CHECK(run.output.find("  also-runs: held") != std::string::npos);
  CHECK(run.output.find("  low-limit: ERROR: " + file + ":5:8: the target exited with status 71") != std::string::npos);
  CHECK(run.output.find("failed to set rlimit for open files") != std::string::npos);
  CHECK(run.output.find("verdict: error") != std::string::npos);
  CHECK(run_loopsim("run " + file + " --json", true).output.find("\"verdict\": \"error\"") != std::string::npos);
  const auto check = run_loopsim("check " + file);
  INFO(check.output);
  CHECK(check.status == 2);
  CHECK(check.output.find("3 arms: 2 held, 0 violated, 1 error") != std::string::npos);
}

TEST_CASE("seam: a target that exits mid-run is an event, in the stats, the table, the JSON and the timeline") {
  sim::RunResult r = sim::run(probe("dies"));
  REQUIRE(r.stats.exit_status);
  CHECK(*r.stats.exit_status == 3);
  CHECK(r.stats.exited_at == Instant{Duration(10'000'000)});
  CHECK(r.stats.last_stderr == "seam_probe: giving up after one connection");
  CHECK(jsonl(r.trace).find("{\"t\":10000000,\"ev\":\"process_exit\",\"status\":3}") != std::string::npos);
  std::string dir = loopsim::testing::temp_path("seam-dies");
  std::filesystem::create_directories(dir);
  std::string file = dir + "/dies.toml";
  std::ofstream(file) << "name = \"dies\"\nhorizon = \"1s\"\n[target]\nexec = [\"" + probes +
                             "/seam_probe_dynamic\", \"dies\"]\nport = 8080\n[[clients]]\nname = \"c\"\n"
                             "connect_at = \"10ms\"\nrequests = [{ at = \"10ms\", path = \"/\" }]\n"
                             "[[expect]]\nproperty = \"answered\"\n";
  loopsim::testing::Outcome table = loopsim::testing::run_loopsim("run " + file + " --timeline " + dir + "/t.dot");
  CHECK(table.status == 1);
  CHECK(table.output.find("the target exited with status 3 at 10.0 ms of virtual time, before the run's horizon "
                          "(its last line on stderr: \"seam_probe: giving up after one connection\")") != std::string::npos);
  CHECK(file_text(dir + "/t.dot").find("the process exited with status 3 at 10 ms") != std::string::npos);
  loopsim::testing::Outcome json = loopsim::testing::run_loopsim("run " + file + " --json", true);
  CHECK(json.output.find("\"exit\": {\n        \"status\": 3") != std::string::npos);
}

TEST_CASE("seam: a target's stdout and stderr keep their last target_output_max bytes, and say what was cut") {
  // The probe writes 3 MiB to each, then a last line to stderr. Before, each file took all.
  std::string prefix = loopsim::testing::temp_path("seam-chatty");
  sim::RunResult result = sim::run(loopsim::testing::writing_to(probe("chatty"), prefix));
  CHECK(result.stats.accepted == 1);
  for (const char* stream : {".base.stdout", ".base.stderr"}) {
    INFO(stream);
    const std::string text = file_text(prefix + stream);
    const std::size_t header = text.find('\n') + 1;
    CHECK(text.find("[loopsim: the target wrote ") == 0);
    CHECK(text.substr(0, header).find(" were cut, the last 1048576 follow]") != std::string::npos);
    CHECK(text.size() - header == sim::target_output_max);
  }
  CHECK(file_text(prefix + ".base.stderr").find("seam_probe: the last words\n") != std::string::npos);
}


TEST_CASE("seam: real and simulated descriptors never collide, clocks are virtual, io_uring is refused") {
  std::string prefix = loopsim::testing::temp_path("seam-names");
  sim::RunResult result = sim::run(loopsim::testing::writing_to(probe("names"), prefix));
  std::string out = file_text(prefix + ".base.stdout");
  INFO(out);
  CHECK(out.find("distinct 1") != std::string::npos);
  CHECK(out.find("monotonic 1000.000000000 realtime 1767225600") != std::string::npos);
  CHECK(out.find("real read 0") != std::string::npos);  // /dev/null, read for real
  CHECK(out.find("io_uring -1 ENOSYS") != std::string::npos);
  CHECK(out.find("after sleep 1001.000000000") != std::string::npos);  // one virtual second
  CHECK(result.stats.accepted == 1);
}

namespace {

// The probe's lines, without those that depend on CAP_SYS_RESOURCE.
std::vector<std::string> unprivileged_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("privileged ", 0) != 0 && line.rfind("errno after a blocking", 0) != 0) lines.push_back(line);
  }
  return lines;
}

}  // namespace

TEST_CASE("seam: fstat, the pipe size commands and the descriptor limit answer as Linux does") {
  // While the target sleeps or blocks, the engine writes errno = 77 on the same OS thread every
  // millisecond of virtual time (Seam::test_errno_variable), as a client's libc call would.
  ScopedEnvironment scribbler(posix::Seam::test_errno_variable, "77");
  const auto [native, simulated, result] = both_ways("calls");
  INFO("Linux:\n" << native << "the seam:\n" << simulated);
  CHECK(native.find("setpipe-4096-holding-10000 -1 EBUSY") != std::string::npos);  // the probe asked what it means to
  CHECK(unprivileged_lines(simulated) == unprivileged_lines(native));
  // The seam's process is never privileged: no pipe past pipe-max-size, no higher hard limit.
  CHECK(simulated.find("privileged setpipe-2MiB -1 EPERM") != std::string::npos);
  CHECK(simulated.find("privileged raise-hard -1 EPERM") != std::string::npos);
  // While the target blocked, the engine ran on the same OS thread and set errno; a call that
  // succeeds gives the program its own back (calls::served), after a sleep ("errno after a
  // sleep", compared above) and after a wait for a client.
  CHECK(simulated.find("errno after a sleep 4321") != std::string::npos);
  CHECK(simulated.find("errno after a blocking wait 4321") != std::string::npos);
  CHECK(result.stats.accepted == 1);
}

TEST_CASE("seam: a target's threads block and wake as Linux's do: barriers, semaphores, locks, futexes, timed waits") {
  const auto [native, simulated, result] = both_ways("sync");
  INFO("Linux:\n" << native << "the seam:\n" << simulated);
  CHECK(native.find("cond timedwait ETIMEDOUT, at least 1 s: 1") != std::string::npos);
  CHECK(simulated == native);
  (void)result;
}

TEST_CASE("seam: poll and select on pipes and socket pairs answer as Linux does") {
  const auto [native, simulated, result] = both_ways("polls");
  INFO("Linux:\n" << native << "the seam:\n" << simulated);
  CHECK(native.find("poll pair, other end shut -> 1 revents 0x2001") != std::string::npos);  // POLLIN | POLLRDHUP
  // A timeout below zero, or 10^9 ns, is refused (it used to wait forever on the seam).
  CHECK(native.find("ppoll with a negative timeout -1 EINVAL\nppoll with 10^9 ns -1 EINVAL\n"
                    "select with a negative timeout -1 EINVAL\npselect with a negative timeout -1 EINVAL") !=
        std::string::npos);
  CHECK(simulated == native);
  // Not a real sleep: the run's 350 ms passed in virtual time (native runs take them for real).
  CHECK(simulated.find("at least 350 ms: 1") != std::string::npos);
  (void)result;  // the probe listens only after its 100 ms poll, when the client has come and gone
}

TEST_CASE("seam: dup, dup2, dup3 and F_DUPFD share the open file as Linux does: its flags, bytes, epoll registrations and end") {
  for (const std::string& program : probe_builds()) {
    const auto [native, simulated, result] = both_ways("dups", 0, program);
    INFO(program << "\nLinux:\n" << native << "the seam:\n" << simulated);
    CHECK(native.find("the original is nonblocking: 1\nread on the original, nothing there -1 EAGAIN") != std::string::npos);
    CHECK(native.find("epoll_wait 1 data 7 events 0x1\nepoll_ctl MOD through the copy -1 ENOENT") != std::string::npos);
    CHECK(native.find("epoll_ctl DEL through the closed number -1 EBADF") != std::string::npos);
    CHECK(native.find("the peer reads, one descriptor left -1 EAGAIN\nclose the high copy 0 ok\nthe peer reads, none left 0 ok") !=
          std::string::npos);
    CHECK(simulated == native);
    (void)result;
  }
}

TEST_CASE("seam: sendmsg and recvmsg without ancillary data, and MSG_PEEK, answer as Linux does") {
  const auto [native, simulated, result] = both_ways("msgs");
  INFO("Linux:\n" << native << "the seam:\n" << simulated);
  CHECK(native.find("recvmsg 5 [he][llo] namelen 0 controllen 0 flags 0") != std::string::npos);
  CHECK(native.find("peeked [pe]\nrecvmsg MSG_PEEK 4 ok\nrecv 4 ok\nthen read [peek]") != std::string::npos);
  CHECK(native.find("recv MSG_PEEK on a pipe -1 ENOTSOCK") != std::string::npos);
  CHECK(simulated == native);
  CHECK(result.stats.accepted == 1);
}

TEST_CASE("seam: sendfile from a real file onto a simulated socket answers as Linux does, splice falls back") {
  const auto [native, simulated, result] = both_ways("files");
  INFO("Linux:\n" << native << "the seam:\n" << simulated);
  CHECK(native.find("got [23456] offset now 7 position 0") != std::string::npos);
  CHECK(native.find("sendfile from a socket -1 EINVAL") != std::string::npos);
  auto without_splice = [](const std::string& text) { return text.substr(0, text.find("splice ")); };
  CHECK(without_splice(simulated) == without_splice(native));
  CHECK(native.find("splice pair to pipe 4 ok") != std::string::npos);
  CHECK(simulated.find("splice pair to pipe -1 EINVAL") != std::string::npos);  // lighttpd copies instead
  CHECK(result.stats.accepted == 1);
}

TEST_CASE("seam: an fcntl command, an ioctl request or a socket type it does not serve is refused by its name") {
  CHECK(error_of(probe("fcntl-lease")).find("the target called fcntl(F_SETLEASE) on simulated descriptor") != std::string::npos);
  CHECK(error_of(probe("fioasync")).find("the target called ioctl(FIOASYNC) on simulated descriptor") != std::string::npos);
  CHECK(error_of(probe("raw-socket")).find("the target called socket(AF_INET, SOCK_RAW)") != std::string::npos);
  CHECK(error_of(probe("dup-watch")).find("the target called epoll_ctl(EPOLL_CTL_ADD) on simulated descriptor") !=
        std::string::npos);
}

TEST_CASE("seam: epoll_wait and futex given bad pointers fail EFAULT, as Linux says, not SIGSEGV in the seam") {
  const auto [native, simulated, result] = both_ways("bad-pointer");
  INFO("Linux:\n" << native << "the seam:\n" << simulated);
  CHECK(native == "futex wait at 8 -1 EFAULT\nfutex wait out of alignment -1 EINVAL\nfutex wait with a bad timeout -1 EFAULT\n");
  CHECK(simulated == native + "epoll_wait bad pointer -1 EFAULT\n");
  CHECK(result.stats.accepted == 1);  // the listener is still ready, and the next wait says so
}

TEST_CASE("seam: epoll_wait asked for INT_MAX events is EINVAL, as Linux says, not an allocation") {
  std::string prefix = loopsim::testing::temp_path("seam-intmax");
  sim::RunResult result = sim::run(loopsim::testing::writing_to(probe("wait-intmax"), prefix));
  std::string out = file_text(prefix + ".base.stdout");
  INFO(out);
  CHECK(out.find("epoll_wait INT_MAX -1 EINVAL") != std::string::npos);
  CHECK(result.stats.accepted == 1);
}

TEST_CASE("seam: Python's asyncio runs: its socketpair self-pipe, its wakeup fd, and 100 failing accepts per EMFILE") {
  sim::Scenario s = sim::load_scenario(source + "/examples/python/py-asyncio.toml");
  sim::RunResult r = sim::run(s);
  std::vector<checker::Verdict> verdicts = checker::evaluate(r.trace, s.expect, {});
  REQUIRE(verdicts.size() == 3);
  for (const checker::Verdict& v : verdicts) {
    INFO(v.property << " " << v.detail);
    CHECK(v.held);
  }
  CHECK(r.stats.answered == 6);
  CHECK(verdicts[1].measured >= 1000.0);  // ms: ACCEPT_RETRY_DELAY, 1 s
  // CPython 3.11 goes on calling accept() after EMFILE, up to its backlog argument.
  const std::string text = jsonl(r.trace);
  std::size_t emfile = 0;
  for (std::size_t at = text.find("\"outcome\":\"EMFILE\""); at != std::string::npos;
       at = text.find("\"outcome\":\"EMFILE\"", at + 1)) {
    ++emfile;
  }
  CHECK(emfile == 100);
  CHECK(verdicts[2].measured == 100);
}

TEST_CASE("seam: a target's trace renders as a pass timeline and a Chrome trace") {
  std::string out = loopsim::testing::temp_path("seam-render");
  std::filesystem::create_directories(out);
  auto run = loopsim::testing::run_loopsim("run " + source + "/examples/libevent/ev-burst.toml --arm one-accept-per-event"
                                           " --trace " + out + "/ev.jsonl --timeline " + out + "/ev.dot --chrome-trace " + out +
                                           "/ev.json", true);
  REQUIRE(run.status == 0);
  std::string dot = file_text(out + "/ev.dot");
  CHECK(dot.find("ev-burst") != std::string::npos);
  CHECK(dot.find("pass 5") != std::string::npos);             // the five waits
  CHECK(dot.find("still waiting") != std::string::npos);       // the last wait, blocked at the end
  CHECK(file_text(out + "/ev.json").find("\"traceEvents\"") != std::string::npos);
  CHECK(std::filesystem::exists(out + "/ev.one-accept-per-event.stderr"));  // beside the trace
}

TEST_CASE("seam: the explorer searches a target, and its counterexample replays") {
  std::string out = loopsim::testing::temp_path("seam-explore");
  auto found = loopsim::testing::run_loopsim(
      "explore " + source + "/examples/libevent/ev-burst.toml --arm one-accept-per-event --depth 6 --out " + out, true);
  REQUIRE(found.status == 1);
  std::string cex = out + "/ev-burst-one-accept-per-event-counterexample.toml";
  REQUIRE(std::filesystem::exists(cex));
  CHECK(loopsim::testing::run_loopsim("run " + cex, true).status == 1);
  auto clean = loopsim::testing::run_loopsim("explore " + source + "/examples/libevent/ev-burst.toml --depth 8", true);
  CHECK(clean.status == 0);  // the fixed variant: nothing found, exhaustively within the depth
}

TEST_CASE("seam: generate draws workloads for a target, finds the strand, and the fixed variant holds") {
  std::string out = loopsim::testing::temp_path("seam-generate");
  std::string target = " --set target.port=8080 --set 'target.exec=[\"ev_http\",\"--port\",\"8080\"";
  auto found = loopsim::testing::run_loopsim("generate --runs 30 --seed 1 --out " + out + target + "]'", true);
  REQUIRE(found.status == 1);
  CHECK(found.output.find("answered") != std::string::npos);
  std::string written;
  for (const auto& entry : std::filesystem::directory_iterator(out)) {
    std::string name = entry.path().string();
    if (name.ends_with(".toml") && name.find("-original") == std::string::npos) written = name;
  }
  REQUIRE(!written.empty());
  CHECK(file_text(written).find("[target]") != std::string::npos);
  CHECK(file_text(written).find("[loop]") == std::string::npos);  // a target draws no loop knobs
  CHECK(loopsim::testing::run_loopsim("run " + written, true).status == 1);
  auto fixed = loopsim::testing::run_loopsim("generate --runs 30 --seed 1" + target + ",\"--fixed\"]'", true);
  CHECK(fixed.status == 0);
}

#endif
