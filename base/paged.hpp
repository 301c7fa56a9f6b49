// A table indexed by number that grows a page at a time. A std::vector indexed by descriptor
// held a hundred thousand connections in room for 131,072 (its growth slack), and at each
// growth held the old and the new array side by side. Here the slack is under a page, nothing
// is copied as the table grows, and an element never moves. Copies are deep.
#pragma once

#include <cstddef>
#include <iterator>
#include <memory>
#include <vector>

#include "base/assert.hpp"

namespace loopsim::base {

template <class T, std::size_t PageSize = 16>
class Paged {
  static_assert(PageSize > 0 && (PageSize & (PageSize - 1)) == 0, "a page is a power of two");

 public:
  using value_type = T;

  Paged() = default;
  Paged(const Paged& other) { *this = other; }
  Paged(Paged&&) noexcept = default;
  Paged& operator=(const Paged& other) {
    if (this == &other) return *this;
    pages_.clear();
    size_ = 0;
    resize(other.size_);
    for (std::size_t i = 0; i < size_; ++i) (*this)[i] = other[i];
    return *this;
  }
  Paged& operator=(Paged&&) noexcept = default;
  ~Paged() = default;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](std::size_t i) {
    LOOPSIM_ASSERT_OP(i, <, size_);
    return pages_[i / PageSize][i % PageSize];
  }
  const T& operator[](std::size_t i) const {
    LOOPSIM_ASSERT_OP(i, <, size_);
    return pages_[i / PageSize][i % PageSize];
  }

  // Grows with values made by T{}; shrinks by making the elements beyond `n` T{} again, and
  // letting go of the pages left empty.
  void resize(std::size_t n) {
    for (std::size_t i = n; i < size_; ++i) (*this)[i] = T{};
    const std::size_t pages = (n + PageSize - 1) / PageSize;
    if (pages < pages_.size()) pages_.resize(pages);
    while (pages_.size() < pages) pages_.push_back(std::make_unique<T[]>(PageSize));
    size_ = n;
  }

  template <bool Const>
  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = std::conditional_t<Const, const T*, T*>;
    using reference = std::conditional_t<Const, const T&, T&>;
    using Table = std::conditional_t<Const, const Paged, Paged>;
    Iterator() = default;
    Iterator(Table* table, std::size_t at) : table_(table), at_(at) {}
    reference operator*() const { return (*table_)[at_]; }
    pointer operator->() const { return &(*table_)[at_]; }
    Iterator& operator++() {
      ++at_;
      return *this;
    }
    Iterator operator++(int) {
      Iterator before = *this;
      ++at_;
      return before;
    }
    bool operator==(const Iterator& other) const { return at_ == other.at_; }

   private:
    Table* table_ = nullptr;
    std::size_t at_ = 0;
  };
  Iterator<false> begin() { return {this, 0}; }
  Iterator<false> end() { return {this, size_}; }
  Iterator<true> begin() const { return {this, 0}; }
  Iterator<true> end() const { return {this, size_}; }

 private:
  std::vector<std::unique_ptr<T[]>> pages_;
  std::size_t size_ = 0;
};

}  // namespace loopsim::base
