// A state digest: fields fed in a fixed order into XXH3. Equal sequences give equal digests.
#pragma once

#include <xxhash.h>

#include <cstdint>
#include <string_view>

#include "realloop/kernel.hpp"

namespace loopsim::model {

class Digest {
 public:
  Digest() : state_(XXH3_createState()) { XXH3_64bits_reset(state_); }
  Digest(const Digest&) = delete;
  Digest& operator=(const Digest&) = delete;
  ~Digest() { XXH3_freeState(state_); }

  Digest& add(std::int64_t value) {
    XXH3_64bits_update(state_, &value, sizeof value);
    return *this;
  }
  Digest& add(Nanos value) { return add(std::int64_t(value.count())); }
  Digest& add(std::string_view bytes) {
    add(std::int64_t(bytes.size()));
    XXH3_64bits_update(state_, bytes.data(), bytes.size());
    return *this;
  }
  std::uint64_t value() const { return XXH3_64bits_digest(state_); }

 private:
  XXH3_state_t* state_;
};

}  // namespace loopsim::model
