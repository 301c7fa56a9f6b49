#include "realloop/http.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>

namespace loopsim::http {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
           return lower(x) == lower(y);
         });
}

namespace {

constexpr std::int64_t slow_limit_ms = 60'000;  // a /slow request spends at most a minute
constexpr std::int64_t max_bytes = std::int64_t(1) << 24;  // /bytes?n=N answers at most 16 MiB

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool has_token(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    auto comma = list.find(',');
    if (iequals(trim(list.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

// Digits only: no sign (not even "-0"), no spaces, no list.
std::optional<std::int64_t> to_int(std::string_view s) {
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

bool valid_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return c > ' ' && c < 127 && c != ':' && c != '(' && c != ')';
  });
}

// Visible characters only: no space, no control, no DEL.
bool visible(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c > ' ' && c < 127; });
}

// Parses "METHOD SP TARGET SP HTTP-version" with single spaces (RFC 9112 §3) and sets the
// version's default keep-alive. HTTP/1.0 is 1.0; a higher 1.x is read as 1.1, the highest minor
// version the loop implements (RFC 9112 §2.3); another major version is `version` (505).
Parse parse_request_line(std::string_view line, Request& request) {
  auto sp1 = line.find(' ');
  if (sp1 == std::string_view::npos) return Parse::bad;
  auto sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return Parse::bad;
  request.method = line.substr(0, sp1);
  request.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  auto version = line.substr(sp2 + 1);
  if (!valid_token(request.method) || request.target.empty() || !visible(request.target)) return Parse::bad;
  // The path: origin-form as sent; absolute-form's after its authority (RFC 9112 §3.2.2: a
  // server must accept it, and the Host field is then not what names the resource); the
  // asterisk-form as "*" (RFC 9112 §3.2.4, OPTIONS only: here, 405).
  std::string_view path = request.target;
  if (path != "*" && path[0] != '/') {
    const auto scheme_end = path.find("://");
    if (scheme_end == std::string_view::npos || scheme_end == 0 ||
        !(iequals(path.substr(0, scheme_end), "http") || iequals(path.substr(0, scheme_end), "https")))
      return Parse::bad;
    const auto slash = path.find('/', scheme_end + 3);
    if (path.find_first_of("?#", scheme_end + 3) < slash) return Parse::bad;  // a query needs a path
    // No path: the root (RFC 9112 §3.2.2), an empty view at the target's end, so that every
    // view stays inside the buffer; the app serves no root either way (404).
    path = path.substr(slash == std::string_view::npos ? path.size() : slash);
  }
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  // HTTP-version = "HTTP/" DIGIT "." DIGIT (RFC 9112 §2.3), case-sensitive.
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || !digit(version[5]) || version[6] != '.' ||
      !digit(version[7]))
    return Parse::bad;
  if (version[5] != '1') return Parse::version;
  request.http10 = version[7] == '0';
  request.keep_alive = !request.http10;
  auto q = path.find('?');
  request.path = path.substr(0, q);
  request.query = q == std::string_view::npos ? std::string_view{} : path.substr(q + 1);
  return Parse::complete;
}

