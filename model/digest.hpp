// A state digest: fields fed in a fixed order, hashed with XXH3 at the end. Equal sequences
// give equal digests. The values are gathered and hashed in one call: a streaming update per
// 8-byte field costs several times the hash itself.
#pragma once

#include <xxhash.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "realloop/kernel.hpp"

namespace loopsim::model {

class Digest {
 public:
  Digest() { values_.reserve(64); }
  Digest(const Digest&) = delete;
  Digest& operator=(const Digest&) = delete;

  Digest& add(std::int64_t value) {
    values_.push_back(value);
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
  // Starts again, keeping the buffer: a digest taken at every step allocates once.
  void clear() { values_.clear(); }
  std::uint64_t value() const {
    return XXH3_64bits(values_.data(), values_.size() * sizeof(std::int64_t));
  }

 private:
  std::vector<std::int64_t> values_;
};

}  // namespace loopsim::model
