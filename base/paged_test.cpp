// base::Paged: a table that grows a page at a time, whose elements never move.
#include <catch2/catch.hpp>

#include <string>

#include "base/paged.hpp"

using loopsim::base::Paged;

TEST_CASE("paged: a table grows and shrinks by resize, its elements stay put, and copies are deep") {
  Paged<std::string, 4> table;
  CHECK(table.empty());
  table.resize(3);
  table[0] = "a";
  const std::string* first = &table[0];
  table.resize(1000);  // many pages later, the first element has not moved
  CHECK(&table[0] == first);
  CHECK(table[0] == "a");
  CHECK(table[999].empty());
  table[999] = "z";
  Paged<std::string, 4> copy = table;
  CHECK(copy.size() == 1000);
  CHECK(copy[999] == "z");
  CHECK(&copy[0] != &table[0]);
  table.resize(2);  // what is beyond goes back to T{}, and comes back as T{}
  table.resize(1000);
  CHECK(table[999].empty());
  CHECK(copy[999] == "z");
  std::size_t count = 0;
  for (const std::string& s : copy) count += s.empty() ? 0 : 1;
  CHECK(count == 2);
}
