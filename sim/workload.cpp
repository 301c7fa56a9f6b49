#include "sim/workload.hpp"

#include <charconv>
#include <bit>
#include <optional>
#include <utility>

#include "base/assert.hpp"
#include "model/choice.hpp"
#include "realloop/http.hpp"

namespace loopsim::sim {

namespace {

constexpr std::string_view content_length = "Content-Length: ";

constexpr std::uint64_t q62 = std::uint64_t(1) << 62;
// ln 2 in 2^-62 units, rounded: 0.693147180559945309417232121458176568... x 2^62.
constexpr std::uint64_t ln2_q62 = 3196577161300663915ull;

}  // namespace

std::string request_text(const std::string& path, bool close, const ClientGroup& group) {
  if (group.raw) return path;  // bytes, sent as written
  // One allocation for the usual request: the head's lines and a Content-Length's.
  std::string text;
  text.reserve(64 + path.size() + (group.body > 0 ? std::size_t(group.body) : 0));
  text.append("GET ").append(path).append(" HTTP/1.1\r\nHost: loopsim\r\n");
  if (close) text += "Connection: close\r\n";
  switch (group.stall) {
    case ClientGroup::Stall::none:
      if (group.body > 0) {
        text += "Content-Length: " + std::to_string(group.body) + "\r\n\r\n";
        text.append(std::size_t(group.body), 'b');
      } else {
        text += "\r\n";
      }
      break;
    case ClientGroup::Stall::head: break;  // the head's end never comes
    case ClientGroup::Stall::body: text += "Content-Length: 64\r\n\r\n0123456789abcdef"; break;
  }
  return text;
}

namespace {

// The head input[0, head_end) of an answer: its status, and its body's length (0 when it names
// none), or nullopt when it cannot be framed.
std::string_view trimmed(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  return value;
}

// Whether a Transfer-Encoding's value ends in "chunked" (RFC 9112 §6.1: it must be the last).
bool ends_chunked(std::string_view value) {
  value = trimmed(value);
  const std::size_t comma = value.rfind(',');
  if (comma != std::string_view::npos) value = trimmed(value.substr(comma + 1));
  return http::iequals(value, "chunked");
}

std::optional<std::size_t> frame_head(std::string_view head, int& status, bool* close = nullptr,
                                      bool* chunked = nullptr) {
  // "HTTP/1.1 200 ...": the version, a space, three digits.
  if (head.size() < 12 || head.substr(0, 7) != "HTTP/1." || head[8] != ' ') return std::nullopt;
  for (std::size_t i = 9; i < 12; ++i) {
    if (head[i] < '0' || head[i] > '9') return std::nullopt;
  }
  if (head.size() > 12 && head[12] != ' ' && head[12] != '\r') return std::nullopt;
  status = (head[9] - '0') * 100 + (head[10] - '0') * 10 + (head[11] - '0');
  if (status < 100) return std::nullopt;  // RFC 9110 §15: the first digit is the class, 1 to 5
  std::optional<std::size_t> body;
  bool allow = false, transfer_encoding = false;
  for (std::size_t at = head.find("\r\n"); at != std::string_view::npos;) {
    std::size_t start = at + 2, end = head.find("\r\n", start);
    std::string_view line = head.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    at = end;
    std::size_t colon = line.find(':');
    if (colon == 5 && http::iequals(line.substr(0, 5), "allow")) allow = true;
    if (colon == 17 && http::iequals(line.substr(0, 17), "transfer-encoding")) {
      transfer_encoding = true;
      if (chunked != nullptr && ends_chunked(line.substr(18))) *chunked = true;
      continue;
    }
    if (close != nullptr && colon == 10 && http::iequals(line.substr(0, 10), "connection")) {
      std::string_view value = line.substr(11);
      while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
      while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
      if (http::iequals(value, "close")) *close = true;
      continue;
    }
    if (colon != content_length.size() - 2) continue;  // "Content-Length: " less ": "
    if (!http::iequals(line.substr(0, colon), content_length.substr(0, colon))) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    if (value.empty() || value.size() > 18) return std::nullopt;
    std::size_t n = 0;
    auto [end_of_number, error] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (error != std::errc() || end_of_number != value.data() + value.size()) return std::nullopt;
    if (body && *body != n) return std::nullopt;  // two lengths that differ
    body = n;
  }
  // What RFC 9110 and 9112 ask of every answer that a client can see in its head (docs/http.md's
  // table): no Content-Length in a 1xx or a 204 (9110 §8.6), nor Transfer-Encoding (9112 §6.1);
  // no Content-Length beside Transfer-Encoding (9112 §6.2); Allow in a 405 (9110 §15.5.6).
  const bool no_content = (status >= 100 && status < 200) || status == 204;
  if ((body || transfer_encoding) && no_content) return std::nullopt;
  if (body && transfer_encoding) return std::nullopt;
  if (status == 405 && !allow) return std::nullopt;
  return body.value_or(0);
}

}  // namespace

namespace {

// A chunk's size line (RFC 9112 §7.1: hex digits, extensions after ';'), or nullopt.
std::optional<std::uint64_t> chunk_size(std::string_view line) {
  std::string_view digits = trimmed(line.substr(0, line.find(';')));
  std::uint64_t size = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), size, 16);
  if (digits.empty() || digits.size() > 15 || error != std::errc() || end != digits.data() + digits.size())
    return std::nullopt;
  return size;
}

