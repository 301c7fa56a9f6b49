// Sockets beyond IPv4 TCP (posix/seam.cpp): an IPv6 listener compared with Linux by running the
// probe both ways, a UDP socket into a network where no one answers, and a CPU-time timer. And
// the program's own entropy, which replays with the run's seed.
#include <catch2/catch.hpp>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "posix/probe_for_tests.hpp"
#include "sim/world.hpp"
#include "target/run.hpp"

#ifdef LOOPSIM_SEAM_BUILT

using namespace loopsim;
using namespace loopsim::testing;

TEST_CASE("seam: an IPv6 listener and a CPU-time timer answer as Linux's do") {
  const auto [native, simulated, result] = both_ways("families");
  INFO("Linux:\n" << native << "the seam:\n" << simulated);
  CHECK(native.find("IPV6_V6ONLY at first 0\nset IPV6_V6ONLY 0 ok\nbind [::]:18089 0 ok\n"
                    "set IPV6_V6ONLY after bind -1 EINVAL\nlisten 0 ok\nname family AF_INET6 [::]:18089 length 28\n"
                    "SO_DOMAIN AF_INET6\nbind an IPv4 address to an IPv6 socket -1 EINVAL\n"
                    "IPV6_V6ONLY on an IPv4 socket -1 ENOPROTOOPT\n") == 0);
  CHECK(native.find("left after a sleep, to the tenth: 10 tenths\n") != std::string::npos);
  CHECK(simulated == native);
  CHECK(result.stats.accepted == 1);
}

// K11 at the seam: SO_SNDBUF passes on the connection's buffer as it stands (the kernel's rule is
// tested in model/sim_kernel_test.cpp). Not compared with Linux: on loopback Linux has grown the
// buffer as the connection was set up (docs/design.md, K11).
TEST_CASE("seam: SO_SNDBUF says the send buffer autotuning grew at the first write that would be short") {
  const std::string grows = temp_path("seam-sndbuf");
  sim::run(loopsim::testing::writing_to(probe("sndbuf"), grows));
  CHECK(file_text(grows + ".base.stdout") ==
        "SO_SNDBUF at accept 16384\na write of 1 MiB took 1048576, SO_SNDBUF after 4194304\n");
  const std::string fixed = temp_path("seam-sndbuf-fixed");
  sim::run(loopsim::testing::writing_to(probe("sndbuf", "seam_probe_dynamic", "[kernel]\nsend_buffer_max = 0\n"), fixed));
  CHECK(file_text(fixed + ".base.stdout") == "SO_SNDBUF at accept 16384\na write of 1 MiB took 16384, SO_SNDBUF after 16384\n");
}

TEST_CASE("seam: a UDP socket sends whole datagrams to no one, and none comes back") {
  const std::string prefix = temp_path("seam-datagrams");
  const sim::RunResult result = sim::run(loopsim::testing::writing_to(probe("datagrams"), prefix));
  CHECK(file_text(prefix + ".base.stdout") ==
        "SO_TYPE SOCK_DGRAM\nsend before connect -1 EDESTADDRREQ\nsendto 5 ok\nconnect 0 ok\nsend 5 ok\n"
        "recv -1 EAGAIN\nlisten -1 EOPNOTSUPP\npeer port 53\n");
  CHECK(result.stats.accepted == 1);
}

TEST_CASE("seam: loopsim run --trace F writes the target's output beside F, and two runs do not share it") {
  // Where the output goes is the run's, not the process's: a run without --trace writes it to
  // out/targets/, whatever an earlier run in the same process said.
  const std::string folder = temp_path("seam-output-beside");
  std::filesystem::create_directories(folder);
  const std::string scenario = folder + "/probe.toml";
  std::ofstream(scenario) << "name = \"probe\"\nhorizon = \"3s\"\n[target]\nexec = [\"" << probes
                          << "/seam_probe_dynamic\", \"datagrams\"]\nport = 8080\n[[clients]]\nname = \"c\"\n"
                             "connect_at = \"10ms\"\nrequests = [{ at = \"10ms\", path = \"/\" }]\n";
  const Outcome traced = run_loopsim("run " + scenario + " --trace " + folder + "/t.jsonl");
  INFO(traced.output);
  CHECK(traced.status == 0);
  CHECK(file_text(folder + "/t.base.stdout").find("SO_TYPE SOCK_DGRAM\n") == 0);

  const std::string first = temp_path("seam-output-first"), second = temp_path("seam-output-second");
  sim::run(writing_to(probe("datagrams"), first));
  sim::run(writing_to(probe("datagrams"), second));
  CHECK(file_text(first + ".base.stdout") == file_text(second + ".base.stdout"));
  CHECK(!file_text(second + ".base.stdout").empty());
}

namespace {
std::string entropy_with_seed(std::uint64_t seed) {
  const std::string prefix = temp_path("seam-entropy-" + std::to_string(seed));
  sim::Scenario scenario = probe("entropy");
  scenario.seed = seed;
  sim::run(loopsim::testing::writing_to(scenario, prefix));
  return file_text(prefix + ".base.stdout");
}
}  // namespace

TEST_CASE("seam: getrandom, getentropy and the addresses replay with the seed") {
  const std::string first = entropy_with_seed(1);
  INFO(first);
  CHECK(first.find("getrandom 16\nbytes ") == 0);
  CHECK(first.find("getentropy 0\n") != std::string::npos);
  CHECK(first.find("syscall 16\n") != std::string::npos);
  CHECK(entropy_with_seed(1) == first);  // the bytes and the heap's and stack's addresses
  const std::string other = entropy_with_seed(2);
  CHECK(other.substr(0, other.find("heap")) != first.substr(0, first.find("heap")));
}

