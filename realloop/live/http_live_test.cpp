// The live build's HTTP/1.1 as RFC 9110 and 9112 ask it of an origin server, over real loopback
// sockets: what a client sees on the wire, and how soon (docs/http.md, the table of rules).
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <ctime>
#include <string>
#include <thread>

#include "realloop/http.hpp"
#include "realloop/live/loopback_for_tests.hpp"
#include "realloop/live/server_for_tests.hpp"

using namespace loopsim;
using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;

// A blocking client that reads what has come within a deadline.
struct Client {
  int fd = -1;
  explicit Client(int port) : fd(loopsim::testing::loopback_connect(port)) { REQUIRE(fd >= 0); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  ~Client() { ::close(fd); }
  void send(const std::string& bytes) {
    REQUIRE(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == ssize_t(bytes.size()));
  }
  // Reads until `text` holds `want` (then true), the peer closes or `within` passes (false).
  bool read_until(std::string& text, const std::string& want, std::chrono::milliseconds within = 2s) {
    const auto deadline = Clock::now() + within;
    char buffer[4096];
    while (text.find(want) == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return false;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, int(left.count())) <= 0) continue;
      ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n <= 0) return text.find(want) != std::string::npos;
      text.append(buffer, std::size_t(n));
    }
    return true;
  }
  // Whether the server closed the connection within `within` (reading and dropping what comes).
  bool closed_within(std::chrono::milliseconds within) {
    std::string rest;
    read_until(rest, std::string(1, '\0') + "never", within);
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 0) != 1) return false;
    char byte;
    return ::read(fd, &byte, 1) <= 0;
  }
};

std::string field(const std::string& answer, const std::string& name) {
  auto at = answer.find("\r\n" + name + ": ");
  if (at == std::string::npos) return "";
  at += name.size() + 4;
  return answer.substr(at, answer.find("\r\n", at) - at);
}

live::LiveOptions options() {
  live::LiveOptions o;
  o.keep_stop_handlers = false;
  return o;
}

}  // namespace

TEST_CASE("live: Expect: 100-continue gets 100 Continue at once, and the answer after the body", "[http]") {
  testing::LiveServer server(options());
  Client client(server.port.load());
  const auto asked = Clock::now();
  client.send("GET /fast HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n");
  std::string text;
  REQUIRE(client.read_until(text, "\r\n\r\n"));
  CHECK(Clock::now() - asked < 1s);  // curl waits 1 s for it before it sends the body anyway
  CHECK(text == "HTTP/1.1 100 Continue\r\n\r\n");
  client.send("hello");
  REQUIRE(client.read_until(text, "fast\n"));
  CHECK(text.substr(text.find("\r\n\r\n") + 4).starts_with("HTTP/1.1 200 OK\r\n"));
  // The next request on the connection asks again, and is told again.
  text.clear();
  client.send("GET /fast HTTP/1.1\r\nHost: x\r\nExpect: 100-Continue\r\nContent-Length: 2\r\n\r\n");
  REQUIRE(client.read_until(text, "\r\n\r\n"));
  CHECK(text == "HTTP/1.1 100 Continue\r\n\r\n");
  client.send("ok");
  REQUIRE(client.read_until(text, "fast\n"));
  server.stop();
}

TEST_CASE("live: a head that decides the answer gets it before its body: 405, 413, 417, each closing", "[http]") {
  testing::LiveServer server(options());
  struct Case {
    const char* head;
    const char* status;
  };
  for (const Case& c : {Case{"POST /fast HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2048\r\n\r\n",
                             "HTTP/1.1 405 Method Not Allowed\r\n"},
                        Case{"GET /fast HTTP/1.1\r\nHost: x\r\nContent-Length: 70000\r\n\r\n",  // past max_input
                             "HTTP/1.1 413 Content Too Large\r\n"},
                        Case{"GET /fast HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n",  // past the parser's
                             "HTTP/1.1 413 Content Too Large\r\n"},
                        Case{"GET /fast HTTP/1.1\r\nHost: x\r\nExpect: a-pony\r\nContent-Length: 5\r\n\r\n",
                             "HTTP/1.1 417 Expectation Failed\r\n"},
                        // A chunk announcing more than max_input: 413 before its data.
                        Case{"GET /fast HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n20000\r\n",
                             "HTTP/1.1 413 Content Too Large\r\n"}}) {
    INFO(c.head);
    Client client(server.port.load());
    const auto asked = Clock::now();
    client.send(c.head);
    std::string text;
    REQUIRE(client.read_until(text, "\r\n\r\n"));
    CHECK(Clock::now() - asked < 1s);
    CHECK(text.starts_with(c.status));
    CHECK(field(text, "Connection") == "close");
    if (text.starts_with("HTTP/1.1 405")) CHECK(field(text, "Allow") == "GET, HEAD");
    CHECK(client.closed_within(2s));
  }
  server.stop();
}

