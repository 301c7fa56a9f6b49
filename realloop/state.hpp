// What a layer contributes to a state digest, declared once per type, beside its fields.
//
// A type that is part of the state declares one policy per member, in declaration order, each
// naming the member itself:
//
//   static constexpr auto state_fields = state::fields(
//       state::f::value<&Socket::fd>, state::f::until<&Socket::deadline>, state::f::reference("kernel_"));
//
// The digest reads each member through its member pointer, and its name (for the digest audit's
// messages) is the member's own, taken from the pointer. The declaration is checked at compile
// time against the members as the type declares them: entry i must be member i, and there must be
// exactly as many entries as members. So a member added without a policy, one left out, one listed
// twice, or two members moved past each other does not compile: no field can be forgotten or read
// under another's policy. A reference member (a collaborator) cannot be pointed at; it is declared
// `reference("name")`, is never state, and the check holds it to a member of reference type.
// `skip` is a decision, with its reason beside the member (a lock, a counter that only names
// things); the digest-completeness test lists every skipped field by name, and perturbs every
// other one to show that the digest sees it.
//
// Names: a client's or a connection's number only names it. A digest may be given canonical
// names (Names), under which interchangeable clients of one group are one multiset: a field that
// holds such a number says so (client_name, conn_name), and so does a container indexed by one
// (by_client, by_conn), which is then fed in canonical order.
//
// Everything is fed to an `add(std::int64_t)` callable, so that this layer needs no hash; an
// audit (Trail) may follow along to name each value.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/assert.hpp"
#include "realloop/kernel.hpp"

namespace loopsim::state {

// Absolute times are fed relative to now, so that equal states at other times agree.
enum class Policy : std::uint8_t {
  value,        // fed as it is
  size,         // a container fed by its size alone (its elements are callbacks)
  until,        // a deadline: the time left, 0 once it has passed
  deadline,     // a deadline or -1 for none: the time left (0 once passed), or -1
  since,        // a start (-1: none): the time elapsed since, or -1
  at_now,       // an instant whose only effect is whether it is now
  skip,         // not state (see the field's comment)
  client_name,  // a client's number (or a container of them), fed under its canonical name
  conn_name,    // a connection's number (or a container of them), likewise
  by_client,    // a container indexed by client number, fed in canonical order
  by_conn,      // a container indexed by connection number, fed in canonical order
};
inline constexpr Policy value = Policy::value;
inline constexpr Policy size = Policy::size;
inline constexpr Policy until = Policy::until;
inline constexpr Policy deadline = Policy::deadline;
inline constexpr Policy since = Policy::since;
inline constexpr Policy at_now = Policy::at_now;
inline constexpr Policy skip = Policy::skip;

struct Field {
  Policy policy;
  const char* name;
  constexpr bool operator==(Policy p) const { return policy == p; }
};

// The member a declared field is, as a type: its class, and the member's own name, which the
// compiler spells in a function's signature ("... M = &loopsim::Loop::worker_]" or "...;").
template <auto M>
consteval std::string_view signature_of() {
  return __PRETTY_FUNCTION__;
}
template <auto M>
consteval std::string_view member_name_of() {
  std::string_view s = signature_of<M>();
  std::size_t at = s.find("M = &");
  if (at == std::string_view::npos) return {};
  s = s.substr(at + 5);
  s = s.substr(0, s.find_first_of(";]"));
  std::size_t scope = s.rfind("::");
  return scope == std::string_view::npos ? s : s.substr(scope + 2);
}
template <auto M>
struct MemberName {
  static constexpr std::size_t length = member_name_of<M>().size();
  static_assert(length > 0, "state: this compiler spells a member pointer in a way member_name_of cannot read");
  static constexpr std::array<char, length + 1> text = [] {
    std::array<char, length + 1> out{};
    std::string_view name = member_name_of<M>();
    for (std::size_t at = 0; at < length; ++at) out[at] = name[at];
    return out;
  }();
};

// A value kept on the heap and made at its first use: a member most objects of its kind never
// use (the answer parser of an idle client, one of a million held) costs a pointer, not its
// size. Copies are deep. To the digest, one not made yet is a T{}: a value made and one never
// made digest alike while they are equal.
template <class T>
class Lazy {
 public:
  using value_type = T;
  Lazy() = default;
  Lazy(const Lazy& other) : value_(other.value_ ? std::make_unique<T>(*other.value_) : nullptr) {}
  Lazy(Lazy&&) noexcept = default;
  Lazy& operator=(const Lazy& other) {
    if (this != &other) value_ = other.value_ ? std::make_unique<T>(*other.value_) : nullptr;
    return *this;
  }
  Lazy& operator=(Lazy&&) noexcept = default;
  ~Lazy() = default;
  explicit operator bool() const { return value_ != nullptr; }
  // The value, which must be made already.
  const T* operator->() const { return &**this; }
  T* operator->() { return &**this; }
  const T& operator*() const {
    LOOPSIM_ASSERT(value_ != nullptr);
    return *value_;
  }
  T& operator*() {
    LOOPSIM_ASSERT(value_ != nullptr);
    return *value_;
  }
  // The value, made by `make()` if it is not made yet.
  template <class Make>
  T& get(Make&& make) {
    if (value_ == nullptr) value_ = std::make_unique<T>(make());
    return *value_;
  }

