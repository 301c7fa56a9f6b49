// HTTP/1.1, just enough for the app the loop serves: request heads with keep-alive and
// `Connection: close`, bodies by Content-Length, and a handful of routes.
#pragma once

#include <cstddef>
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
  std::size_t length = 0;  // bytes of head and body this request occupies in the buffer
};

enum class Parse : std::uint8_t {
  complete,    // `request` describes the first request in the buffer
  incomplete,  // more bytes are needed
  bad,         // malformed: answer 400 and close
  too_large,   // the head exceeds the limit: answer 431 and close
};

// Parses the first request in `buffer`. Views in `request` point into `buffer`.
Parse parse_request(std::string_view buffer, std::size_t max_head, Request& request);

struct Response {
  int status = 200;
  std::string body;
  bool close = false;  // the connection closes after this response
};

// The app: /fast, /hello, /slow?ms=N and /slow?us=N. A slow handler spends its time on the
// calling thread through the kernel.
Response handle(const Request& request, Kernel& kernel);

// The answer to a request that could not be parsed (400 or 431); always closes.
Response reject(Parse why);

// Appends the serialized response to `out`.
void serialize(const Response& response, std::string& out);

const char* reason_phrase(int status);

}  // namespace loopsim::http
