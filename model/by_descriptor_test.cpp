// The table a poller keeps its interest list in (model/by_descriptor.hpp): a std::map's answers,
// read in the same order, and digested alike.
#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <vector>

#include "model/by_descriptor.hpp"
#include "realloop/state.hpp"

using namespace loopsim;

namespace {

struct Item {
  std::uint32_t events = 0;
  bool queued = false;
  static constexpr auto state_fields = state::fields(state::f::value<&Item::events>, state::f::value<&Item::queued>);
};

struct WithMap {
  std::map<int, Item> items;
  static constexpr auto state_fields = state::fields(state::f::value<&WithMap::items>);
};

struct WithTable {
  model::ByDescriptor<Item> items;
  static constexpr auto state_fields = state::fields(state::f::value<&WithTable::items>);
};

template <class T>
std::vector<std::int64_t> values(const T& object) {
  std::vector<std::int64_t> out;
  state::visit([&](std::int64_t v) { out.push_back(v); }, object, Instant{});
  return out;
}

}  // namespace

TEST_CASE("by descriptor: a std::map's answers, in descriptor order, digested as the map was") {
  WithMap map;
  WithTable table;
  // The same operations on both, in an order that leaves holes and moves the highest number.
  const int added[] = {7, 3, 12, 5, 0, 9};
  for (int fd : added) {
    const Item item{std::uint32_t(fd * 3 + 1), fd % 2 == 0};
    const bool fresh_map = map.items.try_emplace(fd, item).second;
    const bool fresh_table = table.items.try_emplace(fd, item).second;
    CHECK(fresh_map == fresh_table);
  }
  CHECK_FALSE(table.items.try_emplace(3, Item{99, true}).second);  // one was there, left as it was
  CHECK(table.items.at(3).events == 10);
  CHECK(values(table) == values(map));
  CHECK(table.items.erase(12));
  map.items.erase(12);
  CHECK_FALSE(table.items.erase(12));
  CHECK_FALSE(table.items.erase(4));
  CHECK(table.items.find(-1) == nullptr);
  CHECK(table.items.find(1000) == nullptr);
  table.items.at(9).queued = true;
  map.items.at(9).queued = true;
  CHECK(values(table) == values(map));
  std::vector<int> order;
  for (const auto& [fd, item] : table.items) order.push_back(fd);
  CHECK(order == std::vector<int>{0, 3, 5, 7, 9});
  CHECK(table.items.size() == 5);
  for (int fd : order) CHECK(table.items.erase(fd));
  CHECK(table.items.empty());
  CHECK(table.items.begin() == table.items.end());
  map.items.clear();
  CHECK(values(table) == values(map));
}