 private:
  std::unique_ptr<T> value_;
};

// A declared member: its policy and name as a Field (whose address names the component for the
// digest-drop test), and the member pointer, which is how the digest reads it.
template <auto M>
struct MemberField : Field {
  static constexpr auto member = M;
};

template <class T>
struct is_member_field : std::false_type {};
template <auto M>
struct is_member_field<MemberField<M>> : std::true_type {};

// The declarations' words: state::f::value<&Socket::fd>; state::f::reference("kernel_") for a
// reference member; state::f::part("scheduler.later") for a part a self-digesting type names.
namespace f {
template <auto M>
constexpr MemberField<M> member(Policy policy) {
  static_assert(std::is_member_object_pointer_v<decltype(M)>, "state::f: name a data member, &Type::member");
  return MemberField<M>{Field{policy, MemberName<M>::text.data()}};
}
template <auto M> inline constexpr MemberField<M> value = member<M>(Policy::value);
template <auto M> inline constexpr MemberField<M> size = member<M>(Policy::size);
template <auto M> inline constexpr MemberField<M> until = member<M>(Policy::until);
template <auto M> inline constexpr MemberField<M> deadline = member<M>(Policy::deadline);
template <auto M> inline constexpr MemberField<M> since = member<M>(Policy::since);
template <auto M> inline constexpr MemberField<M> at_now = member<M>(Policy::at_now);
template <auto M> inline constexpr MemberField<M> skip = member<M>(Policy::skip);
template <auto M> inline constexpr MemberField<M> client_name = member<M>(Policy::client_name);
template <auto M> inline constexpr MemberField<M> conn_name = member<M>(Policy::conn_name);
template <auto M> inline constexpr MemberField<M> by_client = member<M>(Policy::by_client);
template <auto M> inline constexpr MemberField<M> by_conn = member<M>(Policy::by_conn);
// A reference member: never state (see the header).
constexpr Field reference(const char* name) { return Field{Policy::skip, name}; }
// A self-digesting type's named part (Sink::kept).
constexpr Field part(const char* name) { return Field{Policy::value, name}; }
}  // namespace f

// A type's declaration: its entries in member order.
template <class... F>
constexpr std::tuple<F...> fields(F... entries) {
  return std::tuple<F...>{entries...};
}

template <class T>
inline constexpr std::size_t field_count = std::tuple_size_v<std::remove_cv_t<decltype(T::state_fields)>>;

template <class T, std::size_t I>
using EntryType = std::tuple_element_t<I, std::remove_cv_t<decltype(T::state_fields)>>;

// Entry I of T's declaration.
template <class T, std::size_t I>
constexpr const Field& field_at() {
  return std::get<I>(T::state_fields);
}

// Every entry of T's declaration, in member order.
template <class T>
std::array<const Field*, field_count<T>> field_list() {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::array<const Field*, field_count<T>>{&field_at<T, I>()...};
  }(std::make_index_sequence<field_count<T>>{});
}