// The line at `at` of `input`, as AnswerParser::take_line reads one: its end (the CRLF's
// index), 0 while incomplete, or answer_malformed past answer_head_max.
std::size_t line_end(std::string_view input, std::size_t at) {
  const std::size_t end = input.find("\r\n", at);
  if (end == std::string_view::npos) return input.size() - at > answer_head_max ? answer_malformed : 0;
  return end - at > answer_head_max ? answer_malformed : end;
}

// A chunked body at `at` of `input`: the index just past its trailer's empty line, 0 while
// incomplete, or answer_malformed; by AnswerStream's rules, so that the two agree.
std::size_t chunked_end(std::string_view input, std::size_t at) {
  for (;;) {
    std::size_t end = line_end(input, at);
    if (end == 0 || end == answer_malformed) return end;
    std::optional<std::uint64_t> size = chunk_size(input.substr(at, end - at));
    if (!size) return answer_malformed;
    at = end + 2;
    if (*size == 0) break;
    if (input.size() - at < *size) return 0;
    at += std::size_t(*size);
    end = line_end(input, at);  // what follows the data: an empty line
    if (end == 0 || end == answer_malformed) return end;
    if (end != at) return answer_malformed;
    at = end + 2;
  }
  for (;;) {  // the trailer, to its empty line
    std::size_t end = line_end(input, at);
    if (end == 0 || end == answer_malformed) return end;
    if (end == at) return at + 2;
    at = end + 2;
  }
}

}  // namespace

std::size_t parse_answer(std::string_view input, int& status) {
  auto head_end = input.find("\r\n\r\n");
  if (head_end == std::string_view::npos) return input.size() > answer_head_max ? answer_malformed : 0;
  if (head_end > answer_head_max) return answer_malformed;
  bool chunked = false;
  std::optional<std::size_t> body = frame_head(input.substr(0, head_end), status, nullptr, &chunked);
  if (!body) return answer_malformed;
  if (chunked) return chunked_end(input, head_end + 4);
  std::size_t total = head_end + 4 + *body;
  return input.size() >= total ? total : 0;
}

void AnswerParser::saw(std::string_view taken) {
  if (seen_.size() < unframed_kept) seen_.append(taken.substr(0, unframed_kept - seen_.size()));
}

AnswerParser::Step AnswerParser::broke(std::string_view& bytes) {
  broken_ = true;
  head_.clear();
  bytes = {};
  return Step::malformed;
}

bool AnswerParser::take_line(std::string_view& bytes) {
  const std::size_t had = head_.size();
  const std::size_t room = answer_head_max + 2 - std::min(had, answer_head_max + 2);
  head_.append(bytes.substr(0, room));
  const std::size_t end = head_.find("\r\n", had == 0 ? 0 : had - 1);
  if (end == std::string::npos) {
    bytes.remove_prefix(std::min(bytes.size(), room));
    if (head_.size() > answer_head_max) broken_ = true;
    return false;
  }
  bytes.remove_prefix(end + 2 - had);
  head_.resize(end);
  return true;
}

