// Fuzzes the loop's HTTP/1.1 parser (realloop/http.hpp) as Loop::answer_requests uses it on a
// connection's input: http::parse_request in a loop over the buffer, each complete request cut
// off, parsed again on its own bytes (as the loop and the handler pool do), answered by
// http::handle (with a kernel whose spend() costs nothing) and serialized; a bad or too large
// request is rejected and ends the connection. Each input is served with the loop's default
// head limit (8192) and with a small one, both at once and as the bytes would arrive in pieces
// from a socket.
//
// Input: the bytes a client sends on one connection (pipelined requests).
//
// A finding: a crash, a sanitizer report, a complete request whose length is 0 or past the
// buffer or whose views point outside it, a request that parses otherwise on its own bytes, or
// a connection served otherwise when its bytes arrive in pieces.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/finding.hpp"
#include "realloop/http.hpp"
#include "realloop/spending_kernel_for_tests.hpp"

namespace {

using namespace loopsim;

// One answer on the connection, as the peer would see it.
struct Answered {
  http::Parse parsed;
  std::string target;
  std::string response;
  bool operator==(const Answered&) const = default;
};

bool inside(std::string_view part, std::string_view whole) {
  return part.empty() || (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

void check_request(const http::Request& r, std::string_view buffer) {
  if (r.length == 0 || r.length > buffer.size()) {
    fuzz::finding("a complete request of length " + std::to_string(r.length) + " in a buffer of " +
                  std::to_string(buffer.size()));
  }
  const std::string_view request = buffer.substr(0, r.length);
  if (!inside(r.method, request) || !inside(r.target, request) || !inside(r.path, r.target) ||
      !inside(r.query, r.target)) {
    fuzz::finding("a view of the request points outside it");
  }
}

// A connection's input, served as Loop::answer_requests serves it.
class Connection {
 public:
  explicit Connection(std::size_t max_head) : max_head_(max_head) {}

  // The loop reads more bytes, then answers what is complete.
  void receive(std::string_view bytes) {
    if (closing_) return;  // answering no more; discarded
    input_.append(bytes);
    answer();
  }
  const std::vector<Answered>& answered() const { return answered_; }

 private:
  void answer() {
    while (!closing_) {
      http::Request request;
      http::Parse parsed = http::parse_request(input_, max_head_, request);
      if (parsed == http::Parse::incomplete) return;
      if (parsed != http::Parse::complete) {
        input_.clear();
        respond(parsed, "", http::reject(parsed));
        return;
      }
      check_request(request, input_);
      const bool keep_alive = request.keep_alive;
      const std::string method(request.method), target(request.target);
      std::string text = input_.substr(0, request.length);
      input_.erase(0, request.length);
      // The loop parses the request's own bytes again and ignores the result.
      if (http::parse_request(text, text.size(), request) != http::Parse::complete || request.length != text.size() ||
          request.method != method || request.target != target || request.keep_alive != keep_alive) {
        fuzz::finding("a request parses otherwise on its own bytes: " + target);
      }
      respond(parsed, target, http::handle(request, kernel_));
    }
  }
  void respond(http::Parse parsed, const std::string& target, const http::Response& response) {
    std::string out;
    http::serialize(response, out);
    closing_ = closing_ || response.close;
    answered_.push_back({parsed, target, std::move(out)});
  }

  std::size_t max_head_;
  testing::SpendingKernel kernel_;
  std::string input_;
  bool closing_ = false;
  std::vector<Answered> answered_;
};

void serve(std::string_view bytes, std::size_t max_head) {
  Connection whole(max_head);
  whole.receive(bytes);
  // Pieces of 1 to 16 bytes, the sizes taken from the bytes themselves; at most about 64 of
  // them, for each read parses the buffer from its start.
  Connection pieces(max_head);
  const std::size_t least = bytes.size() / 64;
  for (std::size_t at = 0; at < bytes.size();) {
    std::size_t n = std::max<std::size_t>(least, 1 + static_cast<unsigned char>(bytes[at]) % 16);
    pieces.receive(bytes.substr(at, n));
    at += n;
  }
  if (whole.answered() != pieces.answered()) {
    fuzz::finding("the connection is served otherwise when its bytes arrive in pieces (max_head " +
                  std::to_string(max_head) + ")");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes = fuzz::text_of(data, size);
  serve(bytes, 8192);  // LoopConfig::max_request_head's default
  serve(bytes, 16 + size % 112);
  return 0;
}
