// Serving connections: the eager read, requests in order, R8's yield batch, R11's pool.
#include <cerrno>

#include "realloop/assert.hpp"
#include "realloop/http.hpp"
#include "realloop/loop.hpp"
#include "realloop/pool.hpp"

namespace loopsim {

namespace {
constexpr std::size_t read_chunk = 16 * 1024;
}

int Loop::fd_of(const Connection& c) const { return int(&c - connections_.data()); }

Loop::Connection* Loop::connection(int fd) {
  if (fd < 0 || std::size_t(fd) >= connections_.size()) return nullptr;
  Connection& c = connections_[std::size_t(fd)];
  return c.open ? &c : nullptr;
}

void Loop::admit(int fd) {
  if (std::size_t(fd) >= connections_.size()) connections_.resize(std::size_t(fd) + 1);
  Connection& c = connections_[std::size_t(fd)];
  LOOPSIM_ASSERT(!c.open);
  c = Connection{};
  c.open = true;
  ++connection_count_;
  if (kernel_.watch(poller_, fd, io::readable, Trigger::edge) < 0) {
    close_connection(fd);  // e.g. ENOMEM or ENOSPC: unwatched, it would never be served
    return;
  }
  serve(fd);  // the eager read: a request that came with the connection is served now
}

void Loop::serve(int fd) {
  Connection* c = connection(fd);
  LOOPSIM_ASSERT(c != nullptr);
  Input input = read_input(*c);
  if (input == Input::reset) {
    close_connection(fd);
    return;
  }
  if (!c->owed_turn) answer_requests(fd, *c);  // an owed connection waits for its turn
  // A peer that half-closed after its requests still gets their answers, then the close.
  if (input == Input::ended) c->closing = true;
  flush(fd, *c);
}

// Edge-triggered: read until EAGAIN or the end, or the next wake-up will never come.
Loop::Input Loop::read_input(Connection& c) {
  char buffer[read_chunk];
  for (;;) {
    std::int64_t n = kernel_.read(fd_of(c), buffer);
    if (n == -EAGAIN) return Input::open;
    if (n == 0) return Input::ended;
    if (n < 0) return Input::reset;
    if (c.closing) continue;  // answering no more; discard
    c.input.append(buffer, std::size_t(n));
  }
}

// Serves complete requests in order: at most yield_batch this turn (R8); with a pool, one at a
// time, each answered by a post (R11).
void Loop::answer_requests(int fd, Connection& c) {
  // Parsed requests are cut from the input once, on the way out: a pipelined burst costs
  // linear time, not a copy of the rest of the buffer per request.
  std::size_t consumed = 0;
  serve_parsed(fd, c, consumed);
  if (consumed > 0) c.input.erase(0, consumed);
}

void Loop::serve_parsed(int fd, Connection& c, std::size_t& consumed) {
  int served = 0;
  while (!c.closing && !c.in_pool) {
    http::Request request;
    const std::string_view rest = std::string_view(c.input).substr(consumed);
    auto parsed = http::parse_request(rest, std::size_t(config_.max_request_head), request);
    if (parsed == http::Parse::incomplete) return;
    if (config_.yield_batch > 0 && served == config_.yield_batch) {
      c.owed_turn = true;  // R8: the rest waits for the next pass; no edge will announce it
      owed_turns_.push_back(fd);
      return;
    }
    ++served;
    if (parsed != http::Parse::complete) {
      observer_.request_begin(worker_, fd, "");
      consumed = c.input.size();
      respond(fd, c, http::reject(parsed));
      return;
    }
    std::string text(rest.substr(0, request.length));
    consumed += request.length;
    http::parse_request(text, text.size(), request);  // views into `text` now
    observer_.request_begin(worker_, fd, request.target);
    if (config_.mode == HandlerMode::pool && pool_ != nullptr) {
      c.input.erase(0, consumed);  // before the pool may call back into this connection
      consumed = 0;
      c.in_pool = true;
      pool_->submit(*this, fd, c.generation, std::move(text));
      return;
    }
    respond(fd, c, http::handle(request, kernel_));
  }
}

void Loop::respond(int fd, Connection& c, const http::Response& response) {
  http::serialize(response, c.output);
  c.closing = c.closing || response.close;
  observer_.request_end(worker_, fd, response.status);
}

// R11: a pool's answer, run as a post on this loop. The connection may have gone meanwhile,
// and its descriptor may serve another: the generation tells them apart.
void Loop::pool_answer(int fd, std::uint64_t generation, const http::Response& response) {
  Connection* c = connection(fd);
  if (c == nullptr || c->generation != generation) return;
  c->in_pool = false;
  respond(fd, *c, response);
  answer_requests(fd, *c);  // the next pipelined request, if any
  if (connection(fd) != nullptr) flush(fd, *c);
}

void Loop::flush(int fd, Connection& c) {
  while (!c.output.empty()) {
    std::int64_t n = kernel_.write(fd, c.output);
    if (n == -EAGAIN) break;
    if (n < 0) {  // reset or broken pipe: the peer is gone
      close_connection(fd);
      return;
    }
    c.output.erase(0, std::size_t(n));
  }
  if (c.output.empty() && c.closing && !c.in_pool) {
    close_connection(fd);
    return;
  }
  bool want_write = !c.output.empty();
  if (want_write != c.want_write) {
    c.want_write = want_write;
    auto interest = io::readable | (want_write ? io::writable : 0u);
    if (kernel_.rewatch(poller_, fd, interest, Trigger::edge) < 0) close_connection(fd);
  }
}

void Loop::close_connection(int fd) {
  Connection* c = connection(fd);
  LOOPSIM_ASSERT(c != nullptr);
  std::uint64_t generation = c->generation;
  *c = Connection{};
  c->generation = generation + 1;
  --connection_count_;
  observer_.closed(worker_, fd);
  kernel_.close(fd);
  if (accept_blocked_) retry_now_ = true;  // R4: a descriptor was freed
  if (backpressured_) {  // R9, max_connections: room again; the doors are owed their batch
    backpressured_ = false;
    accept_owed_ = !listener_closed_;
    if (config_.owe_when_room && handoffs_pending() > 0) handoff_owed_ = true;
  }
}

}  // namespace loopsim
