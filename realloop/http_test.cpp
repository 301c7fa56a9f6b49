#include <catch2/catch.hpp>

#include "realloop/http.hpp"
#include "realloop/spending_kernel_for_tests.hpp"

using namespace loopsim;
using namespace loopsim::http;
using loopsim::testing::SpendingKernel;

namespace {

Response answer(std::string_view text, SpendingKernel& kernel) {
  Request request;
  REQUIRE(parse_request(text, 8192, request) == Parse::complete);
  return handle(request, kernel);
}

}  // namespace

TEST_CASE("a request head parses into method, path, query and keep-alive") {
  Request r;
  std::string text = "GET /slow?ms=10 HTTP/1.1\r\nHost: x\r\n\r\nGET /fast HTTP/1.1\r\n\r\n";
  REQUIRE(parse_request(text, 8192, r) == Parse::complete);
  CHECK(r.method == "GET");
  CHECK(r.path == "/slow");
  CHECK(r.query == "ms=10");
  CHECK(r.keep_alive);
  CHECK(r.length == text.find("GET /fast"));
}

TEST_CASE("Connection: close and HTTP/1.0 end keep-alive, keep-alive restores it") {
  Request r;
  REQUIRE(parse_request("GET / HTTP/1.1\r\nConnection: Close\r\n\r\n", 8192, r) == Parse::complete);
  CHECK_FALSE(r.keep_alive);
  REQUIRE(parse_request("GET / HTTP/1.0\r\n\r\n", 8192, r) == Parse::complete);
  CHECK_FALSE(r.keep_alive);
  REQUIRE(parse_request("GET / HTTP/1.0\r\nconnection: keep-alive\r\n\r\n", 8192, r) ==
          Parse::complete);
  CHECK(r.keep_alive);
}

TEST_CASE("incomplete, malformed and oversized requests are told apart") {
  Request r;
  CHECK(parse_request("GET / HTTP/1.1\r\nHost:", 8192, r) == Parse::incomplete);
  CHECK(parse_request("GET / HTTP/1.1\r\nContent-Length: 4\r\n\r\nab", 8192, r) == Parse::incomplete);
  CHECK(parse_request("GARBAGE\r\n\r\n", 8192, r) == Parse::bad);
  CHECK(parse_request("GET / HTTP/2.0\r\n\r\n", 8192, r) == Parse::bad);
  CHECK(parse_request("GET / HTTP/1.1\r\nno colon here\r\n\r\n", 8192, r) == Parse::bad);
  CHECK(parse_request("GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n", 8192, r) == Parse::bad);
  CHECK(parse_request("GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 8192, r) == Parse::bad);
  CHECK(parse_request(std::string(100, 'a'), 64, r) == Parse::too_large);
  CHECK(reject(Parse::too_large).status == 431);
  CHECK(reject(Parse::bad).status == 400);
  CHECK(reject(Parse::bad).close);
}

TEST_CASE("the routes answer and /slow spends its time through the kernel") {
  SpendingKernel k;
  CHECK(answer("GET /fast HTTP/1.1\r\n\r\n", k).body == "fast\n");
  CHECK(answer("GET /hello HTTP/1.1\r\n\r\n", k).status == 200);
  CHECK(answer("GET /nope HTTP/1.1\r\n\r\n", k).status == 404);
  CHECK(answer("POST /fast HTTP/1.1\r\n\r\n", k).status == 405);
  CHECK(k.spent == Nanos(0));
  CHECK(answer("GET /slow?ms=600 HTTP/1.1\r\n\r\n", k).status == 200);
  CHECK(k.spent == std::chrono::milliseconds(600));
  CHECK(answer("GET /slow?us=80 HTTP/1.1\r\n\r\n", k).status == 200);
  CHECK(k.spent == std::chrono::microseconds(600080));
  CHECK(answer("GET /slow?ms=abc HTTP/1.1\r\n\r\n", k).status == 400);
  CHECK(answer("GET /slow HTTP/1.1\r\n\r\n", k).status == 400);
  CHECK(answer("GET /slow?ms=999999999 HTTP/1.1\r\n\r\n", k).status == 400);
}

TEST_CASE("a response serializes with its length and, when closing, Connection: close") {
  std::string out;
  serialize(Response{200, "fast\n", true}, out);
  CHECK(out == "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n"
               "Connection: close\r\n\r\nfast\n");
}