// The index of the entry for the member called `name` (a test's way to name a member without
// pinning its place); field_count<T> when there is none.
template <class T>
consteval std::size_t index_of(std::string_view name) {
  std::size_t found = field_count<T>;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ((std::string_view(field_at<T, I>().name) == name ? (found = I, 0) : 0), ...);
  }(std::make_index_sequence<field_count<T>>{});
  return found;
}

// Member I of `object`, through its declaration's member pointer.
template <std::size_t I, class T>
constexpr auto& member_at(T& object) {
  static_assert(is_member_field<EntryType<std::remove_const_t<T>, I>>::value,
                "state::member_at: this entry is a reference, which is never state");
  return object.*EntryType<std::remove_const_t<T>, I>::member;
}

// Folds `value` into `into`: for describing a callback's payload in one number (a post's), and
// for combining digests. Each side goes through SplitMix64's finalizer (a bijection), so that
// small, structured inputs (numbers of nodes, flags) do not collide as in a plain hash_combine.
constexpr std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
constexpr std::uint64_t fold(std::uint64_t into, std::uint64_t value) {
  return mix64(into ^ mix64(value ^ 0x9e3779b97f4a7c15ull) ^ 0xd1b54a32d192ed03ull);
}
inline std::uint64_t fold(std::uint64_t into, std::string_view bytes) {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ull;
  return fold(fold(into, bytes.size()), h);
}

enum class Name : std::uint8_t { client, conn };

// Canonical names for clients and connections (sim::World builds them; none: names as they are).
class Names {
 public:
  // The canonical name of `id` (negative numbers, "none", stay as they are).
  virtual std::int64_t canonical(Name kind, std::int64_t id) const = 0;
  // The id whose canonical name is `at`, to feed a container indexed by ids in canonical order.
  virtual std::int64_t original(Name kind, std::int64_t at) const = 0;

 protected:
  ~Names() = default;
};

// A walk that knows the run's horizon feeds every time still to come that lies at or beyond it
// as `beyond` (nothing at or past the horizon happens, so when past it is no matter), and tells
// its Clamp the exact value, for a digest that keeps both (the shape, sim::World::shape).
inline constexpr std::int64_t beyond = INT64_MAX;
class Clamp {
 public:
  virtual void clamped(std::int64_t exact) = 0;

 protected:
  ~Clamp() = default;
};

// Follows a digest's walk through the fields, for an audit that names what it compares.
class Trail {
 public:
  virtual void enter(std::string_view name) = 0;
  virtual void enter(std::int64_t index) = 0;
  virtual void leave() = 0;

 protected:
  ~Trail() = default;
};

// The digest-drop test's hooks (sim/digest_drop_test.cpp), null in every real run. While
// `dropped_for_tests` points at a declaration's entry (`&field_at<T, i>()`, or a part a
// self-digesting type names, see `kept`), that component is left out of every digest (not of
// the audit's transcripts): the test shows that a search notices. While `catalog_for_tests` is set, every component a walk meets is
// listed in it once, with the field path where it was first met when the walk has a trail.
// What the catalog hook tells: a component met, and the path it was met at ("" when the walk
// has no trail). An implementation keeps what it learns where a search's memory is not (the
// explorer's arena is restored under it).
class Catalog {
 public:
  virtual void note(const Field* f, std::string_view path) = 0;

 protected:
  ~Catalog() = default;
};
inline const Field* dropped_for_tests = nullptr;
inline Catalog* catalog_for_tests = nullptr;
inline std::string trail_where(const Trail* trail);