TEST_CASE("live: every answer has a Date of now, made again each second", "[http]") {
  testing::LiveServer server(options());
  Client client(server.port.load());
  auto ask = [&client] {
    std::string text;
    client.send("GET /fast HTTP/1.1\r\nHost: x\r\n\r\n");
    REQUIRE(client.read_until(text, "fast\n"));
    return field(text, "Date");
  };
  auto imf = [](std::time_t t) {
    char out[29];
    http::imf_fixdate(std::int64_t(t), out);
    return std::string(out, sizeof out);
  };
  const std::time_t before = std::time(nullptr);
  const std::string first = ask();
  const std::time_t after = std::time(nullptr);
  INFO("Date: " << first);
  CHECK((first == imf(before) || first == imf(after) || first == imf(before - 1)));
  // A second later the field has moved on: the cache is made again, not kept.
  std::this_thread::sleep_for(1100ms);
  const std::string second = ask();
  CHECK(second != first);
  CHECK(second.size() == 29);
  server.stop();
}

TEST_CASE("live: HTTP/1.0 kept alive is told so, and HEAD gets the head GET would and no body", "[http]") {
  testing::LiveServer server(options());
  Client client(server.port.load());
  std::string text;
  client.send("GET /fast HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  REQUIRE(client.read_until(text, "fast\n"));
  CHECK(field(text, "Connection") == "keep-alive");
  text.clear();
  client.send("HEAD /bytes?n=100000 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  REQUIRE(client.read_until(text, "\r\n\r\n"));
  CHECK(text.starts_with("HTTP/1.1 200 OK\r\n"));
  CHECK(field(text, "Content-Length") == "100000");
  // No body follows: the next answer comes right after the head.
  client.send("GET /fast HTTP/1.0\r\n\r\n");
  REQUIRE(client.read_until(text, "fast\n"));
  CHECK(text.substr(text.find("\r\n\r\n") + 4).starts_with("HTTP/1.1 200 OK\r\n"));
  CHECK(field(text.substr(text.find("\r\n\r\n") + 4), "Connection") == "close");
  CHECK(client.closed_within(2s));
  server.stop();
}

TEST_CASE("live: pipelined requests are answered in order, and none after the one that said close", "[http]") {
  testing::LiveServer server(options());
  Client client(server.port.load());
  client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\nGET /slow?ms=20 HTTP/1.1\r\nHost: x\r\n\r\n"
              "GET /fast HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nGET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string text;
  REQUIRE(client.read_until(text, "fast\n"));
  const auto hello = text.find("Hello, world!\n"), slow = text.find("slow\n"), fast = text.find("fast\n");
  CHECK(hello < slow);
  CHECK(slow < fast);
  CHECK(text.find("Connection: close") > slow);
  CHECK(client.closed_within(2s));
  CHECK(text.find("Hello, world!\n", hello + 1) == std::string::npos);  // the fourth is not served
  server.stop();
}

TEST_CASE("live: a body cut short by the client's close, or by body_timeout, is not taken as a request", "[http]") {
  live::LiveOptions o = options();
  o.loop.body_timeout = 300ms;
  testing::LiveServer server(o);
  {
    Client client(server.port.load());
    client.send("GET /fast HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc");
    ::shutdown(client.fd, SHUT_WR);
    std::string text;
    client.read_until(text, "\r\n\r\n", 2s);
    CHECK(text.empty());  // RFC 9112 §6.3: incomplete, and the connection closed without an answer
  }
  Client waiting(server.port.load());
  waiting.send("GET /fast HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc");
  std::string text;
  REQUIRE(waiting.read_until(text, "\r\n\r\n", 3s));
  CHECK(text.starts_with("HTTP/1.1 408 Request Timeout\r\n"));
  CHECK(field(text, "Connection") == "close");
  CHECK(waiting.closed_within(2s));
  server.stop();
}

TEST_CASE("live: a chunked body is read whole, in pieces, and the request after it is answered", "[http]") {
  testing::LiveServer server(options());
  Client client(server.port.load());
  // The body comes in three writes, one of them splitting a size line; 100 Continue first.
  client.send("GET /hello HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n");
  std::string text;
  REQUIRE(client.read_until(text, "HTTP/1.1 100 Continue\r\n\r\n"));
  client.send("5;ext=1\r\nhello\r\n1");
  std::this_thread::sleep_for(20ms);
  client.send("0\r\n0123456789abcdef\r\n0\r\nTrailer: x\r\n\r\nGET /fast HTTP/1.1\r\nHost: x\r\n\r\n");
  REQUIRE(client.read_until(text, "fast\n"));
  CHECK(text.find("HTTP/1.1 200 OK") != std::string::npos);
  CHECK(text.find("Hello, world!\n") < text.find("fast\n"));
  // A coding the loop does not implement: 501, and the connection closes.
  Client other(server.port.load());
  other.send("GET /hello HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n");
  std::string refused;
  REQUIRE(other.read_until(refused, "\r\n\r\n"));
  CHECK(refused.starts_with("HTTP/1.1 501 Not Implemented\r\n"));
  CHECK(other.closed_within(2s));
  server.stop();
}
