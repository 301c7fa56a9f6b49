// A state digest: fields fed in a fixed order, hashed with XXH3. Equal sequences give equal
// digests. The values are gathered in blocks of 64 and each block hashed in one streaming call
// (a streaming update per 8-byte field costs several times the hash itself): the value is
// XXH3's of the whole sequence, as one call over it would give, with no heap. A digest lives
// where it is taken, on a stack: a buffer kept in the world would be copied into every snapshot
// a search takes of it.
#pragma once

#ifndef XXH_STATIC_LINKING_ONLY
#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t's size, to keep it here
#endif
#include <xxhash.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "realloop/kernel.hpp"

namespace loopsim::model {

class Digest {
 public:
  Digest() { clear(); }
  Digest(const Digest&) = delete;
  Digest& operator=(const Digest&) = delete;

  Digest& add(std::int64_t value) {
    if (count_ == block) flush();
    values_[count_++] = value;
    return *this;
  }
  Digest& add(Duration value) { return add(std::int64_t(value.count())); }
  Digest& add(std::string_view bytes) {
    add(std::int64_t(bytes.size()));
    for (std::size_t at = 0; at < bytes.size(); at += 8) {
      std::int64_t chunk = 0;
      std::memcpy(&chunk, bytes.data() + at, std::min<std::size_t>(8, bytes.size() - at));
      add(chunk);
    }
    return *this;
  }
  // Starts again.
  void clear() {
    XXH3_64bits_reset(&state_);
    count_ = 0;
  }
  // The digest of everything added so far.
  std::uint64_t value() const {
    flush();
    return XXH3_64bits_digest(&state_);
  }

 private:
  static constexpr std::size_t block = 64;
  void flush() const {
    XXH3_64bits_update(&state_, values_, count_ * sizeof(std::int64_t));
    count_ = 0;
  }
  // A digest's value is read without changing what it is: the values in hand go into the
  // hash's state, which holds them as well.
  mutable XXH3_state_t state_;
  mutable std::int64_t values_[block];
  mutable std::size_t count_ = 0;
};

}  // namespace loopsim::model