AnswerParser::Step AnswerParser::next(std::string_view& bytes, int& status) {
  if (broken_) {
    bytes = {};
    return Step::malformed;
  }
  const std::string_view before = bytes;
  Step step = Step::more;
  switch (framing()) {
    case ClientGroup::Framing::http: step = next_http(bytes, status); break;
    case ClientGroup::Framing::terminator: step = next_terminated(bytes, status); break;
    case ClientGroup::Framing::length: step = next_sized(bytes, status); break;
    case ClientGroup::Framing::resp: step = next_resp(bytes, status); break;
    case ClientGroup::Framing::mqtt: step = next_mqtt(bytes, status); break;
    case ClientGroup::Framing::prefix32: step = next_prefixed(bytes, status); break;
  }
  // A step only takes bytes, from the front: what is left is the tail of what came.
  LOOPSIM_ASSERT(bytes.empty() || (bytes.size() <= before.size() && bytes.data() + bytes.size() == before.data() + before.size()));
  // An answer takes at least a byte; a step that wants more took all it was given.
  LOOPSIM_ASSERT(step != Step::answer || bytes.size() < before.size());
  LOOPSIM_ASSERT(step != Step::more || bytes.empty());
  // What this call took: kept (the first bytes) while the answer is not whole.
  if (step == Step::answer) {
    seen_.clear();
  } else {
    saw(before.substr(0, before.size() - bytes.size()));
    if (step == Step::malformed) saw(bytes);
  }
  return step;
}

AnswerParser::Step AnswerParser::next_http(std::string_view& bytes, int& status) {
  if (!in_body_) {
    const std::size_t had = head_.size();
    const std::size_t room = answer_head_max + 4 - had;
    head_.append(bytes.substr(0, room));
    const std::size_t end = head_.find("\r\n\r\n", had < 3 ? 0 : had - 3);
    if (end == std::string::npos) {
      bytes.remove_prefix(std::min(bytes.size(), room));
      if (head_.size() <= answer_head_max) return Step::more;
      return broke(bytes);  // a head longer than any answer's
    }
    bytes.remove_prefix(end + 4 - had);  // what the head took of this read; the rest is body or the next answer
    closes_next_ = false;
    bool chunked = false;
    std::optional<std::size_t> body =
        end > answer_head_max ? std::nullopt
                              : frame_head(std::string_view(head_).substr(0, end), status_, &closes_next_, &chunked);
    head_.clear();
    if (!body) return broke(bytes);
    LOOPSIM_ASSERT(!chunked || *body == 0);  // a chunked answer's length is its chunks'
    body_left_ = chunked ? 0 : *body;
    chunk_ = chunked ? Chunk::size : Chunk::none;
    in_body_ = true;
  }
  Step body = http_body(bytes);
  if (body != Step::answer) return body;
  in_body_ = false;
  if (status_ >= 100 && status_ < 200 && status_ != 101) return bytes.empty() ? Step::more : next_http(bytes, status);  // interim
  status = status_;
  closes_ = closes_next_;
  return Step::answer;
}

// RFC 9112 §7.1: chunks of a hex size (extensions after ';' ignored), each followed by CRLF; a
// last chunk of size 0; trailer lines up to an empty one.
AnswerParser::Step AnswerParser::http_body(std::string_view& bytes) {
  for (;;) {
    if (chunk_ == Chunk::none || chunk_ == Chunk::data) {
      const std::size_t take = std::size_t(std::min<std::uint64_t>(body_left_, bytes.size()));
      bytes.remove_prefix(take);
      body_left_ -= take;
      if (body_left_ > 0) return Step::more;
      if (chunk_ == Chunk::none) return Step::answer;
      chunk_ = Chunk::data_end;
      continue;
    }
    if (!take_line(bytes)) return broken_ ? broke(bytes) : Step::more;
    const std::string line = std::exchange(head_, std::string());
    switch (chunk_) {
      case Chunk::size: {
        std::optional<std::uint64_t> size = chunk_size(line);
        if (!size) return broke(bytes);
        body_left_ = *size;
        chunk_ = *size == 0 ? Chunk::trailer : Chunk::data;
        break;
      }
      case Chunk::data_end:
        if (!line.empty()) return broke(bytes);  // the chunk was longer than it said
        chunk_ = Chunk::size;
        break;
      case Chunk::trailer:
        if (line.empty()) {
          chunk_ = Chunk::none;
          return Step::answer;
        }
        break;
      default: break;
    }
  }
}

AnswerParser::Step AnswerParser::next_terminated(std::string_view& bytes, int& status) {
  // head_ keeps the terminator's length less one of what came last, so that one split across
  // two reads is found.
  const std::size_t keep = terminator().size() - 1;
  const std::size_t had = head_.size();
  head_.append(bytes);
  const std::size_t end = head_.find(terminator());
  if (end == std::string::npos) {
    taken_ += bytes.size();
    bytes = {};
    if (head_.size() > keep) head_.erase(0, head_.size() - keep);
    return Step::more;
  }
  bytes.remove_prefix(end + terminator().size() - had);
  head_.clear();
  taken_ = 0;
  status = 200;
  return Step::answer;
}

