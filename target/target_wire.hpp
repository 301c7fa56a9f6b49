// The messages between loopsim and a target's process (docs/targets.md). One stream socket;
// each message is a type byte, a 32-bit length and that many bytes. The target's process runs
// the simulation itself, on its side of the POSIX seam; loopsim sends it the scenario and
// answers its choices, and gets back step reports and the trace.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace loopsim::sim::wire {

enum class Type : std::uint8_t {
  // loopsim -> target
  start = 'S',   // mode, arm, file name, then the scenario's text, each ended by '\n' but the last
  step = 'T',    // run the next step, report it
  finish = 'F',  // run to the horizon, send the trace
  pick = 'P',    // u32: the answer to a choose
  // target -> loopsim
  choose = 'C',  // u8 kind, u32 options
  report = 'R',  // a step's report (Report below)
  trace = 'J',   // u64 passes, u64 steps, then the trace (trace/trace_codec.hpp)
  error = 'E',   // u8 Failure, then a message: the run cannot go on
};

enum class Failure : std::uint8_t {
  bad_input = 0,  // the scenario or the program cannot be run as asked (exit 2)
};

// What a step left: as explore::Execution tells it.
struct Report {
  std::uint8_t stepped = 0;
  std::uint8_t backlog = 0;
  std::uint8_t quiescent = 0;
  std::uint64_t digest = 0;
  std::uint64_t accepted = 0;
  std::int64_t now = 0;
};

// Appends a value's bytes; reads one back from `at`, moving it on.
template <typename T>
void put(std::string& out, const T& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}
template <typename T>
T get(std::string_view in, std::size_t& at) {
  T value{};
  if (at + sizeof value <= in.size()) std::memcpy(&value, in.data() + at, sizeof value);
  at += sizeof value;
  return value;
}

inline std::string encode(const Report& r) {
  std::string out;
  put(out, r.stepped);
  put(out, r.backlog);
  put(out, r.quiescent);
  put(out, r.digest);
  put(out, r.accepted);
  put(out, r.now);
  return out;
}
inline Report decode_report(std::string_view in) {
  std::size_t at = 0;
  Report r;
  r.stepped = get<std::uint8_t>(in, at);
  r.backlog = get<std::uint8_t>(in, at);
  r.quiescent = get<std::uint8_t>(in, at);
  r.digest = get<std::uint64_t>(in, at);
  r.accepted = get<std::uint64_t>(in, at);
  r.now = get<std::int64_t>(in, at);
  return r;
}

struct Message {
  Type type;
  std::string body;
};

// What loopsim takes from a target, which may send anything: a body at most this long (a trace
// at trace_events_max is a few hundred megabytes), and only the types a target sends.
inline constexpr std::uint32_t body_max = std::uint32_t(1) << 30;
bool sent_by_target(Type type);

// One message from the front of `in`, taken off it: nullopt while it is not all there. Throws
// std::runtime_error for a frame no target sends (its type, or a body over body_max).
std::optional<Message> take_message(std::string_view& in);

// A choose's body: the kind (below `kinds`, the number there are) and 2 or more options, or
// nullopt for one that is not a choice.
struct Choose {
  std::uint8_t kind;
  std::uint32_t options;
};
std::optional<Choose> decode_choose(std::string_view body, std::uint8_t kinds);

// Blocking; false when the peer is gone (or sent a broken message).
bool send(int fd, Type type, std::string_view body);
// An `error` message: the failure's byte, then the message.
bool send_failure(int fd, Failure failure, std::string_view message);
// Throws std::runtime_error as take_message does, for a message from a target; from loopsim (as
// a target's process reads), any type.
enum class From : std::uint8_t { target, loopsim };
std::optional<Message> receive(int fd, From from = From::target);

}  // namespace loopsim::sim::wire