// Whether component `f` goes into the digest (the hooks above), noting it in the catalog.
inline bool kept_field(const Field* f, const Trail* trail) {
  if (catalog_for_tests != nullptr) {
    const std::string at = trail_where(trail);
    catalog_for_tests->note(f, at.empty() ? at : at + "." + f->name);
  }
  // (The strings above live and die inside the walk, wherever it allocates.) A walk that
  // writes the state down (the audit's, with a trail) keeps everything: the audit then sees
  // what the digest lost.
  return f != dropped_for_tests || trail != nullptr;
}

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <>
struct is_optional<MaybeInstant> : std::true_type {};

// The nanoseconds of a time (a Duration, or an Instant since the kernel's epoch), atomic or
// not; -1 for none (an empty optional), which the deadline and since policies feed as it is.
template <class F>
std::int64_t nanos_of(const F& field) {
  if constexpr (requires { field.load(); }) {
    return nanos_of(field.load(std::memory_order_acquire));
  } else if constexpr (is_optional<F>::value) {
    return field ? nanos_of(*field) : -1;
  } else if constexpr (std::is_integral_v<F>) {
    return std::int64_t(field);
  } else if constexpr (std::is_same_v<F, Instant>) {
    return std::int64_t(field.time_since_epoch().count());
  } else {
    return std::int64_t(field.count());
  }
}

// The bytes of a string as one number: fed as that, not 8 bytes at a time, so that a socket's
// 16 KiB buffer costs one pass and one value, not 2,048 (the search digests the clients' state
// at every same-instant choice). Every byte counts, in order, with its length fed beside it.
inline std::uint64_t bytes_hash(std::string_view bytes) {
  std::uint64_t h = 0x243f6a8885a308d3ull;
  std::size_t at = 0;
  for (; at + 8 <= bytes.size(); at += 8) {
    std::uint64_t chunk = 0;
    std::memcpy(&chunk, bytes.data() + at, 8);
    h = (h ^ chunk) * 0x9fb21c651e98df25ull;
    h ^= h >> 29;
  }
  std::uint64_t tail = 0;
  std::memcpy(&tail, bytes.data() + at, bytes.size() - at);
  return mix64(h ^ tail ^ (std::uint64_t(bytes.size() - at) << 59));
}

// Reads a type's members as the type declares them, private ones too: a type befriends it to
// take part.
struct Access {
  // The address of each member of `s`, in declaration order; null for a reference member, whose
  // address is that of what it refers to. A structured binding of exactly N names: a type with
  // another number of members does not compile here.
  template <std::size_t N, class S>
  static constexpr std::array<const void*, N> addresses(const S& s);
};

// An object of type T that is never made (nor defined): at compile time only its members'
// addresses are taken, to hold a declaration to the members. So a declared type must have
// linkage: clang refuses an undefined object of a type in an unnamed namespace.
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wundefined-var-template"
#endif
template <class T>
extern const T declared_object;

// Whether entry I of T's declaration is T's member I: the same member (the same address in one
// object), or, for a `reference` entry, a member of reference type.
template <class T, std::size_t I>
consteval bool entry_is_member() {
  const std::array<const void*, field_count<T>> at = Access::addresses<field_count<T>>(declared_object<T>);
  using E = EntryType<T, I>;
  if constexpr (is_member_field<E>::value) {
    return at[I] == static_cast<const void*>(std::addressof(declared_object<T>.*E::member));
  } else {
    return at[I] == nullptr;
  }
}
#if defined(__clang__)
#pragma clang diagnostic pop
#endif

// The compile-time check of T's declaration (the header says what it rules out).
template <class T>
consteval bool declared_in_member_order() {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    auto one = []<std::size_t i>() {
      static_assert(entry_is_member<T, i>(),
                    "state_fields: entry i (see the instantiation) is not the type's member i: members were "
                    "moved, or one was added, left out or listed twice");
    };
    (one.template operator()<I>(), ...);
  }(std::make_index_sequence<field_count<T>>{});
  return true;
}

