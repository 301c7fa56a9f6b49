#include "realloop/http.hpp"

#include <algorithm>
#include <charconv>
#include <optional>

namespace loopsim::http {
namespace {

constexpr std::string_view crlf = "\r\n";
constexpr std::int64_t slow_limit_ms = 60'000;  // a /slow request spends at most a minute

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

std::optional<std::int64_t> to_int(std::string_view s) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

bool valid_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return c > ' ' && c < 127 && c != ':' && c != '(' && c != ')';
  });
}

// Parses "METHOD TARGET HTTP/1.x"; sets the version's default keep-alive.
bool parse_request_line(std::string_view line, Request& request) {
  auto sp1 = line.find(' ');
  if (sp1 == std::string_view::npos) return false;
  auto sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return false;
  request.method = line.substr(0, sp1);
  request.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  auto version = line.substr(sp2 + 1);
  if (!valid_token(request.method) || request.target.empty() || request.target[0] != '/')
    return false;
  if (version == "HTTP/1.1") {
    request.keep_alive = true;
  } else if (version == "HTTP/1.0") {
    request.keep_alive = false;
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

}  // namespace

Parse parse_request(std::string_view buffer, std::size_t max_head, Request& request) {
  auto head_end = buffer.find("\r\n\r\n");
  if (head_end == std::string_view::npos) {
    return buffer.size() > max_head ? Parse::too_large : Parse::incomplete;
  }
  if (head_end + 4 > max_head) return Parse::too_large;
  auto head = buffer.substr(0, head_end + 2);  // every line ends in CRLF
  auto line_end = head.find(crlf);
  request = Request{};
  if (!parse_request_line(head.substr(0, line_end), request)) return Parse::bad;
  head.remove_prefix(line_end + 2);

  std::int64_t content_length = 0;
  while (!head.empty()) {
    line_end = head.find(crlf);
    auto line = head.substr(0, line_end);
    head.remove_prefix(line_end + 2);
    auto colon = line.find(':');
    if (colon == std::string_view::npos || !valid_token(line.substr(0, colon))) return Parse::bad;
    auto name = line.substr(0, colon);
    auto value = trim(line.substr(colon + 1));
    if (iequals(name, "connection")) {
      if (has_token(value, "close")) request.keep_alive = false;
      if (has_token(value, "keep-alive")) request.keep_alive = true;
    } else if (iequals(name, "content-length")) {
      auto n = to_int(value);
      if (!n || *n > std::int64_t(1) << 20) return Parse::bad;
      content_length = *n;
    } else if (iequals(name, "transfer-encoding")) {
      return Parse::bad;  // no chunked bodies: answer 400 rather than misread the stream
    }
  }
  std::size_t total = head_end + 4 + std::size_t(content_length);
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
  out += std::to_string(response.body.size());
  out += response.close ? "\r\nConnection: close\r\n\r\n" : "\r\n\r\n";
  out += response.body;
}

}  // namespace loopsim::http
