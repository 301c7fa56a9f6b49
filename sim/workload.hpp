// What a [[clients]] group sends, apart from who carries it: the requests' bytes, the answers'
// framing, the connection times, the paths a mix draws. The simulated clients (sim/clients.cpp)
// and the live probe (probe/) both take them from here, so that one scenario is the same
// workload in both, draw for draw.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/assert.hpp"
#include "realloop/state.hpp"
#include "scenario/scenario.hpp"

namespace loopsim::sim {

// What PathQueue keeps once something is sent: the paths, and the first not answered.
struct SentPaths {
  std::vector<std::string> items;
  std::size_t head = 0;
  static constexpr auto state_fields =
      state::fields(state::f::value<&SentPaths::items>, state::f::value<&SentPaths::head>);
};

// The paths a client sent and has no answer to yet, oldest first. A vector and the index of its
// head, compacted once everything is answered (or the answered part is most of it): a std::deque
// would allocate 576 bytes for every client, even one that never sends.
class PathQueue {
 public:
  void push(const std::string& path) { sent_.get([] { return SentPaths{}; }).items.push_back(path); }
  bool empty() const { return !sent_ || sent_->head == sent_->items.size(); }
  // The oldest, taken off ("?" when there is none: an answer to nothing asked).
  std::string pop() {
    if (empty()) return "?";
    SentPaths& q = *sent_;  // made: something was sent
    std::string path = std::move(q.items[q.head++]);
    if (empty()) {
      q.items.clear();
      q.head = 0;
    } else if (q.head >= 32 && q.head * 2 >= q.items.size()) {
      q.items.erase(q.items.begin(), q.items.begin() + std::ptrdiff_t(q.head));
      q.head = 0;
    }
    return path;
  }

 private:
  // Made at the first send: an idle client, one of a million held, keeps a pointer.
  state::Lazy<SentPaths> sent_;

 public:
  static constexpr auto state_fields = state::fields(state::f::value<&PathQueue::sent_>);
  friend struct state::Access;
};

// One request of `group` for `path`, as bytes; `close` asks Connection: close.
std::string request_text(const std::string& path, bool close, const ClientGroup& group);

// One answer at the front of `input` (framed by its Content-Length): its length, with its status
// in `status`, or 0 while it is incomplete, or answer_malformed when it cannot be framed: a
// status line that is not "HTTP/1.x NNN" with NNN from 100, a Content-Length that is not a number of at most 18
// digits, two that differ, a head longer than answer_head_max without its end, or a head that
// breaks what RFC 9110 asks of every answer and a client can see: Content-Length in a 1xx or a
// 204 (§8.6), a 405 without Allow (§15.5.6). Header names are matched without regard to case.
inline constexpr std::size_t answer_malformed = SIZE_MAX;
inline constexpr std::size_t answer_head_max = 64 * 1024;
std::size_t parse_answer(std::string_view input, int& status);

// Answers framed as their bytes arrive, holding at most one head or line (answer_head_max)
// and never a body: a reader of a live server whose answers may be endless. By the group's
// framing (ClientGroup::Framing):
// - HTTP, by the rules of parse_answer, with a chunked body read to its last chunk and trailer.
//   An interim answer (1xx but 101, such as 100 Continue) is taken and not counted;
// - a terminator: everything up to and with it;
// - a length: that many bytes;
// - RESP (2 and 3): one value, an aggregate with all its elements.
// What does not frame is kept, its first unframed_kept bytes, for the report.
class AnswerParser {
 public:
  enum class Step : std::uint8_t { more, answer, malformed };
  AnswerParser() = default;
  // `group` outlives the stream: its framing is read from it, not copied into every client's.
  explicit AnswerParser(const ClientGroup& group) : group_(&group) {}
  // Takes bytes from the front of `bytes` up to the end of one answer: `answer` (its status in
  // `status`, the rest of `bytes` left for the next call), `more` once all of `bytes` is taken
  // with the answer not yet whole, or `malformed` from the first byte that cannot be framed on
  // (every call after that too).
  Step next(std::string_view& bytes, int& status);
  // Whether the last answer said `Connection: close`: the server will take no more requests.
  bool closes() const { return closes_; }
  // The first bytes of the answer not framed yet, or of the one that could not be: what a
  // report shows of an answer that never came whole.
  const std::string& unframed() const { return seen_; }
  bool broken() const { return broken_; }
  static constexpr std::size_t unframed_kept = 64;

 private:
  Step next_http(std::string_view& bytes, int& status);
  Step http_body(std::string_view& bytes);  // the body after a head: counted, or chunked
  Step next_terminated(std::string_view& bytes, int& status);
  Step next_sized(std::string_view& bytes, int& status);
  Step next_resp(std::string_view& bytes, int& status);
  Step next_mqtt(std::string_view& bytes, int& status);
  Step next_prefixed(std::string_view& bytes, int& status);
  // After a header (MQTT's, prefix32's) said body_left_: takes the body, and ends the answer.
  Step packet_body(std::string_view& bytes, int& status);
  // A line ending in CRLF, gathered in head_: true once whole (head_ then holds it, without
  // its CRLF), false when `bytes` ran out first. Breaks the stream on one past answer_head_max.
  bool take_line(std::string_view& bytes);
  Step broke(std::string_view& bytes);
  void saw(std::string_view taken);

  // The group's framing (HTTP without a group), its terminator, its answers' length.
  ClientGroup::Framing framing() const { return group_ != nullptr ? group_->framing : ClientGroup::Framing::http; }
  const std::string& terminator() const { return group_->terminator; }
  std::uint64_t length() const { return std::uint64_t(group_->answer_bytes); }

