// A declared type whose members can be moved, added or listed twice, one variant per macro. Only
// the plain program compiles: realloop/state_order_test.cpp compiles each variant and says which.
#include <cstdint>

#include "realloop/state.hpp"

struct Socket {
#if defined(SWAPPED)
  // The two members moved past each other, the declaration left as it was: before the
  // declaration named its members, `generation` was digested under `fd`'s policy and `fd`
  // was skipped, so two sockets differing only in `fd` digested alike.
  std::int64_t generation = 0;
  std::int64_t fd = -1;
#else
  std::int64_t fd = -1;
  std::int64_t generation = 0;  // only names things: skipped
#endif
#if defined(ADDED)
  bool closing = false;  // a member with no entry
#endif
#if defined(TWICE)
  static constexpr auto state_fields =
      loopsim::state::fields(loopsim::state::f::value<&Socket::fd>, loopsim::state::f::value<&Socket::fd>);
#else
  static constexpr auto state_fields =
      loopsim::state::fields(loopsim::state::f::value<&Socket::fd>, loopsim::state::f::skip<&Socket::generation>);
#endif
};

int main() {
  Socket a, b;
  b.fd = 7;
  std::uint64_t da = 0, db = 0;
  loopsim::state::visit([&da](std::int64_t v) { da = loopsim::state::fold(da, std::uint64_t(v)); }, a,
                        loopsim::Instant{});
  loopsim::state::visit([&db](std::int64_t v) { db = loopsim::state::fold(db, std::uint64_t(v)); }, b,
                        loopsim::Instant{});
  return da != db ? 0 : 1;
}