template <class T>
concept Declared = requires { T::state_fields; };

// What a type fed its state to, for a type that cannot declare its fields at compile time: an
// interface whose implementation is chosen at run time digests itself through one.
class Sink {
 public:
  virtual void add(std::int64_t value) = 0;
  virtual const Names* names() const { return nullptr; }
  virtual Trail* trail() const { return nullptr; }
  // The horizon (none: no horizon), and where a time clamped at it goes (see Clamp).
  virtual std::optional<Instant> horizon() const { return std::nullopt; }
  virtual void clamped(std::int64_t /*exact*/) {}
  // Whether a self-digesting type's part `f` (one of its own static Field entries) is fed:
  // true in every real run (the digest-drop test's hook, above).
  bool kept(const Field& f) const {
    if (catalog_for_tests == nullptr && dropped_for_tests == nullptr) [[likely]] return true;
    return kept_field(&f, trail());
  }

 protected:
  ~Sink() = default;
};
template <class T>
concept SelfDigesting = requires(const T& object, Sink& sink, Instant now) { object.digest_state(sink, now); };

// One walk through a state: where values go, the time they are relative to, the names they are
// given, and who follows along.
template <class Add>
struct Feed {
  Add& add;
  Instant now;
  const Names* names = nullptr;
  Trail* trail = nullptr;
  std::optional<Instant> horizon;
  Clamp* clamp = nullptr;
};

// A time still to come (relative to now), clamped at the horizon.
template <class Add>
void feed_left(const Feed<Add>& in, std::int64_t left) {
  if (in.horizon && left >= (*in.horizon - in.now).count()) {
    in.add(beyond);
    if (in.clamp != nullptr) in.clamp->clamped(left);
    return;
  }
  in.add(left);
}

template <class Add>
class SinkOf final : public Sink {
 public:
  explicit SinkOf(const Feed<Add>& feed) : feed_(feed) {}
  void add(std::int64_t value) override { feed_.add(value); }
  const Names* names() const override { return feed_.names; }
  Trail* trail() const override { return feed_.trail; }
  std::optional<Instant> horizon() const override { return feed_.horizon; }
  void clamped(std::int64_t exact) override {
    if (feed_.clamp != nullptr) feed_.clamp->clamped(exact);
  }

