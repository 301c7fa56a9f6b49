// HTTP/1.1, just enough for the app the loop serves: request heads with keep-alive and
// `Connection: close`, bodies by Content-Length or the chunked coding, and a handful of routes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "realloop/kernel.hpp"

namespace loopsim::http {

// What an `Expect` field asks (RFC 9110 §10.1.1).
enum class Expect : std::uint8_t {
  nothing,       // no Expect field, or one in an HTTP/1.0 request (which must be ignored)
  continue_100,  // `100-continue`: the client waits for 100 Continue, or the final answer, first
  unknown,       // any other expectation: answered 417
};

struct Request {
  std::string_view method;
  std::string_view target;  // as sent: origin-form, absolute-form or "*"
  std::string_view path;    // origin-form's path, absolute-form's after its authority
  std::string_view query;
  bool keep_alive = true;
  bool http10 = false;  // an HTTP/1.0 request: keep-alive only when asked, and said back
  Expect expect = Expect::nothing;
  std::string_view if_match;       // RFC 9110 §13.1.1's field, or empty
  std::string_view if_none_match;  // §13.1.2's
  // Bytes it occupies in the buffer: skipped empty lines, head, body (a chunked body's framing
  // and trailers included). When the parse is incomplete and the head is in, the least it can
  // be: exact for a Content-Length body, for a chunked one what the chunks so far announce.
  std::size_t length = 0;
  bool chunked = false;  // the body is in the chunked coding (RFC 9112 §7.1)
  // Bytes up to the end of its head. Set with the rest of the head's fields also when the parse
  // is incomplete because the body has not all come: a head decides 100 Continue, 413 and 417
  // before its body is read. 0: the head is not complete.
  std::size_t head_length = 0;
};

enum class Parse : std::uint8_t {
  complete,           // `request` describes the first request in the buffer
  incomplete,         // more bytes are needed (`request.head_length` > 0: only the body's)
  bad,                // malformed: answer 400 and close
  too_large,          // the head exceeds the limit: answer 431 and close
  target_too_long,    // the request line alone exceeds the limit: answer 414 and close
  content_too_large,  // Content-Length past what the parser takes (1 MiB): answer 413 and close
  version,            // an HTTP major version other than 1: answer 505 and close
  not_implemented,    // a transfer coding other than chunked: answer 501 and close
};

// Parses the first request in `buffer`. Views in `request` point into `buffer`. The head, with
// any empty lines skipped before it, must fit in `max_head` bytes. What it accepts and refuses,
// and why: docs/http.md. One call is linear in the bytes it looks at.
Parse parse_request(std::string_view buffer, std::size_t max_head, Request& request);

// The largest body the parser takes (1 MiB), by Content-Length or the chunks' sizes summed; a
// larger one is content_too_large.
inline constexpr std::uint64_t max_content_length = std::uint64_t(1) << 20;

// /bytes's body: this pattern, repeated and cut at its length.
inline constexpr std::string_view filler = "0123456789abcdef";

struct Response {
  int status = 200;
  std::string body;
  bool close = false;  // the connection closes after this response
  // Bytes of filler after `body`, made as the connection can take them (realloop/output.hpp):
  // a large answer is never held whole.
  std::uint64_t filler = 0;
  // An answer to HEAD: the head a GET would get, Content-Length included, and no body (RFC 9110
  // §9.3.2). Neither `body` nor the filler is written.
  bool head_only = false;
  // Says `Connection: keep-alive`: an HTTP/1.0 client kept open must be told (RFC 9112 §9.3).
  bool says_keep_alive = false;
};

// The app, GET and HEAD only (405, with Allow, otherwise; 417 for an expectation other than
// 100-continue):
//   /fast, /hello      a short fixed body;
//   /slow?ms=N         spends N ms (at most 60000), /slow?us=N spends N us (at most 60000000),
//                      on the calling thread through the kernel; exactly one of them, else 400;
//   /bytes?n=N         exactly N bytes of filler (N from 0 to 16 MiB, 16777216), else 400: for
//                      a reader that does not read;
//   anything else      404.
Response handle(const Request& request, Kernel& kernel);

// The answer to a request that could not be parsed (400, 413, 414, 431, 501 or 505); always closes.
Response reject(Parse why);

// The final answer a complete head already decides before its body is read, or none (status 0):
// 417 for an expectation other than 100-continue, 405 for a method the app does not serve
// when the client waits for 100 Continue (RFC 9110 §10.1.1: a final status instead of 100).
// Each closes: the body the client may still send is not read.
Response decided_by_head(const Request& request);

// RFC 9110 §15.2.1: the interim answer to `Expect: 100-continue`.
inline constexpr std::string_view continue_100 = "HTTP/1.1 100 Continue\r\n\r\n";

// Writes `seconds` since the Unix epoch as an IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT",
// RFC 9110 §5.6.7): exactly 29 characters.
void imf_fixdate(std::int64_t seconds, char (&out)[29]);

// Appends the serialized response to `out`: its head and body, not its filler (which its
// Content-Length counts, and the caller makes to follow). A head_only response gets its head.
// `date` is the Date field's value, an IMF-fixdate, or empty: no Date field (a server without a
// clock, RFC 9110 §6.6.1).
void serialize(const Response& response, std::string& out, std::string_view date = {});

const char* reason_phrase(int status);

// Equal but for the case of ASCII letters, as field names and tokens compare (RFC 9110 §5.1),
// whatever the C locale says.
bool iequals(std::string_view a, std::string_view b);

}  // namespace loopsim::http
