// HTTP/1.1, just enough for the app the loop serves: request heads with keep-alive and
// `Connection: close`, bodies by Content-Length, and a handful of routes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "realloop/kernel.hpp"

namespace loopsim::http {

struct Request {
  std::string_view method;
  std::string_view target;  // path and query, as sent
  std::string_view path;
  std::string_view query;
  bool keep_alive = true;
  std::size_t length = 0;  // bytes it occupies in the buffer: skipped empty lines, head, body
};

enum class Parse : std::uint8_t {
  complete,    // `request` describes the first request in the buffer
  incomplete,  // more bytes are needed
  bad,         // malformed: answer 400 and close
  too_large,   // the head exceeds the limit: answer 431 and close
};

// Parses the first request in `buffer`. Views in `request` point into `buffer`. The head, with
// any empty lines skipped before it, must fit in `max_head` bytes. What it accepts and refuses,
// and why: docs/http.md. One call is linear in the bytes it looks at.
Parse parse_request(std::string_view buffer, std::size_t max_head, Request& request);

// /bytes's body: this pattern, repeated and cut at its length.
inline constexpr std::string_view filler = "0123456789abcdef";

struct Response {
  int status = 200;
  std::string body;
  bool close = false;  // the connection closes after this response
  // Bytes of filler after `body`, made as the connection can take them (realloop/output.hpp):
  // a large answer is never held whole.
  std::uint64_t filler = 0;
};

// The app, GET only (405 otherwise):
//   /fast, /hello      a short fixed body;
//   /slow?ms=N         spends N ms (at most 60000), /slow?us=N spends N us (at most 60000000),
//                      on the calling thread through the kernel; exactly one of them, else 400;
//   /bytes?n=N         exactly N bytes of filler (N from 0 to 16 MiB, 16777216), else 400: for
//                      a reader that does not read;
//   anything else      404.
Response handle(const Request& request, Kernel& kernel);

// The answer to a request that could not be parsed (400 or 431); always closes.
Response reject(Parse why);

// Appends the serialized response to `out`: its head and body, not its filler (which its
// Content-Length counts, and the caller makes to follow).
void serialize(const Response& response, std::string& out);

const char* reason_phrase(int status);

}  // namespace loopsim::http
