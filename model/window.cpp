#include "model/window.hpp"

#include "base/assert.hpp"
#include "model/choice.hpp"

namespace loopsim::model {

Instant draw_instant(const Window& window, std::uint64_t seed, std::uint64_t salt) {
  LOOPSIM_ASSERT(window.lo <= window.hi);
  if (window.fixed()) return window.lo;
  std::uint64_t state = seed ^ (0x9fb21c651e98df25ull * (salt + 1));
  std::uint64_t span = std::uint64_t((window.hi - window.lo).count()) + 1;
  // Rejection sampling: no modulo bias.
  std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % span);
  std::uint64_t x = splitmix64(state);
  while (x >= limit) x = splitmix64(state);
  return window.lo + Duration(std::int64_t(x % span));
}

}  // namespace loopsim::model
