// What a layer contributes to a state digest, declared once per type, beside its fields.
//
// A type that is part of the state declares one policy per field, in declaration order:
//
//   static constexpr state::Fields<3> state_fields{state::value, state::until, state::skip};
//
// Its fields are bound by a structured binding of exactly that many names, so a field added to
// the type and not to the declaration does not compile: no field can be forgotten. `skip` is a
// decision, with its reason beside the field (a reference to a collaborator, a lock, a counter
// that only names things); the digest-completeness test lists every skipped field again, and
// perturbs every other one to show that the digest sees it.
//
// Everything is fed to an `add(std::int64_t)` callable, so that this layer needs no hash.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "realloop/kernel.hpp"

namespace loopsim::state {

// Absolute times are fed relative to now, so that equal states at other times agree.
enum class Policy : std::uint8_t {
  value,   // fed as it is
  size,    // a container fed by its size alone (its elements are callbacks)
  until,   // a deadline: the time left, 0 once it has passed
  since,   // a start (-1: none): the time elapsed since, or -1
  at_now,  // an instant whose only effect is whether it is now
  skip,    // not state (see the field's comment)
};
inline constexpr Policy value = Policy::value;
inline constexpr Policy size = Policy::size;
inline constexpr Policy until = Policy::until;
inline constexpr Policy since = Policy::since;
inline constexpr Policy at_now = Policy::at_now;
inline constexpr Policy skip = Policy::skip;

// Folds `value` into `into`: for describing a callback's payload in one number (a post's).
constexpr std::uint64_t fold(std::uint64_t into, std::uint64_t value) {
  std::uint64_t z = into ^ (value + 0x9e3779b97f4a7c15ull + (into << 6) + (into >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
inline std::uint64_t fold(std::uint64_t into, std::string_view bytes) {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ull;
  return fold(fold(into, bytes.size()), h);
}

// The nanoseconds of a time, atomic or not.
template <class F>
std::int64_t nanos_of(const F& field) {
  if constexpr (requires { field.load(); }) {
    return std::int64_t(field.load(std::memory_order_acquire));
  } else {
    return std::int64_t(field.count());
  }
}

template <std::size_t N>
using Fields = std::array<Policy, N>;

// Binds a type's private fields too: a type befriends it to take part.
struct Access {
  template <std::size_t N, class S>
  static auto bind(S& s);
};

template <class T>
concept Declared = requires { T::state_fields; };

// What a type fed its state to, for a type that cannot declare its fields at compile time: an
// interface whose implementation is chosen at run time digests itself through one.
class Sink {
 public:
  virtual void add(std::int64_t value) = 0;

 protected:
  ~Sink() = default;
};
template <class T>
concept SelfDigesting = requires(const T& object, Sink& sink, Nanos now) { object.digest_state(sink, now); };

template <class Add>
class SinkOf final : public Sink {
 public:
  explicit SinkOf(Add& add) : add_(add) {}
  void add(std::int64_t value) override { add_(value); }

 private:
  Add& add_;
};

template <class T>
struct is_duration : std::false_type {};
template <class R, class P>
struct is_duration<std::chrono::duration<R, P>> : std::true_type {};

template <class T>
struct is_atomic : std::false_type {};
template <class T>
struct is_atomic<std::atomic<T>> : std::true_type {};

template <class T>
struct is_unique_ptr : std::false_type {};
template <class T, class D>
struct is_unique_ptr<std::unique_ptr<T, D>> : std::true_type {};

template <class T>
struct is_pair : std::false_type {};
template <class A, class B>
struct is_pair<std::pair<A, B>> : std::true_type {};

template <class Add, class T>
void feed(Add& add, const T& v, Nanos now);

template <class Add, class T, std::size_t... I>
void feed_fields(Add& add, const T& v, Nanos now, std::index_sequence<I...>) {
  auto fields = Access::bind<sizeof...(I)>(v);
  auto one = [&](auto index) {
    constexpr std::size_t i = decltype(index)::value;
    constexpr Policy policy = T::state_fields[i];
    const auto& field = std::get<i>(fields);
    if constexpr (policy == Policy::skip) {
      return;
    } else if constexpr (policy == Policy::size) {
      add(std::int64_t(std::size(field)));
    } else if constexpr (policy == Policy::until) {
      add(std::max<std::int64_t>(nanos_of(field) - now.count(), 0));
    } else if constexpr (policy == Policy::since) {
      std::int64_t t = nanos_of(field);
      add(t < 0 ? -1 : now.count() - t);
    } else if constexpr (policy == Policy::at_now) {
      add(std::int64_t(nanos_of(field) == now.count()));
    } else {
      feed(add, field, now);
    }
  };
  (one(std::integral_constant<std::size_t, I>{}), ...);
}

// Feeds one value: numbers and enums as they are, strings by their bytes, containers element by
// element (with their size first), declared types field by field.
template <class Add, class T>
void feed(Add& add, const T& v, Nanos now) {
  if constexpr (Declared<T>) {
    feed_fields(add, v, now, std::make_index_sequence<T::state_fields.size()>{});
  } else if constexpr (SelfDigesting<T>) {
    SinkOf<Add> sink(add);
    v.digest_state(sink, now);
  } else if constexpr (is_unique_ptr<T>::value) {
    if (v == nullptr) {
      add(std::int64_t(-1));
    } else {
      feed(add, *v, now);
    }
  } else if constexpr (std::is_enum_v<T> || std::is_integral_v<T>) {
    add(std::int64_t(v));
  } else if constexpr (is_duration<T>::value) {
    add(std::int64_t(v.count()));
  } else if constexpr (is_atomic<T>::value) {
    feed(add, v.load(std::memory_order_acquire), now);
  } else if constexpr (std::is_same_v<T, std::string>) {
    add(std::int64_t(v.size()));
    for (std::size_t at = 0; at < v.size(); at += 8) {
      std::int64_t chunk = 0;
      std::memcpy(&chunk, v.data() + at, std::min<std::size_t>(8, v.size() - at));
      add(chunk);
    }
  } else if constexpr (is_pair<T>::value) {
    feed(add, v.first, now);
    feed(add, v.second, now);
  } else {
    add(std::int64_t(std::size(v)));
    for (const auto& element : v) feed(add, static_cast<const std::decay_t<decltype(element)>&>(element), now);
  }
}

// The digest's view of a declared object.
template <class Add, class T>
  requires Declared<T> || SelfDigesting<T>
void visit(Add&& add, const T& object, Nanos now) {
  feed(add, object, now);
}

template <std::size_t N, class S>
auto Access::bind(S& s) {
  // One arm per field count; a type with more fields than this needs another arm.
  static_assert(N >= 1 && N <= 48, "state::Access::bind: add an arm for this many fields");
#define LOOPSIM_BIND(...)  \
  auto& [__VA_ARGS__] = s; \
  return std::tie(__VA_ARGS__)
  // clang-format off
  if constexpr (N == 1) { LOOPSIM_BIND(a0); }
  else if constexpr (N == 2) { LOOPSIM_BIND(a0, a1); }
  else if constexpr (N == 3) { LOOPSIM_BIND(a0, a1, a2); }
  else if constexpr (N == 4) { LOOPSIM_BIND(a0, a1, a2, a3); }
  else if constexpr (N == 5) { LOOPSIM_BIND(a0, a1, a2, a3, a4); }
  else if constexpr (N == 6) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5); }
  else if constexpr (N == 7) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6); }
  else if constexpr (N == 8) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7); }
  else if constexpr (N == 9) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8); }
  else if constexpr (N == 10) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9); }
  else if constexpr (N == 11) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10); }
  else if constexpr (N == 12) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11); }
  else if constexpr (N == 13) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12); }
  else if constexpr (N == 14) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13); }
  else if constexpr (N == 15) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14); }
  else if constexpr (N == 16) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15); }
  else if constexpr (N == 17) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16); }
  else if constexpr (N == 18) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17); }
  else if constexpr (N == 19) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18); }
  else if constexpr (N == 20) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19); }
  else if constexpr (N == 21) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20); }
  else if constexpr (N == 22) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21); }
  else if constexpr (N == 23) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22); }
  else if constexpr (N == 24) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23); }
  else if constexpr (N == 25) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24); }
  else if constexpr (N == 26) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25); }
  else if constexpr (N == 27) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26); }
  else if constexpr (N == 28) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27); }
  else if constexpr (N == 29) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28); }
  else if constexpr (N == 30) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29); }
  else if constexpr (N == 31) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30); }
  else if constexpr (N == 32) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31); }
  else if constexpr (N == 33) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32); }
  else if constexpr (N == 34) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33); }
  else if constexpr (N == 35) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33, a34); }
  else if constexpr (N == 36) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33, a34, a35); }
  else if constexpr (N == 37) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33, a34, a35, a36); }
  else if constexpr (N == 38) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33, a34, a35, a36, a37); }
  else if constexpr (N == 39) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33, a34, a35, a36, a37, a38); }
  else if constexpr (N == 40) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33, a34, a35, a36, a37, a38, a39); }
  else if constexpr (N == 41) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33, a34, a35, a36, a37, a38, a39, a40); }
  else if constexpr (N == 42) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33, a34, a35, a36, a37, a38, a39, a40, a41); }
  else if constexpr (N == 43) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33, a34, a35, a36, a37, a38, a39, a40, a41, a42); }
  else if constexpr (N == 44) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33, a34, a35, a36, a37, a38, a39, a40, a41, a42, a43); }
  else if constexpr (N == 45) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33, a34, a35, a36, a37, a38, a39, a40, a41, a42, a43, a44); }
  else if constexpr (N == 46) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33, a34, a35, a36, a37, a38, a39, a40, a41, a42, a43, a44, a45); }
  else if constexpr (N == 47) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33, a34, a35, a36, a37, a38, a39, a40, a41, a42, a43, a44, a45, a46); }
  else if constexpr (N == 48) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33, a34, a35, a36, a37, a38, a39, a40, a41, a42, a43, a44, a45, a46, a47); }
  // clang-format on
#undef LOOPSIM_BIND
}

}  // namespace loopsim::state