AnswerParser::Step AnswerParser::next_sized(std::string_view& bytes, int& status) {
  const std::size_t take = std::size_t(std::min<std::uint64_t>(length() - taken_, bytes.size()));
  bytes.remove_prefix(take);
  taken_ += take;
  if (taken_ < length()) return Step::more;
  taken_ = 0;
  status = 200;
  return Step::answer;
}

// MQTT 3.1.1 and 5.0 (section 2.2 of both): a byte of packet type and flags, then the Remaining
// Length in one to four bytes, seven bits each, least significant first, the eighth bit saying
// another follows; then that many bytes. A fifth length byte is malformed. A CONNACK whose code
// (its second byte: 3.1.1's return code, 5.0's reason code) is not 0 refuses: status 500.
AnswerParser::Step AnswerParser::next_mqtt(std::string_view& bytes, int& status) {
  while (!in_body_) {
    if (bytes.empty()) return Step::more;
    head_ += bytes.front();
    bytes.remove_prefix(1);
    if (head_.size() == 1) continue;
    if ((static_cast<unsigned char>(head_.back()) & 0x80) != 0) {
      if (head_.size() == 5) return broke(bytes);
      continue;
    }
    std::uint64_t length = 0;
    for (std::size_t i = head_.size() - 1; i >= 1; --i) length = length << 7 | (static_cast<unsigned char>(head_[i]) & 0x7f);
    connack_ = (static_cast<unsigned char>(head_[0]) & 0xf0) == 0x20;
    head_.clear();
    body_left_ = length;
    in_body_ = true;
    taken_ = 0;
    status_ = 200;
  }
  if (connack_ && taken_ < 2 && taken_ + std::min<std::uint64_t>(body_left_, bytes.size()) >= 2) {
    if (bytes[std::size_t(1 - taken_)] != 0) status_ = 500;
  }
  return packet_body(bytes, status);
}

// prefix32: a 4-byte big-endian length, then that many bytes.
AnswerParser::Step AnswerParser::next_prefixed(std::string_view& bytes, int& status) {
  if (!in_body_) {
    const std::size_t take = std::min<std::size_t>(4 - head_.size(), bytes.size());
    head_.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
    if (head_.size() < 4) return Step::more;
    std::uint64_t length = 0;
    for (char b : head_) length = length << 8 | static_cast<unsigned char>(b);
    head_.clear();
    body_left_ = length;
    in_body_ = true;
    taken_ = 0;
    status_ = 200;
  }
  return packet_body(bytes, status);
}

AnswerParser::Step AnswerParser::packet_body(std::string_view& bytes, int& status) {
  const std::size_t take = std::size_t(std::min<std::uint64_t>(body_left_, bytes.size()));
  bytes.remove_prefix(take);
  body_left_ -= take;
  taken_ += take;
  if (body_left_ > 0) return Step::more;
  in_body_ = false;
  connack_ = false;
  taken_ = 0;
  status = status_;
  return Step::answer;
}

// RESP2 and RESP3 (https://redis.io/docs/reference/protocol-spec/): a value is a line of a type
// byte and text; bulk kinds ($ ! =) then carry that many bytes and a CRLF; aggregates (* ~ >)
// that many values, a map (%) twice that many. A length of -1 is a null.
AnswerParser::Step AnswerParser::next_resp(std::string_view& bytes, int& status) {
  for (;;) {
    if (body_left_ > 0) {
      const std::size_t take = std::size_t(std::min<std::uint64_t>(body_left_, bytes.size()));
      bytes.remove_prefix(take);
      body_left_ -= take;
      if (body_left_ > 0) return Step::more;
    } else {
      if (!take_line(bytes)) return broken_ ? broke(bytes) : Step::more;
      const std::string line = std::exchange(head_, std::string());
      if (line.empty()) return broke(bytes);
      const char type = line[0];
      const bool top = pending_.empty();
      if (top) status_ = 200;
      std::int64_t n = 0;
      const bool bulk = type == '$' || type == '!' || type == '=';
      const bool aggregate = type == '*' || type == '~' || type == '>' || type == '%';
      if (bulk || aggregate) {
        auto [end, error] = std::from_chars(line.data() + 1, line.data() + line.size(), n);
        if (line.size() < 2 || error != std::errc() || end != line.data() + line.size() || n < -1 ||
            n > std::int64_t(1) << 40)
          return broke(bytes);
      } else if (std::string_view("+-:_#,(").find(type) == std::string_view::npos) {
        return broke(bytes);
      }
      if (top && (type == '-' || type == '!')) status_ = 500;
      if (bulk && n >= 0) {
        body_left_ = std::uint64_t(n) + 2;
        continue;
      }
      if (aggregate && n > 0) {
        pending_.push_back(type == '%' ? 2 * n : n);
        continue;
      }
    }
    // A value ended: it counts toward the aggregate it is in, which may end with it.
    while (!pending_.empty() && --pending_.back() == 0) pending_.pop_back();
    if (pending_.empty()) {
      status = status_;
      return Step::answer;
    }
  }
}