 private:
  const Feed<Add>& feed_;
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
struct is_lazy : std::false_type {};
template <class T>
struct is_lazy<Lazy<T>> : std::true_type {};

template <class T>
struct is_pair : std::false_type {};
template <class A, class B>
struct is_pair<std::pair<A, B>> : std::true_type {};

template <class Add, class T>
void feed(const Feed<Add>& in, const T& v);

// A number that names a client or a connection, or a container of them.
template <class Add, class T>
void feed_name(const Feed<Add>& in, const T& v, Name kind) {
  if constexpr (std::is_integral_v<T>) {
    std::int64_t id = std::is_signed_v<T> || v != T(~T(0)) ? std::int64_t(v) : -1;  // ~0: none
    in.add(in.names != nullptr && id >= 0 ? in.names->canonical(kind, id) : id);
  } else {
    in.add(std::int64_t(std::size(v)));
    for (const auto& element : v) feed_name(in, element, kind);
  }
}

// A container indexed by clients' or connections' numbers, in canonical order.
template <class Add, class T>
void feed_by_name(const Feed<Add>& in, const T& v, Name kind) {
  in.add(std::int64_t(std::size(v)));
  for (std::size_t at = 0; at < std::size(v); ++at) {
    std::size_t id = in.names != nullptr ? std::size_t(in.names->original(kind, std::int64_t(at))) : at;
    if (in.trail != nullptr) in.trail->enter(std::int64_t(at));
    feed(in, v[id]);
    if (in.trail != nullptr) in.trail->leave();
  }
}

template <class Add, class T, std::size_t... I>
void feed_fields(const Feed<Add>& in, const T& v, std::index_sequence<I...>) {
  static_assert(declared_in_member_order<T>());
  auto one = [&](auto index) {
    constexpr std::size_t i = decltype(index)::value;
    constexpr Policy policy = field_at<T, i>().policy;
    if constexpr (policy == Policy::skip) {
      return;
    } else {
      const auto& field = member_at<i>(v);
      if (catalog_for_tests != nullptr || dropped_for_tests != nullptr) [[unlikely]] {
        if (!kept_field(&field_at<T, i>(), in.trail)) return;
      }
      if (in.trail != nullptr) in.trail->enter(field_at<T, i>().name);
      if constexpr (policy == Policy::size) {
        in.add(std::int64_t(std::size(field)));
      } else if constexpr (policy == Policy::until) {
        feed_left(in, std::max<std::int64_t>(nanos_of(field) - since_start(in.now).count(), 0));
      } else if constexpr (policy == Policy::deadline) {
        std::int64_t t = nanos_of(field);
        if (t < 0) {
          in.add(-1);
        } else {
          feed_left(in, std::max<std::int64_t>(t - since_start(in.now).count(), 0));
        }
      } else if constexpr (policy == Policy::since) {
        std::int64_t t = nanos_of(field);
        in.add(t < 0 ? -1 : since_start(in.now).count() - t);
      } else if constexpr (policy == Policy::at_now) {
        in.add(std::int64_t(nanos_of(field) == since_start(in.now).count()));
      } else if constexpr (policy == Policy::client_name) {
        feed_name(in, field, Name::client);
      } else if constexpr (policy == Policy::conn_name) {
        feed_name(in, field, Name::conn);
      } else if constexpr (policy == Policy::by_client) {
        feed_by_name(in, field, Name::client);
      } else if constexpr (policy == Policy::by_conn) {
        feed_by_name(in, field, Name::conn);
      } else {
        feed(in, field);
      }
      if (in.trail != nullptr) in.trail->leave();
    }
  };
  (one(std::integral_constant<std::size_t, I>{}), ...);
}

// Feeds one value: numbers and enums as they are, strings by their bytes, containers element by
// element (with their size first), declared types field by field.
template <class Add, class T>
void feed(const Feed<Add>& in, const T& v) {
  if constexpr (Declared<T>) {
    feed_fields(in, v, std::make_index_sequence<field_count<T>>{});
  } else if constexpr (SelfDigesting<T>) {
    SinkOf<Add> sink(in);
    v.digest_state(sink, in.now);
  } else if constexpr (is_unique_ptr<T>::value) {
    if (v == nullptr) {
      in.add(std::int64_t(-1));
    } else {
      feed(in, *v);
    }
  } else if constexpr (is_lazy<T>::value) {
    if (v) {
      feed(in, *v);
    } else {
      feed(in, typename T::value_type{});
    }
  } else if constexpr (std::is_enum_v<T> || std::is_integral_v<T>) {
    in.add(std::int64_t(v));
  } else if constexpr (is_duration<T>::value) {
    in.add(std::int64_t(v.count()));
  } else if constexpr (std::is_same_v<T, Instant>) {
    in.add(std::int64_t(v.time_since_epoch().count()));
  } else if constexpr (is_atomic<T>::value) {
    feed(in, v.load(std::memory_order_acquire));
  } else if constexpr (std::is_same_v<T, std::string>) {
    in.add(std::int64_t(v.size()));
    in.add(std::int64_t(bytes_hash(v)));
  } else if constexpr (is_pair<T>::value) {
    feed(in, v.first);
    feed(in, v.second);
  } else {
    in.add(std::int64_t(std::size(v)));
    std::int64_t index = 0;
    for (const auto& element : v) {
      if (in.trail != nullptr) in.trail->enter(index++);
      feed(in, static_cast<const std::decay_t<decltype(element)>&>(element));
      if (in.trail != nullptr) in.trail->leave();
    }
  }
}

// The digest's view of a declared object.
template <class Add, class T>
  requires Declared<T> || SelfDigesting<T>
void visit(Add&& add, const T& object, Instant now, const Names* names = nullptr, Trail* trail = nullptr,
           std::optional<Instant> horizon = std::nullopt, Clamp* clamp = nullptr) {
  Feed<std::remove_reference_t<Add>> in{add, now, names, trail, horizon, clamp};
  feed(in, object);
}

// The same, from a self-digesting type's digest_state: its names, trail, horizon and clamp go
// on.
template <class T>
  requires Declared<T> || SelfDigesting<T>
void visit_into(Sink& sink, const T& object, Instant now) {
  struct Relay final : Clamp {
    explicit Relay(Sink& sink) : sink(sink) {}
    void clamped(std::int64_t exact) override { sink.clamped(exact); }
    Sink& sink;
  } relay(sink);
  auto add = [&sink](std::int64_t v) { sink.add(v); };
  Feed<decltype(add)> in{add, now, sink.names(), sink.trail(), sink.horizon(), &relay};
  feed(in, object);
}

// A time still to come, `left` from now, fed through a sink as feed_left does.
inline void add_left(Sink& sink, std::int64_t left, Instant now) {
  const std::optional<Instant> horizon = sink.horizon();
  if (horizon && left >= (*horizon - now).count()) {
    sink.add(beyond);
    sink.clamped(left);
    return;
  }
  sink.add(left);
}

// A walk written down value by value, each with the field it belongs to ("kernel.sockets[3].rx"):
// what a digest audit compares when two states digest alike. Feed `add` as the walk's callable
// and the transcript itself as its trail.
class Transcript final : public Trail {
 public:
  void add(std::int64_t value) {
    values_.push_back(value);
    fields_.push_back(path());
  }
  void enter(std::string_view name) override { stack_.emplace_back(name); }
  void enter(std::int64_t index) override { stack_.push_back("[" + std::to_string(index) + "]"); }
  void leave() override { stack_.pop_back(); }

