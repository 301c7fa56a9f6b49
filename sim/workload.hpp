// What a [[clients]] group sends, apart from who carries it: the requests' bytes, the answers'
// framing, the connection times, the paths a mix draws. The simulated clients (sim/clients.cpp)
// and the live probe (probe/) both take them from here, so that one scenario is the same
// workload in both, draw for draw.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sim/scenario.hpp"

namespace loopsim::sim {

// One request of `group` for `path`, as bytes; `close` asks Connection: close.
std::string request_text(const std::string& path, bool close, const ClientGroup& group);

// One answer at the front of `input` (framed by its Content-Length): its length, with its status
// in `status`, or 0 while it is incomplete.
std::size_t parse_answer(std::string_view input, int& status);

// The connection times of a group's members, in member order: evenly spaced at `rate`, or a
// Poisson process at `rate` (exponential gaps drawn from the seed), from connect_at, where the
// first member connects.
class Arrivals {
 public:
  Arrivals(const ClientGroup& group, std::uint64_t seed, std::int32_t group_index);
  Nanos next(int member);

 private:
  const ClientGroup& group_;
  std::uint64_t state_;
  double elapsed_ = 0;  // nanoseconds since connect_at
};

// The requests a client of `group` sends at most: its script's, or a closed loop's count
// (SIZE_MAX when only a duration bounds it).
std::size_t request_limit(const ClientGroup& group);

// The state of client `client`'s path draws (0 when its group has no mix to draw from).
std::uint64_t path_draws(const ClientGroup& group, std::uint64_t seed, std::int32_t client);

// A closed loop's next path: `path`, or one drawn from `paths` by weight, advancing `draws`.
const std::string& next_path(const ClientGroup& group, std::uint64_t& draws);

}  // namespace loopsim::sim
