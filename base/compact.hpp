// A string in 16 bytes and a list of ints in 12, for what a million held connections keep a
// million of. A trace event is as large as its largest kind: with a std::string (32 bytes) and
// a std::vector (24) among the kinds (a path, a wait's descriptors), every event took 64 bytes;
// with these, 48. The kernel's descriptor entry keeps the pollers watching it in an IntList: most
// descriptors are watched by one, and a std::vector cost 24 bytes and a block of 24 for it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace loopsim::base {

// Bytes: up to 15 in place, longer ones in a block of their own on the heap. Reads as a
// std::string_view; std::string(text) or text.str() makes a string of it.
class Text {
 public:
  Text() noexcept { set_inline_size(0); }
  Text(std::string_view bytes) { assign(bytes); }  // NOLINT: as a string converts
  Text(const std::string& bytes) : Text(std::string_view(bytes)) {}  // NOLINT
  Text(const char* bytes) : Text(std::string_view(bytes)) {}  // NOLINT
  Text(const Text& other) : Text(other.view()) {}
  Text(Text&& other) noexcept {
    std::memcpy(raw_, other.raw_, sizeof raw_);
    other.set_inline_size(0);
  }
  Text& operator=(const Text& other) {
    if (this != &other) {
      Text copy(other);
      *this = std::move(copy);
    }
    return *this;
  }
  Text& operator=(Text&& other) noexcept {
    if (this != &other) {
      release();
      std::memcpy(raw_, other.raw_, sizeof raw_);
      other.set_inline_size(0);
    }
    return *this;
  }
  ~Text() { release(); }

  std::string_view view() const noexcept { return {data(), size()}; }
  operator std::string_view() const noexcept { return view(); }  // NOLINT: reads as one
  std::string str() const { return std::string(view()); }
  const char* data() const noexcept { return on_heap() ? heap_pointer() : reinterpret_cast<const char*>(raw_); }
  std::size_t size() const noexcept {
    if (!on_heap()) return inline_max - raw_[inline_max];
    std::uint32_t n = 0;
    std::memcpy(&n, raw_ + sizeof(char*), sizeof n);
    return n;
  }
  bool empty() const noexcept { return size() == 0; }
  // The block on the heap, or null for bytes kept in place (for a count of the heap's bytes).
  const void* heap_block() const noexcept { return on_heap() ? heap_pointer() : nullptr; }

  friend bool operator==(const Text& a, std::string_view b) noexcept { return a.view() == b; }
  friend std::string operator+(std::string a, const Text& b) { return a.append(b.view()); }
  friend std::string operator+(const Text& a, std::string_view b) { return a.str().append(b); }
  friend std::string operator+(const Text& a, const char* b) { return a.str().append(b); }
  friend std::ostream& operator<<(std::ostream& out, const Text& t) { return out << t.view(); }

 private:
  static constexpr std::size_t inline_max = 15;
  static constexpr unsigned char heap_tag = 0xff;  // in raw_[15]; otherwise 15 - size
  bool on_heap() const noexcept { return raw_[inline_max] == heap_tag; }
  char* heap_pointer() const noexcept {
    char* p = nullptr;
    std::memcpy(&p, raw_, sizeof p);
    return p;
  }
  void set_inline_size(std::size_t n) noexcept { raw_[inline_max] = static_cast<unsigned char>(inline_max - n); }
  void assign(std::string_view bytes) {
    if (bytes.size() <= inline_max) {
      if (!bytes.empty()) std::memcpy(raw_, bytes.data(), bytes.size());
      set_inline_size(bytes.size());
      return;
    }
    char* p = new char[bytes.size()];
    std::memcpy(p, bytes.data(), bytes.size());
    const auto n = static_cast<std::uint32_t>(bytes.size());
    std::memcpy(raw_, &p, sizeof p);
    std::memcpy(raw_ + sizeof p, &n, sizeof n);
    raw_[inline_max] = heap_tag;
  }
  void release() noexcept {
    if (on_heap()) delete[] heap_pointer();
    set_inline_size(0);
  }

  alignas(8) unsigned char raw_[16];
};
static_assert(sizeof(Text) == 16);

// Ints (descriptors): up to two in place, more in a block on the heap (its capacity first).
class IntList {
 public:
  using value_type = int;
  IntList() = default;
  IntList(std::initializer_list<int> fds) {
    for (int fd : fds) push_back(fd);
  }
  IntList(const std::vector<int>& fds) {  // NOLINT: as the vector it stands for converts
    for (int fd : fds) push_back(fd);
  }
  IntList(const IntList& other) {
    for (int fd : other) push_back(fd);
  }
  IntList(IntList&& other) noexcept : size_(other.size_) {
    std::memcpy(&place_, &other.place_, sizeof place_);
    other.size_ = 0;
  }
  IntList& operator=(const IntList& other) {
    if (this != &other) {
      IntList copy(other);
      *this = std::move(copy);
    }
    return *this;
  }
  IntList& operator=(IntList&& other) noexcept {
    if (this != &other) {
      release();
      size_ = other.size_;
      std::memcpy(&place_, &other.place_, sizeof place_);
      other.size_ = 0;
    }
    return *this;
  }
  ~IntList() { release(); }

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  const int* begin() const noexcept { return size_ <= inline_max ? place_.fds : block() + 1; }
  const int* end() const noexcept { return begin() + size_; }
  int operator[](std::size_t i) const noexcept { return begin()[i]; }
  void reserve(std::size_t) noexcept {}  // (grows by doubling on its own)
  void clear() noexcept { release(); }
  void push_back(int fd) {
    if (size_ < inline_max) {
      place_.fds[size_++] = fd;
      return;
    }
    if (size_ == inline_max || int(size_) == block()[0]) {  // to the heap, or a bigger block
      const std::uint32_t capacity = 2 * std::max(size_, inline_max);
      int* grown = new int[capacity + 1];
      grown[0] = int(capacity);
      std::copy(begin(), end(), grown + 1);
      if (size_ > inline_max) delete[] block();
      std::memcpy(place_.block, &grown, sizeof grown);
    }
    block()[1 + size_++] = fd;
  }
  const void* heap_block() const noexcept { return size_ > inline_max ? block() : nullptr; }
  // Takes every `value` out, keeping the others' order; how many went.
  std::size_t erase(int value) noexcept {
    int* first = size_ <= inline_max ? place_.fds : block() + 1;
    int* last = std::remove(first, first + size_, value);
    const auto gone = std::size_t(first + size_ - last);
    if (gone == 0) return 0;
    if (size_ > inline_max && size_ - gone <= inline_max) {  // back in place
      int kept[inline_max] = {};
      std::copy(first, last, kept);
      delete[] block();
      std::copy(kept, kept + (last - first), place_.fds);
    }
    size_ -= std::uint32_t(gone);
    return gone;
  }

  friend bool operator==(const IntList& a, const IntList& b) noexcept {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  static constexpr std::uint32_t inline_max = 2;
  int* block() const noexcept {
    int* p = nullptr;
    std::memcpy(&p, place_.block, sizeof p);
    return p;
  }
  void release() noexcept {
    if (size_ > inline_max) delete[] block();
    size_ = 0;
  }

  std::uint32_t size_ = 0;
  union Place {
    int fds[inline_max];
    unsigned char block[sizeof(int*)];  // the heap block's address, once size_ > inline_max
  } place_{};
};
static_assert(sizeof(IntList) == 12);

}  // namespace loopsim::base