std::optional<std::string_view> query_value(std::string_view query, std::string_view key) {
  while (!query.empty()) {
    auto amp = query.find('&');
    auto pair = query.substr(0, amp);
    auto eq = pair.find('=');
    if (eq != std::string_view::npos && pair.substr(0, eq) == key) return pair.substr(eq + 1);
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

Response text(int status, std::string body) { return Response{status, std::move(body), false}; }

Response slow(const Request& request, Kernel& kernel) {
  auto ms = query_value(request.query, "ms");
  auto us = query_value(request.query, "us");
  if (ms.has_value() == us.has_value()) return text(400, "give exactly one of ms or us\n");
  auto n = to_int(ms ? *ms : *us);
  std::int64_t limit = ms ? slow_limit_ms : slow_limit_ms * 1000;
  if (!n || *n > limit) return text(400, "bad duration\n");
  kernel.spend(ms ? Duration(std::chrono::milliseconds(*n)) : Duration(std::chrono::microseconds(*n)));
  return text(200, "slow\n");
}

// Exactly n bytes of filler, for a reader that does not read.
Response bytes(const Request& request) {
  auto value = query_value(request.query, "n");
  auto n = value ? to_int(*value) : std::nullopt;
  if (!n || *n > max_bytes) return text(400, "bad byte count\n");
  Response response = text(200, "");
  response.filler = std::uint64_t(*n);
  return response;
}

// Line ends (RFC 9112 §2.2): a line ends in LF, with or without a CR before it. A bare LF is
// accepted as nginx accepts it, and so are heads that mix the two; a CR not followed by LF is
// invalid and the request is bad. Empty lines before the request line are skipped (§2.2), any
// number of them, but they count toward `max_head` like the head itself. The head ends at the
// first empty line after the request line: CRLF CRLF, LF LF, CRLF LF or LF CRLF.
//
// Finds the head in the first `max_head` bytes of `buffer`: sets `start` to its request line and
// `end` past the LF of its empty line. One pass over at most `max_head` bytes. Its answer for a
// prefix of a buffer agrees with its answer for the whole: bad and complete are decided by the
// bytes up to that point, too_large only once more than `max_head` bytes are there.
Parse find_head(std::string_view buffer, std::size_t max_head, std::size_t& start,
                std::size_t& end) {
  const std::size_t n = std::min(buffer.size(), max_head);
  std::size_t line_start = 0;
  bool in_head = false;  // the request line has been seen
  start = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const char c = buffer[i];
    if (c == '\r') {
      // A CR last in the buffer may yet be followed by LF: incomplete, not bad. A CR last of the
      // `max_head` bytes cannot end a line inside the limit whatever follows: too large.
      if (i + 1 < n && buffer[i + 1] != '\n') return Parse::bad;
      continue;
    }
    if (c != '\n') continue;
    const bool empty = i == line_start || (i == line_start + 1 && buffer[line_start] == '\r');
    if (empty && in_head) {
      end = i + 1;
      return Parse::complete;
    }
    if (empty) {
      start = i + 1;  // a leading empty line, skipped
    } else {
      in_head = true;
    }
    line_start = i + 1;
  }
  if (buffer.size() <= max_head) return Parse::incomplete;
  // Past the limit. If the request line itself has not ended, what is too long is its target
  // (RFC 9110 §4.1: 414); otherwise the fields are (431).
  const bool line_begun = std::any_of(buffer.begin() + std::ptrdiff_t(start), buffer.begin() + std::ptrdiff_t(n),
                                      [](char c) { return c != '\r' && c != '\n'; });
  return !in_head && line_begun ? Parse::target_too_long : Parse::too_large;
}

// The next line of a complete head, without its line end; `rest` moves past it.
std::string_view next_line(std::string_view& rest) {
  auto lf = rest.find('\n');  // there is one: the head ends in an empty line
  auto line = rest.substr(0, lf);
  rest.remove_prefix(lf + 1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

bool hex_digit(char c, std::uint64_t& value) {
  if (c >= '0' && c <= '9') value = std::uint64_t(c - '0');
  else if (c >= 'a' && c <= 'f') value = std::uint64_t(c - 'a' + 10);
  else if (c >= 'A' && c <= 'F') value = std::uint64_t(c - 'A' + 10);
  else return false;
  return true;
}

// One line of a chunked body, from `at`: CRLF-terminated (a bare LF, which a head may use, is
// bad inside the framing: a front end that read it otherwise would see another request). Sets
// `line` to it without the CRLF and `next` past it. Incomplete while no CRLF has come and fewer
// than `limit` bytes have; too_large once `limit` bytes have come without one; bad at a CR not
// followed by LF, or a LF not after a CR.
Parse framing_line(std::string_view buffer, std::size_t at, std::size_t limit, std::string_view& line,
                   std::size_t& next) {
  const std::size_t n = std::min(buffer.size(), at + limit);
  for (std::size_t i = at; i < n; ++i) {
    if (buffer[i] == '\n') return Parse::bad;
    if (buffer[i] != '\r') continue;
    if (i + 1 == buffer.size()) return Parse::incomplete;
    if (buffer[i + 1] != '\n') return Parse::bad;
    line = buffer.substr(at, i - at);
    next = i + 2;
    return Parse::complete;
  }
  return buffer.size() < at + limit ? Parse::incomplete : Parse::too_large;
}

// A chunk-size line (RFC 9112 §7.1), or the start of one: 1*HEXDIG, then any chunk extensions
// (`;name[=value]` after optional whitespace: visible characters, spaces and tabs; read and
// ignored, as §7.1.1 lets a recipient). Every start of a valid line is valid.
Parse chunk_size(std::string_view line, std::uint64_t& size) {
  size = 0;
  std::size_t i = 0;
  for (std::uint64_t digit = 0; i < line.size() && hex_digit(line[i], digit); ++i) {
    size = size * 16 + digit;
    if (size > max_content_length) return Parse::content_too_large;  // before it can overflow
  }
  if (i == 0) return Parse::bad;
  auto ext = line.substr(i);
  while (!ext.empty() && (ext.front() == ' ' || ext.front() == '\t')) ext.remove_prefix(1);
  if (!ext.empty() && ext.front() != ';') return Parse::bad;
  const bool printable = std::all_of(ext.begin(), ext.end(), [](char c) { return c == '\t' || (c >= ' ' && c < 127); });
  return printable ? Parse::complete : Parse::bad;
}

// A chunked body from `at` (RFC 9112 §7.1): chunks, the last chunk (size 0), a trailer section
// and the empty line. Sets `end` past it when complete; while incomplete, to the least it can
// be. A chunk-size line must fit in `max_line` bytes (400 past them), the trailer section in
// `max_head` (431 past them: they are fields); the sizes sum to at most max_content_length (413
// past it). Trailer fields are checked as field lines and ignored (§7.1.2: a recipient may
// discard them). Decides as find_head does: bad and complete by the bytes up to that point,
// whatever follows.
Parse chunked_body(std::string_view buffer, std::size_t at, std::size_t max_line, std::size_t max_head,
                   std::size_t& end) {
  std::uint64_t sum = 0;
  for (;;) {
    end = at + 5;  // at least "0\r\n\r\n" to come
    std::string_view line;
    std::size_t next = 0;
    std::uint64_t size = 0;
    // The size line's characters before its end decide before the end does: digits past the
    // limit are too large, or a character bad, whatever line end comes after them (or none yet).
    const std::string_view rest = buffer.substr(at, max_line);
    const std::string_view before_end = rest.substr(0, rest.find_first_of("\r\n"));
    const Parse read = before_end.empty() ? Parse::incomplete : chunk_size(before_end, size);
    if (read != Parse::complete && read != Parse::incomplete) return read;
    const Parse found = framing_line(buffer, at, max_line, line, next);
    if (found == Parse::incomplete) return found;
    // too_large: a chunk line past max_line; read incomplete: the line ended with no size in it.
    // (Complete, the line is before_end: its size is read once.)
    if (found != Parse::complete || read != Parse::complete) return Parse::bad;
    sum += size;
    if (sum > max_content_length) return Parse::content_too_large;
    if (size == 0) {
      at = next;
      break;
    }
    const std::size_t data_end = next + std::size_t(size);
    end = data_end + 2 + 5;
    if (buffer.size() < data_end + 2) {
      if (buffer.size() == data_end + 1 && buffer[data_end] != '\r') return Parse::bad;
      return Parse::incomplete;
    }
    if (buffer[data_end] != '\r' || buffer[data_end + 1] != '\n') return Parse::bad;
    at = data_end + 2;
  }
  // The trailer section: field lines, then the empty line, within max_head bytes in all.
  for (const std::size_t trailers = at;;) {
    end = at + 2;
    std::string_view line;
    const std::size_t room = max_head - std::min(max_head, at - trailers);
    if (auto found = framing_line(buffer, at, room, line, at); found != Parse::complete) return found;
    if (line.empty()) break;
    const auto colon = line.find(':');
    if (colon == std::string_view::npos || !valid_token(line.substr(0, colon)) ||
        line.find('\0') != std::string_view::npos)
      return Parse::bad;
  }
  end = at;
  return Parse::complete;
}

// RFC 9110 §13.2: If-Match and If-None-Match, evaluated for an answer that would be 2xx (any
// other answer ignores them, §13.2.1). The app's resources have no entity tags, so a list of
// tags never matches and "*" always does (every 2xx route names a current representation).
// If-Match false: 412 (§13.1.1). If-None-Match false: 304 for GET and HEAD, else 412 (§13.1.2).
void preconditions(const Request& request, Response& response) {
  if (response.status < 200 || response.status > 299) return;
  if (!request.if_match.empty() && request.if_match != "*") {
    response = text(412, "precondition failed\n");
  } else if (!request.if_none_match.empty() && request.if_none_match == "*") {
    const bool safe = request.method == "GET" || request.method == "HEAD";
    response = safe ? Response{304, response.body, false, response.filler} : text(412, "precondition failed\n");
  }
}

}  // namespace

Parse parse_request(std::string_view buffer, std::size_t max_head, Request& request) {
  request = Request{};
  std::size_t start = 0, end = 0;
  if (auto found = find_head(buffer, max_head, start, end); found != Parse::complete) return found;
  auto head = buffer.substr(start, end - start);
  if (auto line = parse_request_line(next_line(head), request); line != Parse::complete) return line;

  std::optional<std::int64_t> content_length;
  bool content_too_large = false;
  int hosts = 0;
  // Transfer-Encoding's codings, over every field of that name (RFC 9110 §5.3: one list).
  bool transfer_encoding = false, chunked = false, chunked_final = false, chunked_twice = false;
  bool other_coding = false;
  for (auto line = next_line(head); !line.empty(); line = next_line(head)) {
    // obs-fold, or whitespace before the first field (RFC 9112 §5.2, §2.2): rejected.
    if (line.front() == ' ' || line.front() == '\t') return Parse::bad;
    auto colon = line.find(':');
    // No whitespace between a field name and its colon (RFC 9112 §5.1): valid_token refuses it.
    if (colon == std::string_view::npos || !valid_token(line.substr(0, colon))) return Parse::bad;
    auto name = line.substr(0, colon);
    auto value = trim(line.substr(colon + 1));
    if (value.find('\0') != std::string_view::npos) return Parse::bad;  // RFC 9110 §5.5
    if (iequals(name, "connection")) {
      if (has_token(value, "close")) request.keep_alive = false;
      if (has_token(value, "keep-alive")) request.keep_alive = true;
    } else if (iequals(name, "content-length")) {
      // Request smuggling (RFC 9112 §6.3): a second Content-Length is bad even when it repeats
      // the first, and so is a list ("5, 5"); only digits. Past 1 MiB: 413 (RFC 9110 §15.5.14).
      if (content_length) return Parse::bad;
      content_length = to_int(value);
      if (!content_length) return Parse::bad;
      content_too_large = std::uint64_t(*content_length) > max_content_length;
    } else if (iequals(name, "transfer-encoding")) {
      transfer_encoding = true;
      for (auto list = value;;) {
        const auto comma = list.find(',');
        const auto coding = trim(list.substr(0, comma));
        if (!coding.empty()) {  // empty list elements are allowed (RFC 9110 §5.6.1)
          const bool is_chunked = iequals(coding, "chunked");
          chunked_twice = chunked_twice || (is_chunked && chunked);
          chunked = chunked || is_chunked;
          other_coding = other_coding || !is_chunked;
          chunked_final = is_chunked;
        }
        if (comma == std::string_view::npos) break;
        list.remove_prefix(comma + 1);
      }
    } else if (iequals(name, "host")) {
      ++hosts;
    } else if (iequals(name, "if-match")) {
      request.if_match = value;
    } else if (iequals(name, "if-none-match")) {
      request.if_none_match = value;
    } else if (iequals(name, "expect") && !request.http10) {
      // RFC 9110 §10.1.1: 100-continue is the one expectation defined (its token is
      // case-insensitive); a 1.0 request's is ignored (a 1.0 client cannot take a 1xx answer).
      request.expect = iequals(value, "100-continue") ? Expect::continue_100 : Expect::unknown;
    }
  }
  // RFC 9112 §3.2: a 1.1 request without Host, or any request with more than one, is answered 400.
  if (hosts > 1 || (hosts == 0 && !request.http10)) return Parse::bad;
  if (transfer_encoding) {
    // RFC 9112 §6.1: a 1.0 request with Transfer-Encoding has faulty framing; §6.3: with
    // Content-Length too it may be smuggling (either way 400, and the connection closes); chunked
    // not last leaves the length unknown (400 and close), and applied twice is not allowed (§7.1).
    // A coding other than chunked is one the loop does not implement (§6.1: 501).
    if (request.http10 || content_length || !chunked_final || chunked_twice) return Parse::bad;
    if (other_coding) return Parse::not_implemented;
    request.chunked = true;
    request.head_length = end;
    return chunked_body(buffer, end, max_head, max_head, request.length);
  }
  if (content_too_large) return Parse::content_too_large;
  std::size_t total = end + std::size_t(content_length.value_or(0));
  request.length = total;
  request.head_length = end;
  return buffer.size() < total ? Parse::incomplete : Parse::complete;
}

Response handle(const Request& request, Kernel& kernel) {
  const bool head = request.method == "HEAD";
  Response response = [&] {
    if (request.expect == Expect::unknown) return text(417, "only 100-continue is expected\n");
    if (request.method != "GET" && !head) return text(405, "GET and HEAD only\n");
    if (request.path == "/fast") return text(200, "fast\n");
    if (request.path == "/hello") return text(200, "Hello, world!\n");
    if (request.path == "/slow") return slow(request, kernel);
    if (request.path == "/bytes") return bytes(request);
    return text(404, "not found\n");
  }();
  preconditions(request, response);
  response.head_only = head || response.status == 304;
  response.close = !request.keep_alive;
  response.says_keep_alive = request.http10 && request.keep_alive;
  return response;
}

Response reject(Parse why) {
  Response response = [why] {
    switch (why) {
      case Parse::too_large: return text(431, "request head too large\n");
      case Parse::target_too_long: return text(414, "request target too long\n");
      case Parse::content_too_large: return text(413, "request too large\n");
      case Parse::version: return text(505, "HTTP/1.x only\n");
      case Parse::not_implemented: return text(501, "transfer coding not implemented\n");
      default: return text(400, "malformed request\n");
    }
  }();
  response.close = true;
  return response;
}

Response decided_by_head(const Request& request) {
  Response response;
  if (request.expect == Expect::unknown) {
    response = text(417, "only 100-continue is expected\n");
  } else if (request.expect == Expect::continue_100 && request.method != "GET" && request.method != "HEAD") {
    response = text(405, "GET and HEAD only\n");
  } else {
    return Response{0, {}, false};
  }
  response.close = true;
  return response;
}

void imf_fixdate(std::int64_t seconds, char (&out)[29]) {
  static constexpr const char* days[] = {"Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"};  // 1970-01-01 was a Thursday
  static constexpr const char* months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                           "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const std::int64_t day = seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400;
  const std::int64_t in_day = seconds - day * 86400;
  // The civil date of a day count (proleptic Gregorian): eras of 400 years.
  const std::int64_t z = day + 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const std::int64_t doe = z - era * 146097;
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const std::int64_t mp = (5 * doy + 2) / 153;
  const int mday = int(doy - (153 * mp + 2) / 5 + 1);
  const int month = int(mp < 10 ? mp + 3 : mp - 9);
  const std::int64_t year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  const int weekday = int(((day % 7) + 7) % 7);
  auto two = [](char* at, int v) {
    at[0] = char('0' + v / 10);
    at[1] = char('0' + v % 10);
  };
  std::memcpy(out, days[weekday], 3);
  out[3] = ',';
  out[4] = ' ';
  two(out + 5, mday);
  out[7] = ' ';
  std::memcpy(out + 8, months[month - 1], 3);
  out[11] = ' ';
  const int y = int(((year % 10000) + 10000) % 10000);
  two(out + 12, y / 100);
  two(out + 14, y % 100);
  out[16] = ' ';
  two(out + 17, int(in_day / 3600));
  out[19] = ':';
  two(out + 20, int(in_day / 60 % 60));
  out[22] = ':';
  two(out + 23, int(in_day % 60));
  std::memcpy(out + 25, " GMT", 4);
}

const char* reason_phrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 412: return "Precondition Failed";
    case 417: return "Expectation Failed";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

void serialize(const Response& response, std::string& out, std::string_view date) {
  out += "HTTP/1.1 ";
  out += std::to_string(response.status);
  out += ' ';
  out += reason_phrase(response.status);
  if (!date.empty()) {
    out += "\r\nDate: ";
    out += date;
  }
  if (response.status == 405) out += "\r\nAllow: GET, HEAD";  // RFC 9110 §15.5.6: must be sent
  out += "\r\nContent-Type: text/plain\r\nContent-Length: ";
  out += std::to_string(response.body.size() + response.filler);
  if (response.close) {
    out += "\r\nConnection: close";
  } else if (response.says_keep_alive) {
    out += "\r\nConnection: keep-alive";
  }
  out += "\r\n\r\n";
  if (!response.head_only) out += response.body;
}

}  // namespace loopsim::http