  enum class Chunk : std::uint8_t { none, size, data, data_end, trailer };
  const ClientGroup* group_ = nullptr;
  std::string head_;  // the current answer's head (or line) so far
  std::uint64_t body_left_ = 0;
  std::uint64_t taken_ = 0;            // the current answer's bytes so far (terminator, length)
  std::vector<std::int64_t> pending_;  // RESP: elements still to come at each open aggregate
  std::string seen_;
  int status_ = 0;
  bool in_body_ = false;
  bool broken_ = false;
  bool closes_next_ = false;  // the answer whose body is coming said close
  bool closes_ = false;
  Chunk chunk_ = Chunk::none;
  bool connack_ = false;  // MQTT: the packet in hand is a CONNACK, whose second byte is its code

 public:
  // Skipped: the group, whose framing is fixed for the run.
  static constexpr auto state_fields = state::fields(
      state::f::skip<&AnswerParser::group_>, state::f::value<&AnswerParser::head_>,
      state::f::value<&AnswerParser::body_left_>, state::f::value<&AnswerParser::taken_>,
      state::f::value<&AnswerParser::pending_>, state::f::value<&AnswerParser::seen_>,
      state::f::value<&AnswerParser::status_>, state::f::value<&AnswerParser::in_body_>,
      state::f::value<&AnswerParser::broken_>, state::f::value<&AnswerParser::closes_next_>,
      state::f::value<&AnswerParser::closes_>, state::f::value<&AnswerParser::chunk_>,
      state::f::value<&AnswerParser::connack_>);
  friend struct state::Access;
};

// A client's answer stream: its parser, made at the first bytes that come (an idle keep-alive
// client, one of a million held, costs two pointers here, not the parser's 128 bytes).
class AnswerStream {
 public:
  using Step = AnswerParser::Step;
  static constexpr std::size_t unframed_kept = AnswerParser::unframed_kept;
  AnswerStream() = default;
  // `group` outlives the stream (see AnswerParser).
  explicit AnswerStream(const ClientGroup& group) : group_(&group) {}
  Step next(std::string_view& bytes, int& status) {
    return parser_.get([this] { return group_ != nullptr ? AnswerParser(*group_) : AnswerParser(); }).next(bytes, status);
  }
  bool closes() const { return parser_ && parser_->closes(); }
  const std::string& unframed() const { return parser_ ? parser_->unframed() : no_bytes; }
  bool broken() const { return parser_ && parser_->broken(); }

 private:
  static inline const std::string no_bytes;
  const ClientGroup* group_ = nullptr;
  state::Lazy<AnswerParser> parser_;

 public:
  // Skipped: the group, as the parser's.
  static constexpr auto state_fields =
      state::fields(state::f::skip<&AnswerStream::group_>, state::f::value<&AnswerStream::parser_>);
  friend struct state::Access;
};

// The connection windows of a group's members, in member order: connect_at's window, shifted
// evenly at `rate`, or by a Poisson process at `rate` (exponential gaps drawn from the seed).
// The first member's is connect_at.
class Arrivals {
 public:
  Arrivals(const ClientGroup& group, std::uint64_t seed, std::int32_t group_index);
  Window next(int member);

 private:
  const ClientGroup& group_;
  std::uint64_t state_;
  unsigned __int128 elapsed_ = 0;  // since connect_at, in 2^-30 ns
};

// -ln(1 - u / 2^53) for u < 2^53, in 2^-62 units: an exponential draw of mean 1 from 53 random
// bits, in integer arithmetic only (no libm), so that every machine draws the same gaps.
// Accurate to a few units of 2^-62 (a test compares it with log1p).
unsigned __int128 exponential_q62(std::uint64_t u);

// Where a happening of a workload is, for its own draw from a window (model::draw_instant): a
// member's connection, or its request number `request`.
enum class Drawn : std::uint8_t { connect, request, fault, post, action };
std::uint64_t draw_salt(Drawn what, std::int64_t a, std::int64_t b = 0, std::int64_t c = 0);
// The instant a run takes in `window` for the happening `salt` names, from the scenario's seed.
inline Instant drawn_instant(const Window& window, std::uint64_t seed, std::uint64_t salt) {
  const Instant at = model::draw_instant(window, seed, salt);
  LOOPSIM_ASSERT(at >= window.lo && at <= window.hi);  // an instant of the window, its ends included
  return at;
}

// The requests a client of `group` sends at most: its script's, or a closed loop's count
// (SIZE_MAX when only a duration bounds it).
std::size_t request_limit(const ClientGroup& group);

// A slow reader's share every read_tick: read_rate / 100 bytes, at least one.
inline constexpr Duration read_tick = std::chrono::milliseconds(10);
inline std::int64_t read_share(const ClientGroup& group) { return std::max<std::int64_t>(1, group.read_rate / 100); }

// Whether a client of `group` that has sent `sent` requests sends another at `now`: a closed
// loop while under its count and before its deadline (if it has one); a script, while its list lasts.
bool sends_more(const ClientGroup& group, std::size_t sent, std::optional<Instant> deadline, Instant now);

// The state of client `client`'s path draws (0 when its group has no mix to draw from).
std::uint64_t path_draws(const ClientGroup& group, std::uint64_t seed, std::int32_t client);

// A closed loop's next path: `path`, or one drawn from `paths` by weight, advancing `draws`.
const std::string& next_path(const ClientGroup& group, std::uint64_t& draws);

}  // namespace loopsim::sim