Arrivals::Arrivals(const ClientGroup& group, std::uint64_t seed, std::int32_t group_index)
    : group_(group), state_(seed ^ (0xa0761d6478bd642full * std::uint64_t(group_index + 1))) {}

unsigned __int128 exponential_q62(std::uint64_t u) {
  // v = 2^53 - u in (0, 2^53] is 2^k (1 + f), f in [0, 1): -ln(v / 2^53) = (53 - k) ln 2 - ln(1 + f).
  const std::uint64_t v = (std::uint64_t(1) << 53) - u;
  const int k = std::bit_width(v) - 1;
  const std::uint64_t f = (v << (62 - k)) - q62;  // f in 2^-62 units
  // ln(1 + f) = 2 atanh(z), z = f / (2 + f) < 1/3: 2 (z + z^3/3 + z^5/5 + ...).
  using u128 = unsigned __int128;
  const std::uint64_t z = std::uint64_t((u128(f) << 62) / (u128(2) * q62 + f));
  const std::uint64_t z2 = std::uint64_t((u128(z) * z) >> 62);
  u128 sum = 0;
  std::uint64_t power = z;  // z^(2i+1)
  for (std::uint64_t i = 1; power != 0; i += 2) {
    sum += power / i;
    power = std::uint64_t((u128(power) * z2) >> 62);
  }
  return u128(53 - k) * ln2_q62 - 2 * sum;
}

Window Arrivals::next(int member) {
  if (group_.rate_milli <= 0) return group_.connect_at;
  using i128 = __int128;
  constexpr std::int64_t ns_per_ks = 1'000'000'000'000;  // a rate is per 1,000 s
  if (group_.arrivals == ClientGroup::Arrivals::uniform) {
    // member / rate, to the nearest nanosecond (halves up).
    const i128 twice = i128(member) * ns_per_ks * 2 / group_.rate_milli;
    return group_.connect_at.shifted(Duration(std::int64_t((twice + 1) / 2)));
  }
  if (member > 0) {
    // A gap of mean 1 / rate: the draw (2^-62) times 10^12 / rate_milli ns, kept in 2^-30 ns.
    const unsigned __int128 draw = exponential_q62(model::splitmix64(state_) >> 11);
    elapsed_ += (draw * ns_per_ks / std::uint64_t(group_.rate_milli)) >> 32;
  }
  return group_.connect_at.shifted(Duration(std::int64_t((elapsed_ + (1u << 29)) >> 30)));
}

std::uint64_t draw_salt(Drawn what, std::int64_t a, std::int64_t b, std::int64_t c) {
  std::uint64_t state = std::uint64_t(what) * 0x2545f4914f6cdd1dull;
  for (std::int64_t v : {a, b, c}) {
    state ^= std::uint64_t(v);
    state = model::splitmix64(state);
  }
  return state;
}

std::size_t request_limit(const ClientGroup& group) {
  if (!group.closed_loop()) return group.requests.size();
  return group.closed_requests > 0 ? std::size_t(group.closed_requests) : SIZE_MAX;
}

bool sends_more(const ClientGroup& group, std::size_t sent, std::optional<Instant> deadline, Instant now) {
  if (sent >= request_limit(group)) return false;
  return !group.closed_loop() || !deadline || now < *deadline;
}

std::uint64_t path_draws(const ClientGroup& group, std::uint64_t seed, std::int32_t client) {
  if (!group.closed_loop() || group.paths.size() < 2) return 0;
  return seed ^ (0xe7037ed1a0b428dbull * std::uint64_t(client + 1));
}

const std::string& next_path(const ClientGroup& group, std::uint64_t& draws) {
  if (group.paths.empty()) return group.path;
  if (group.paths.size() == 1) return group.paths.front().path;
  std::int64_t total = 0;
  for (const auto& p : group.paths) total += p.weight;
  auto pick = std::int64_t(model::splitmix64(draws) % std::uint64_t(total));
  for (const auto& p : group.paths) {
    if (pick < p.weight) return p.path;
    pick -= p.weight;
  }
  return group.paths.back().path;
}

}  // namespace loopsim::sim
