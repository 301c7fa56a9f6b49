// Sockets beyond IPv4 TCP (posix/seam.cpp): an IPv6 listener compared with Linux by running the
// probe both ways, a UDP socket into a network where no one answers, and a CPU-time timer.
#include <catch2/catch.hpp>

#include <string>

#include "posix/probe_for_tests.hpp"
#include "sim/world.hpp"

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

TEST_CASE("seam: a UDP socket sends whole datagrams to no one, and none comes back") {
  const std::string prefix = temp_path("seam-datagrams");
  sim::set_target_output(prefix);
  const sim::RunResult result = sim::run(probe("datagrams"));
  sim::set_target_output("");
  CHECK(file_text(prefix + ".base.stdout") ==
        "SO_TYPE SOCK_DGRAM\nsend before connect -1 EDESTADDRREQ\nsendto 5 ok\nconnect 0 ok\nsend 5 ok\n"
        "recv -1 EAGAIN\nlisten -1 EOPNOTSUPP\npeer port 53\n");
  CHECK(result.stats.accepted == 1);
}

#endif  // LOOPSIM_SEAM_BUILT
