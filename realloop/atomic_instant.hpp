// An optional Instant that other threads read: the loop's shutdown request and the start of
// its pass. std::atomic<std::optional<Instant>> would take a lock; this is one lock-free
// integer, and "none" is its business alone.
#pragma once

#include <atomic>
#include <climits>
#include <cstdint>
#include <optional>

#include "realloop/kernel.hpp"

namespace loopsim {

class AtomicInstant {
 public:
  std::optional<Instant> load(std::memory_order order = std::memory_order_acquire) const {
    const std::int64_t ns = ns_.load(order);
    if (ns == none) return std::nullopt;
    return Instant(Duration(ns));
  }
  void store(std::optional<Instant> t, std::memory_order order = std::memory_order_release) {
    ns_.store(t ? t->time_since_epoch().count() : none, order);
  }
  // Sets `t` if nothing is set yet; whether it did.
  bool set_if_none(Instant t, std::memory_order order = std::memory_order_acq_rel) {
    std::int64_t expected = none;
    return ns_.compare_exchange_strong(expected, t.time_since_epoch().count(), order);
  }

 private:
  static constexpr std::int64_t none = INT64_MIN;  // no Instant is this far before the epoch
  std::atomic<std::int64_t> ns_{none};
};

}  // namespace loopsim
