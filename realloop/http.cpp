#include "realloop/http.hpp"

#include <algorithm>
#include <charconv>
#include <optional>

namespace loopsim::http {
namespace {

constexpr std::int64_t slow_limit_ms = 60'000;  // a /slow request spends at most a minute
constexpr std::int64_t max_body = std::int64_t(1) << 20;   // Content-Length at most 1 MiB
constexpr std::int64_t max_bytes = std::int64_t(1) << 24;  // /bytes?n=N answers at most 16 MiB

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
           return lower(x) == lower(y);
         });
}

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

// Parses "METHOD SP TARGET SP HTTP/1.x" with single spaces (RFC 9112 §3); sets the version's
// default keep-alive and tells whether the version is 1.0.
bool parse_request_line(std::string_view line, Request& request, bool& http10) {
  auto sp1 = line.find(' ');
  if (sp1 == std::string_view::npos) return false;
  auto sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return false;
  request.method = line.substr(0, sp1);
  request.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  auto version = line.substr(sp2 + 1);
  if (!valid_token(request.method) || request.target.empty() || request.target[0] != '/' ||
      !visible(request.target))
    return false;
  if (version == "HTTP/1.1") {
    request.keep_alive = true;
    http10 = false;
  } else if (version == "HTTP/1.0") {
    request.keep_alive = false;
    http10 = true;
  } else {
    return false;
  }
  auto q = request.target.find('?');
  request.path = request.target.substr(0, q);
  request.query = q == std::string_view::npos ? std::string_view{} : request.target.substr(q + 1);
  return true;
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
  kernel.spend(ms ? Nanos(std::chrono::milliseconds(*n)) : Nanos(std::chrono::microseconds(*n)));
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
  return buffer.size() > max_head ? Parse::too_large : Parse::incomplete;
}

// The next line of a complete head, without its line end; `rest` moves past it.
std::string_view next_line(std::string_view& rest) {
  auto lf = rest.find('\n');  // there is one: the head ends in an empty line
  auto line = rest.substr(0, lf);
  rest.remove_prefix(lf + 1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

}  // namespace

Parse parse_request(std::string_view buffer, std::size_t max_head, Request& request) {
  std::size_t start = 0, end = 0;
  if (auto found = find_head(buffer, max_head, start, end); found != Parse::complete) return found;
  auto head = buffer.substr(start, end - start);
  request = Request{};
  bool http10 = false;
  if (!parse_request_line(next_line(head), request, http10)) return Parse::bad;

  std::optional<std::int64_t> content_length;
  int hosts = 0;
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
      // the first, and so is a list ("5, 5"); only digits, at most 1 MiB.
      if (content_length) return Parse::bad;
      content_length = to_int(value);
      if (!content_length || *content_length > max_body) return Parse::bad;
    } else if (iequals(name, "transfer-encoding")) {
      return Parse::bad;  // no chunked bodies: answer 400 rather than misread the stream
    } else if (iequals(name, "host")) {
      ++hosts;
    }
  }
  // RFC 9112 §3.2: a 1.1 request without Host, or any request with more than one, is answered 400.
  if (hosts > 1 || (hosts == 0 && !http10)) return Parse::bad;
  std::size_t total = end + std::size_t(content_length.value_or(0));
  if (buffer.size() < total) return Parse::incomplete;
  request.length = total;
  return Parse::complete;
}

Response handle(const Request& request, Kernel& kernel) {
  Response response = [&] {
    if (request.method != "GET") return text(405, "GET only\n");
    if (request.path == "/fast") return text(200, "fast\n");
    if (request.path == "/hello") return text(200, "Hello, world!\n");
    if (request.path == "/slow") return slow(request, kernel);
    if (request.path == "/bytes") return bytes(request);
    return text(404, "not found\n");
  }();
  response.close = !request.keep_alive;
  return response;
}

Response reject(Parse why) {
  Response response = why == Parse::too_large ? text(431, "request head too large\n")
                                              : text(400, "malformed request\n");
  response.close = true;
  return response;
}

const char* reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Unknown";
  }
}

void serialize(const Response& response, std::string& out) {
  out += "HTTP/1.1 ";
  out += std::to_string(response.status);
  out += ' ';
  out += reason_phrase(response.status);
  out += "\r\nContent-Type: text/plain\r\nContent-Length: ";
  out += std::to_string(response.body.size() + response.filler);
  out += response.close ? "\r\nConnection: close\r\n\r\n" : "\r\n\r\n";
  out += response.body;
}

}  // namespace loopsim::http