  const std::vector<std::int64_t>& values() const { return values_; }
  const std::string& field(std::size_t at) const { return fields_[at]; }
  std::string where() const { return path(); }
  // The values alone, for keeping: the fields follow from them.
  std::vector<std::int64_t> take_values() { return std::move(values_); }

 private:
  std::string path() const {
    std::string out;
    for (const std::string& part : stack_) {
      if (!out.empty() && part.front() != '[') out += '.';
      out += part;
    }
    return out.empty() ? std::string("(top)") : out;
  }
  std::vector<std::string> stack_;
  std::vector<std::int64_t> values_;
  std::vector<std::string> fields_;
};

// The path a walk's trail stands at, for the catalog ("" without a trail, or one that is not
// a Transcript).
inline std::string trail_where(const Trail* trail) {
  const auto* transcript = dynamic_cast<const Transcript*>(trail);
  return transcript != nullptr ? transcript->where() : std::string();
}

// Where `now` first differs from `before` (a transcript's values kept earlier), said with the
// field's name; empty when they are equal. Up to the first difference the two walks took the same
// way, so the field named is the one both were at.
inline std::string first_difference(const std::vector<std::int64_t>& before, const Transcript& now) {
  const std::vector<std::int64_t>& values = now.values();
  std::size_t n = std::min(before.size(), values.size());
  auto text = [](std::int64_t v) { return v == beyond ? std::string("beyond the horizon") : std::to_string(v); };
  for (std::size_t at = 0; at < n; ++at) {
    if (before[at] != values[at]) {
      return now.field(at) + " (value " + std::to_string(at) + "): " + text(before[at]) + " then " + text(values[at]);
    }
  }
  if (before.size() == values.size()) return {};
  if (values.size() > n) {
    return "after value " + std::to_string(n) + " the second state goes on with " + now.field(n) + " = " +
           text(values[n]);
  }
  return "the first state goes on past value " + std::to_string(n) + ", where the second one ends";
}

template <std::size_t N, class S>
constexpr std::array<const void*, N> Access::addresses(const S& s) {
  // One arm per member count; a type with more members than this needs another arm. A member
  // of reference type is not evaluated (the conditional evaluates one side only).
  static_assert(N >= 1 && N <= 56, "state::Access::addresses: add an arm for this many members");
#define LOOPSIM_AT(x) (std::is_reference_v<decltype(x)> ? nullptr : static_cast<const void*>(std::addressof(x)))
#define LOOPSIM_PARENS ()
#define LOOPSIM_EXPAND(...) LOOPSIM_EXPAND3(LOOPSIM_EXPAND3(LOOPSIM_EXPAND3(LOOPSIM_EXPAND3(__VA_ARGS__))))
#define LOOPSIM_EXPAND3(...) LOOPSIM_EXPAND2(LOOPSIM_EXPAND2(LOOPSIM_EXPAND2(LOOPSIM_EXPAND2(__VA_ARGS__))))
#define LOOPSIM_EXPAND2(...) LOOPSIM_EXPAND1(LOOPSIM_EXPAND1(LOOPSIM_EXPAND1(LOOPSIM_EXPAND1(__VA_ARGS__))))
#define LOOPSIM_EXPAND1(...) __VA_ARGS__
#define LOOPSIM_ADDRESSES(...) __VA_OPT__(LOOPSIM_EXPAND(LOOPSIM_ADDRESSES_STEP(__VA_ARGS__)))
#define LOOPSIM_ADDRESSES_STEP(x, ...) LOOPSIM_AT(x) __VA_OPT__(, LOOPSIM_ADDRESSES_AGAIN LOOPSIM_PARENS(__VA_ARGS__))
#define LOOPSIM_ADDRESSES_AGAIN() LOOPSIM_ADDRESSES_STEP
#define LOOPSIM_BIND(...)  \
  const auto& [__VA_ARGS__] = s; \
  return std::array<const void*, N>{LOOPSIM_ADDRESSES(__VA_ARGS__)}
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
  else if constexpr (N == 49) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33, a34, a35, a36, a37, a38, a39, a40, a41, a42, a43, a44, a45, a46, a47, a48); }
  else if constexpr (N == 50) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33, a34, a35, a36, a37, a38, a39, a40, a41, a42, a43, a44, a45, a46, a47, a48, a49); }
  else if constexpr (N == 51) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33, a34, a35, a36, a37, a38, a39, a40, a41, a42, a43, a44, a45, a46, a47, a48, a49, a50); }
  else if constexpr (N == 52) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33, a34, a35, a36, a37, a38, a39, a40, a41, a42, a43, a44, a45, a46, a47, a48, a49, a50, a51); }
  else if constexpr (N == 53) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33, a34, a35, a36, a37, a38, a39, a40, a41, a42, a43, a44, a45, a46, a47, a48, a49, a50, a51, a52); }
  else if constexpr (N == 54) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33, a34, a35, a36, a37, a38, a39, a40, a41, a42, a43, a44, a45, a46, a47, a48, a49, a50, a51, a52, a53); }
  else if constexpr (N == 55) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33, a34, a35, a36, a37, a38, a39, a40, a41, a42, a43, a44, a45, a46, a47, a48, a49, a50, a51, a52, a53, a54); }
  else if constexpr (N == 56) { LOOPSIM_BIND(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33, a34, a35, a36, a37, a38, a39, a40, a41, a42, a43, a44, a45, a46, a47, a48, a49, a50, a51, a52, a53, a54, a55); }
  // clang-format on
#undef LOOPSIM_BIND
#undef LOOPSIM_ADDRESSES_AGAIN
#undef LOOPSIM_ADDRESSES_STEP
#undef LOOPSIM_ADDRESSES
#undef LOOPSIM_EXPAND1
#undef LOOPSIM_EXPAND2
#undef LOOPSIM_EXPAND3
#undef LOOPSIM_EXPAND
#undef LOOPSIM_PARENS
#undef LOOPSIM_AT
}

}  // namespace loopsim::state
