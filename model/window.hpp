// A time window: a happening that occurs at some instant in [lo, hi] (lo == hi: at that instant).
// A scenario writes one as "A..B". A run draws its instant from the seed (draw_instant); a search
// tries every placement the server can tell apart (model::Scheduler's windowed happenings).
#pragma once

#include <cstdint>

#include "realloop/kernel.hpp"

namespace loopsim::model {

struct Window {
  Instant lo{};
  Instant hi{};
  bool fixed() const { return lo == hi; }
  Window shifted(Duration by) const { return Window{lo + by, hi + by}; }
  friend bool operator==(const Window&, const Window&) = default;
};

inline Window at_instant(Instant t) { return Window{t, t}; }

// One instant of `window`, drawn uniformly from `seed` and `salt` (which names the happening, so
// that every happening has a stream of its own): integer arithmetic only, the same everywhere.
Instant draw_instant(const Window& window, std::uint64_t seed, std::uint64_t salt);

}  // namespace loopsim::model
