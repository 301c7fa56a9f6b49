// base::Text and base::IntList: in place while small, on the heap beyond, and alike either way.
#include <catch2/catch.hpp>

#include <string>
#include <utility>

#include "base/compact.hpp"

using loopsim::base::IntList;
using loopsim::base::Text;

TEST_CASE("compact: a text keeps up to 15 bytes in place, more on the heap, and reads alike") {
  const std::string fifteen(15, 'a');
  const std::string sixteen = fifteen + "b";
  Text small(fifteen);
  Text large(sixteen);
  CHECK(small.heap_block() == nullptr);
  CHECK(large.heap_block() != nullptr);
  CHECK(small == fifteen);
  CHECK(large == sixteen);
  CHECK(small.size() == 15);
  CHECK(large.size() == 16);
  CHECK(Text().empty());
  CHECK(Text("") == "");
  const std::string zeros("\0\x80\xff", 3);  // bytes, not C strings
  CHECK(Text(zeros).str() == zeros);
  CHECK("GET " + large == "GET " + sixteen);
  CHECK(small + "/" == fifteen + "/");
}

TEST_CASE("compact: a text's copies are its own, and a move leaves the source empty") {
  Text a(std::string(40, 'x'));
  Text b = a;
  CHECK(b == a);
  CHECK(b.heap_block() != a.heap_block());
  Text c = std::move(a);
  CHECK(c == std::string(40, 'x'));
  CHECK(a.empty());  // NOLINT: moved from, and empty as documented
  b = Text("short");
  CHECK(b == "short");
  CHECK(b.heap_block() == nullptr);
  b = c;
  CHECK(b == c);
  const Text& same = b;
  b = same;  // self-assignment keeps the bytes
  CHECK(b == c);
}

TEST_CASE("compact: an int list keeps two in place, grows on the heap, and comes back in place") {
  IntList list;
  CHECK(list.empty());
  list.push_back(4);
  list.push_back(5);
  CHECK(list.heap_block() == nullptr);
  for (int fd = 6; fd < 40; ++fd) list.push_back(fd);
  CHECK(list.heap_block() != nullptr);
  REQUIRE(list.size() == 36);
  for (std::size_t i = 0; i < list.size(); ++i) CHECK(list[i] == int(i) + 4);
  IntList copy = list;
  CHECK(copy == list);
  CHECK(copy.heap_block() != list.heap_block());
  for (int fd = 4; fd < 38; ++fd) CHECK(list.erase(fd) == 1);
  CHECK(list.erase(100) == 0);
  CHECK(list == IntList{38, 39});
  CHECK(list.heap_block() == nullptr);  // back in place
  CHECK(copy.size() == 36);            // the copy untouched
  IntList moved = std::move(copy);
  CHECK(moved.size() == 36);
  CHECK(copy.empty());  // NOLINT: moved from
  IntList repeats{7, 1, 7, 7};
  CHECK(repeats.erase(7) == 3);
  CHECK(repeats == IntList{1});
}
