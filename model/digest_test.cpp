// A digest is XXH3 of the sequence of values fed to it, whatever the length: the blocks it
// hashes as it goes give the value one call over the whole sequence gives.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "model/digest.hpp"

using loopsim::model::Digest;

TEST_CASE("digest: the value is XXH3 of the whole sequence, across any number of blocks") {
  for (std::size_t length : {0, 1, 63, 64, 65, 128, 1000}) {
    std::vector<std::int64_t> values;
    Digest digest;
    for (std::size_t i = 0; i < length; ++i) {
      values.push_back(std::int64_t(i * 0x9e3779b97f4a7c15ULL));
      digest.add(values.back());
    }
    INFO("length " << length);
    CHECK(digest.value() == XXH3_64bits(values.data(), values.size() * sizeof(std::int64_t)));
    CHECK(digest.value() == digest.value());  // reading it changes nothing
  }
}

TEST_CASE("digest: clear starts again, and strings are fed by length and 8-byte chunks") {
  Digest a, b;
  a.add(std::int64_t{7}).add(std::int64_t{8});
  a.clear();
  a.add(std::string_view("abcdefghi"));
  b.add(std::int64_t{9}).add(std::int64_t{0x6867666564636261}).add(std::int64_t{'i'});
  CHECK(a.value() == b.value());
}
