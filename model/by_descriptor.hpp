// A table keyed by descriptor number, for a poller's interest list: one slot per number up to
// the highest one in it. The kernel hands out the lowest free number, so the numbers are small
// and dense, and a lookup is an index where a std::map walked a tree (an edge visits every
// poller watching its descriptor, SimKernel::notify). It reads in descriptor order, each item
// as the pair a std::map<int, Item> gives, so the state digest feeds it exactly as it fed the
// map. An empty table gives its slots back: a poller that watches one descriptor at a time (the
// seam's, one per thread) keeps none between its waits.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "base/assert.hpp"

namespace loopsim::model {

template <class Item>
class ByDescriptor {
 public:
  using key_type = int;
  using mapped_type = Item;
  Item* find(int fd) {
    return fd >= 0 && std::size_t(fd) < slots_.size() && slots_[std::size_t(fd)].present ? &slots_[std::size_t(fd)].item
                                                                                         : nullptr;
  }
  const Item* find(int fd) const { return const_cast<ByDescriptor*>(this)->find(fd); }
  Item& at(int fd) {
    Item* item = find(fd);
    LOOPSIM_ASSERT(item != nullptr);  // the caller knows the descriptor is in the table
    return *item;
  }
  // The item at `fd`, and whether it was put there now (false: one was there, left as it was).
  std::pair<Item*, bool> try_emplace(int fd, Item item) {
    LOOPSIM_ASSERT_OP(fd, >=, 0);
    if (std::size_t(fd) >= slots_.size()) slots_.resize(std::size_t(fd) + 1);
    Slot& slot = slots_[std::size_t(fd)];
    if (slot.present) return {&slot.item, false};
    slot = Slot{std::move(item), true};
    ++count_;
    return {&slot.item, true};
  }
  // Whether there was one to take out.
  bool erase(int fd) {
    if (find(fd) == nullptr) return false;
    slots_[std::size_t(fd)] = Slot{};
    if (--count_ == 0) {
      clear();
    } else {
      while (!slots_.back().present) slots_.pop_back();  // the highest number still in it ends it
    }
    return true;
  }
  void clear() {
    std::vector<Slot>().swap(slots_);
    count_ = 0;
  }
  std::size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }

  // Descriptor order; each element is (descriptor, item), a copy, as the digest reads a map's.
  class const_iterator {
   public:
    std::pair<const int, Item> operator*() const { return {int(at_), table_->slots_[at_].item}; }
    const_iterator& operator++() {
      ++at_;
      skip();
      return *this;
    }
    bool operator==(const const_iterator& other) const { return at_ == other.at_; }

   private:
    friend class ByDescriptor;
    const_iterator(const ByDescriptor* table, std::size_t at) : table_(table), at_(at) { skip(); }
    void skip() {
      while (at_ < table_->slots_.size() && !table_->slots_[at_].present) ++at_;
    }
    const ByDescriptor* table_;
    std::size_t at_;
  };
  const_iterator begin() const { return const_iterator(this, 0); }
  const_iterator end() const { return const_iterator(this, slots_.size()); }

 private:
  struct Slot {
    Item item{};
    bool present = false;
  };
  std::vector<Slot> slots_;
  std::size_t count_ = 0;
};

}  // namespace loopsim::model