TEST_CASE("seam: a file closed by fclose, unseen, is let go when its number comes back") {
  // glibc's fclose closes with its own call: the seam still held the number, and the next
  // simulated descriptor's placeholder, given that number, failed an assertion (tinyproxy's
  // pid file). 50 such files under a limit of 16 also show that each one's descriptor is let go.
  const std::string prefix = temp_path("seam-fclosed");
  const sim::RunResult result = sim::run(loopsim::testing::writing_to(probe("fclosed", "seam_probe_dynamic", "[kernel]\nrlimit_nofile = 16\n"), prefix));
  CHECK(file_text(prefix + ".base.stdout") == "listening\n");
  CHECK(result.stats.accepted == 1);
}

TEST_CASE("seam: a target's windows are drawn from the run's seed, not the file's") {
  // The target's process was sent the file's text, whose seed is the file's: --seed changed
  // nothing a target's process draws.
  auto first_connect = [](std::uint64_t seed) {
    sim::Scenario scenario = sim::parse_scenario(
        "name = \"windows\"\nseed = 1\nhorizon = \"1s\"\n[target]\nexec = [\"" + probes +
            "/seam_probe_dynamic\", \"names\"]\nport = 8080\n[[clients]]\nname = \"c\"\nconnect_at = \"10ms..100ms\"\n",
        "windows.toml");
    scenario.seed = seed;
    const std::string trace = jsonl(sim::run(scenario).trace);
    const std::size_t at = trace.find("\"ev\":\"connect\"");
    REQUIRE(at != std::string::npos);
    return trace.substr(trace.rfind("{\"t\":", at), at - trace.rfind("{\"t\":", at));
  };
  CHECK(first_connect(1) == first_connect(1));
  CHECK(first_connect(1) != first_connect(2));
}

TEST_CASE("seam: a server whose system calls are its own, never libc's, is served by the trap as Linux answers") {
#if defined(__x86_64__)
  // Every call a `syscall` instruction in the program's code: without the trap it would listen on
  // Linux's port 8080, and the run would end "never listened".
  const auto [native, simulated, result] = both_ways("raw");
  INFO("Linux:\n" << native << "the seam:\n" << simulated);
  const std::string common =
      "socket ok\nsetsockopt ok\nbind ok\nlisten ok\naccept before a client EAGAIN\nread a bad descriptor EBADF\n"
      "rt_sigaction SIGSYS ok\nrt_sigaction with a bad size EINVAL\nrt_sigprocmask's old set at address 8 EFAULT\n"
      "rt_sigpending at address 8 EFAULT\ngetrandom at address 8 EFAULT\nclone3 at address 8 EFAULT\n"
      "syscall(SYS_getrandom) at address 8 EFAULT\nsyscall(SYS_clone3) at address 8 EFAULT\n";
  CHECK(native == common);
  CHECK(simulated == common + "accepted after 9 ms of virtual time\nread 52 bytes\nwrite ok\nclose ok\nSIGSYS caught 0\n");
  CHECK(result.stats.accepted == 1);
  CHECK(result.stats.answered == 1);
  CHECK(result.stats.exit_status == 0);  // its exit_group, served as _exit
#endif
}

TEST_CASE("seam: a program that listens on the machine's own port past the seam is stopped at once, saying so") {
#if defined(__x86_64__)
  // The same server without the trap (LOOPSIM_TRAP=off): its own bind and listen reach Linux,
  // and its socket on the scenario's port is seen from /proc within a tick (it used to be found
  // only as 120 s of silence).
  ::setenv("LOOPSIM_TRAP", "off", 1);
  const std::string error = error_of(probe("raw"));
  ::unsetenv("LOOPSIM_TRAP");
  CHECK(error.find("it holds a socket of the machine's own, listening on port 8080: a bind, listen or connect that "
                   "reached Linux past the seam") != std::string::npos);
#endif
}

TEST_CASE("real_socket_on finds a process's own socket on a port, by /proc/net and its descriptors") {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(listener >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // port 0: one the machine has free
  REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  socklen_t length = sizeof address;
  REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  const int port = ntohs(address.sin_port);
  CHECK(loopsim::sim::real_socket_on(::getpid(), port).empty());  // Linux lists a TCP socket once it listens
  REQUIRE(::listen(listener, 1) == 0);
  CHECK(loopsim::sim::real_socket_on(::getpid(), port) == "listening");
  CHECK(loopsim::sim::real_socket_on(::getppid(), port).empty());  // another process's: not it
  ::close(listener);
  CHECK(loopsim::sim::real_socket_on(::getpid(), port).empty());
  // A UDP socket is listed once bound.
  const int datagrams = ::socket(AF_INET, SOCK_DGRAM, 0);
  REQUIRE(datagrams >= 0);
  address.sin_port = 0;
  REQUIRE(::bind(datagrams, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  length = sizeof address;
  REQUIRE(::getsockname(datagrams, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  CHECK(loopsim::sim::real_socket_on(::getpid(), ntohs(address.sin_port)) == "bound");
  ::close(datagrams);
}

#endif  // LOOPSIM_SEAM_BUILT
