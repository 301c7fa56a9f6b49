// Serving connections: the eager read, requests in order, R8's yield batch, R11's pool, R13's
// bounded buffers.
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <utility>

#include "base/assert.hpp"
#include "realloop/http.hpp"
#include "realloop/loop.hpp"
#include "realloop/pool.hpp"

namespace loopsim {

namespace {
constexpr std::size_t read_chunk = 16 * 1024;

// The buffer holds a whole request head: an empty line ends one, whatever its line ends.
bool head_complete(std::string_view input) {
  std::size_t start = input.find_first_not_of("\r\n");  // empty lines before a request are skipped
  if (start == std::string_view::npos) return false;
  input.remove_prefix(start);
  return input.find("\n\r\n") != std::string_view::npos || input.find("\n\n") != std::string_view::npos;
}
}  // namespace


Loop::Connection* Loop::connection(int fd) {
  if (fd < 0 || std::size_t(fd) >= connections_.size()) return nullptr;
  Connection& c = connections_[std::size_t(fd)];
  return c.open ? &c : nullptr;
}

std::size_t Loop::buffered(int fd) {
  Connection* c = connection(fd);
  return c == nullptr ? 0 : c->input.size() + c->output.size();
}

void Loop::admit(int fd) {
  if (std::size_t(fd) >= connections_.size()) connections_.resize(std::size_t(fd) + 1);
  Connection& c = connections_[std::size_t(fd)];
  LOOPSIM_ASSERT(!c.open);
  // The generation survives: R11 tells an answer for the descriptor's previous connection
  // from one for this one by it.
  const std::uint64_t generation = c.generation;
  c = Connection{};
  c.generation = generation;
  c.open = true;
  c.head_until = kernel_.now() + config_.head_timeout;  // R12: a connection that never sends is timed out as a head
  ++connection_count_;
  load_.fetch_add(1, std::memory_order_acq_rel);
  // R15: registered after the eager read, unless the read waits (the drain's deferred reads).
  const bool watch_late = config_.watch_after_eager_read && !deferring_;
  if (!watch_late && !watch_connection(fd, c)) return;
  if (deferring_) {
    deferred_.push_back(fd);
    return;
  }
  serve(fd);  // the eager read: a request that came with the connection is served now
  Connection* served = connection(fd);
  if (!watch_late || served == nullptr || served->watched) return;
  const bool found_request = served->answered || served->in_pool || !served->input.empty();
  if (found_request && !config_.watch_served_connections) return;  // R15 sabotage
  watch_connection(fd, *served);
}

int Loop::watch(int fd, std::uint32_t interest) {
  const int rc = kernel_.watch(poller_, fd, interest, Trigger::edge);
  if (rc == 0) watch_span_ = std::max(watch_span_, std::size_t(fd) + 1);
  return rc;
}

bool Loop::watch_connection(int fd, Connection& c) {
  const auto interest = io::readable | io::read_hangup | (c.want_write ? io::writable : 0u);
  if (watch(fd, interest) < 0) {
    close_connection(fd);  // e.g. ENOMEM or ENOSPC: unwatched, it would never be served
    return false;
  }
  c.watched = true;
  return true;
}

void Loop::serve(int fd) {
  Connection* c = connection(fd);
  LOOPSIM_ASSERT(c != nullptr);
  for (;;) {
    Input input = read_input(fd, *c);
    if (input == Input::reset) {
      close_connection(fd);
      return;
    }
    // A peer that half-closed after its requests still gets their answers, then the close.
    if (input == Input::ended) c->peer_ended = true;
    if (c->owed_turn) {  // an owed connection waits for its turn
      flush(fd, *c);
    } else {
      answer_and_flush(fd, *c);
    }
    if (connection(fd) == nullptr) return;
    // R13: the read stopped at max_input with bytes left in the kernel, which will announce
    // nothing more (edge-triggered). Read on while answering made room; otherwise the next
    // writable edge, or the owed turn, comes back here.
    bool room = c->input.size() < input_limit() && !output_full(*c);
    if (input != Input::full || !room || c->owed_turn || c->in_pool || c->closing) return;
  }
}

// Edge-triggered: read until EAGAIN or the end, or the next wake-up will never come; or, R13,
// until max_input is buffered (Input::full: the caller must come back for the rest); or, R14,
// until a read comes back short: the buffer is empty, and what comes next is a new edge, unless
// an event said the peer hung up, whose end of stream no edge will announce again.
Loop::Input Loop::read_input(int fd, Connection& c) {
  char buffer[read_chunk];
  c.input_full = false;
  for (;;) {
    std::size_t want = sizeof buffer;
    if (!c.closing) {  // a closing connection's input is read only to be discarded
      want = std::min(want, input_limit() - std::min(input_limit(), c.input.size()));
      if (want == 0) {
        c.input_full = true;
        return Input::full;
      }
    }
    std::int64_t n = kernel_.read(fd, std::span(buffer, want));
    if (n == -EAGAIN) return Input::open;
    if (n == 0) return Input::ended;
    if (n < 0) return Input::reset;
    if (!c.closing) c.input.append(buffer, std::size_t(n));  // a closing connection's is discarded
    const bool heed = c.hangup_told && config_.short_read_heeds_hangup;
    if (config_.short_read_drains && std::size_t(n) < want && !heed) return Input::open;
  }
}

std::size_t Loop::input_limit() const {
  return config_.max_input > 0 ? std::size_t(config_.max_input) : SIZE_MAX;
}

bool Loop::finished_with(const Connection& c) const {
  if (c.closing) return true;
  if (!c.peer_ended || c.owed_turn) return false;
  http::Request request;
  return http::parse_request(c.input, std::size_t(config_.max_request_head), request) == http::Parse::incomplete;
}

bool Loop::output_full(const Connection& c) const {
  if (c.output.fill_left() > 0) return true;  // the next answer goes after the filler, all of it
  return config_.max_output > 0 && c.output.size() >= std::size_t(config_.max_output);
}

// Serves complete requests in order: at most yield_batch this turn (R8); with a pool, one at a
// time, each answered by a post (R11); none while max_output bytes wait to be written (R13).
// Returns whether it stopped for the output alone, with requests still waiting.
bool Loop::answer_requests(int fd, Connection& c) {
  // Parsed requests are cut from the input once, on the way out: a pipelined burst costs
  // linear time, not a copy of the rest of the buffer per request.
  std::size_t consumed = 0;
  const bool held = serve_parsed(fd, c, consumed);
  if (consumed > 0) c.input.erase(0, consumed);
  note_phase(c);
  return held;
}

// R13: answers, writes, and answers again while the writes made room for requests the output
// bound held back. A write may take the whole output at once (Linux's send buffer grows to
// megabytes on loopback): then no writable edge will come, and a request already buffered would
// wait for the client's next one, which may never come (sabotage: resume_after_flush = false).
void Loop::answer_and_flush(int fd, Connection& c) {
  for (;;) {
    const bool held = answer_requests(fd, c);
    flush(fd, c);
    if (connection(fd) == nullptr || !held || output_full(c) || !config_.resume_after_flush) return;
  }
}

// R12: which phase the connection is in now that its complete requests are answered.
void Loop::note_phase(Connection& c) {
  const Instant now = kernel_.now();
  if (c.input.empty()) {
    c.body_until.reset();
    if (c.answered) c.head_until.reset();  // a fresh connection's head began at admission
    return;
  }
  c.idle_until.reset();
  if (head_complete(c.input)) {
    c.head_until.reset();
    if (!c.body_until) c.body_until = now + config_.body_timeout;
  } else if (!c.head_until) {
    c.head_until = now + config_.head_timeout;
  }
}

bool Loop::serve_parsed(int fd, Connection& c, std::size_t& consumed) {
  int served = 0;
  while (!c.closing && !c.in_pool) {
    http::Request request;
    const std::string_view rest = std::string_view(c.input).substr(consumed);
    auto parsed = http::parse_request(rest, std::size_t(config_.max_request_head), request);
    // A head whose body is still on its way decides before the body is read whether the
    // request can be served at all: a body past max_input never fits (R13, 413), and an
    // expectation gets its answer (RFC 9110 §10.1.1).
    const bool decided = parsed == http::Parse::incomplete && request.head_length > 0 &&
                         rest.size() < input_limit() &&
                         (request.length > input_limit() || http::decided_by_head(request).status != 0);
    if (parsed == http::Parse::incomplete && rest.size() < input_limit() && !decided) {
      // The client waits for 100 Continue before it sends the body: say it once.
      if (request.head_length > 0 && request.expect == http::Expect::continue_100 && !c.continue_sent) {
        if (output_full(c)) return true;  // after the answers before it, when there is room
        c.output.append(http::continue_100);
        c.continue_sent = true;
      }
      return false;
    }
    if (output_full(c)) return true;  // R13: a request waits for room
    if (config_.shutdown_between_handlers && config_.mode == HandlerMode::loop_only) {
      // R5: a shutdown asked during this pass closes the listener before another handler runs;
      // the request waits for the connection's turn in the next pass.
      if (shutdown_requested_.load(std::memory_order_acquire) && !shutting_down_) {
        if (!c.owed_turn) {
          c.owed_turn = true;
          owed_turns_.push_back(fd);
        }
        return false;
      }
      // R5: past the drain's deadline no handler begins; the pass's end resets what is left.
      if (shutting_down_ && config_.drain_timeout.count() > 0 && kernel_.now() >= *drain_until_) return false;
    }
    if (config_.yield_batch > 0 && served == config_.yield_batch) {
      c.owed_turn = true;  // R8: the rest waits for the next pass; no edge will announce it
      owed_turns_.push_back(fd);
      return false;
    }
    ++served;
    // This request is done: the next one's clock starts, and the connection is busy, not idle
    // (flush starts the idle clock again once the answer is written).
    c.head_until = c.body_until = c.idle_until = std::nullopt;
    c.continue_sent = false;
    if (parsed != http::Parse::complete) {
      observer_.request_begin(worker_, fd, decided ? request.target : "");
      consumed = c.input.size();
      // R13: a request that cannot fit max_input is refused rather than buffered; so is one whose
      // head says it will not (413 once the head is in, not once max_input is).
      http::Response refusal = parsed != http::Parse::incomplete ? http::reject(parsed)
                               : decided && request.length <= input_limit()
                                   ? http::decided_by_head(request)
                                   : http::reject(http::Parse::content_too_large);
      respond(fd, c, refusal);
      return false;
    }
    consumed += request.length;
    if (config_.mode == HandlerMode::pool && pool_ != nullptr) {
      std::string text(rest.substr(0, request.length));
      http::parse_request(text, text.size(), request);  // views into `text` now
      observer_.request_begin(worker_, fd, request.target);
      c.input.erase(0, consumed);  // before the pool may call back into this connection
      consumed = 0;
      c.in_pool = true;
      pool_->submit(*this, fd, c.generation, std::move(text));
      return false;
    }
    // On the loop's thread the request's views into the input stay good while its handler runs:
    // only this thread reads into the input or cuts it, and it is here until the answer.
    observer_.request_begin(worker_, fd, request.target);
    http::Response response = http::handle(request, kernel_);
    if (says_close(std::string_view(c.input).substr(consumed))) response.close = true;
    respond(fd, c, response);
  }
  return false;
}

// R5: past the drain's grace, answers say close (within it, requests on their way are answered
// as any others, so a pipelined one already sent is not lost to a close said too early).
bool Loop::draining_gracefully() const {
  return config_.drain_closes_gracefully && shutting_down_ && kernel_.now() >= *idle_close_at_;
}

// R5: in a drain past its grace, the last request in hand (none complete in `rest`, what the
// connection holds after it) is answered with the close.
bool Loop::says_close(std::string_view rest) const {
  if (!draining_gracefully()) return false;
  http::Request next;
  return http::parse_request(rest, std::size_t(config_.max_request_head), next) != http::Parse::complete;
}

void Loop::respond(int fd, Connection& c, const http::Response& response) {
  c.output.append(response, date());
  if (response.filler > 0 && !response.head_only) c.output.fill(response.filler);
  c.closing = c.closing || response.close;
  c.answered = true;
  observer_.request_end(worker_, fd, response.status);
}

// RFC 9110 §6.6.1: an origin server with a clock sends Date. The field is made again only when
// the calendar's second changes, as nginx caches its own: one clock read per answer, from the
// vDSO, and no formatting.
std::string_view Loop::date() {
  const std::optional<std::int64_t> second = kernel_.calendar_seconds();
  if (!second) return {};
  if (second != date_.second) {
    char made[29];
    http::imf_fixdate(*second, made);
    std::copy(std::begin(made), std::end(made), date_.text.begin());
    date_.second = second;
  }
  return std::string_view(date_.text.data(), date_.text.size());
}

// R11: a pool's answer, run as a post on this loop. The connection may have gone meanwhile,
// and its descriptor may serve another: the generation tells them apart.
void Loop::pool_answer(int fd, std::uint64_t generation, const http::Response& response) {
  Connection* c = connection(fd);
  if (c == nullptr || c->generation != generation) return;
  c->in_pool = false;
  if (says_close(c->input)) {
    http::Response closing = response;
    closing.close = true;
    respond(fd, *c, closing);
  } else {
    respond(fd, *c, response);
  }
  if (c->input_full) {  // R13: the kernel holds more of this connection's requests
    serve(fd);
    return;
  }
  answer_and_flush(fd, *c);  // the next pipelined request, if any
}

void Loop::flush(int fd, Connection& c) {
  bool progress = false;
  const auto bound = std::size_t(std::max(0, config_.max_output));
  while (!c.output.empty()) {
    c.output.top_up(bound);  // filler, made only as it can be written
    std::int64_t n = kernel_.write(fd, c.output.unsent());
    if (n == -EAGAIN) break;
    if (n < 0) {  // reset or broken pipe: the peer is gone
      close_connection(fd);
      return;
    }
    c.output.written(std::size_t(n));
    progress = progress || n > 0;
  }
  if (c.output.empty() && !c.in_pool && finished_with(c)) {
    close_connection(fd);
    return;
  }
  // R12: a write stalls from its last progress; a connection with nothing left to do is idle.
  if (c.output.empty()) {
    c.write_until.reset();
    bool idle = c.answered && c.input.empty() && !c.in_pool && !c.owed_turn;
    if (idle && !c.idle_until) c.idle_until = kernel_.now() + config_.keepalive_timeout;
  } else if (progress || !c.write_until) {
    c.write_until = kernel_.now() + config_.write_timeout;
    c.idle_until.reset();
  }
  bool want_write = !c.output.empty();
  if (want_write != c.want_write) {
    c.want_write = want_write;
    // R15: a connection not registered yet is asked for writability when it is registered.
    auto interest = io::readable | io::read_hangup | (want_write ? io::writable : 0u);
    if (c.watched && kernel_.rewatch(poller_, fd, interest, Trigger::edge) < 0) {
      close_connection(fd);
      return;
    }
  }
  arm_timer(fd, c);
}

void Loop::close_connection(int fd) { release(fd, false); }

void Loop::reset_connection(int fd) { release(fd, true); }

void Loop::release(int fd, bool abortive) {
  Connection* c = connection(fd);
  LOOPSIM_ASSERT(c != nullptr);
  drop_timer(fd, *c);
  std::uint64_t generation = c->generation;
  // Gives the buffers back. Assigning a fresh Connection would not: a string assigned an empty
  // one keeps its capacity (libstdc++), and each descriptor's slot would hold its largest
  // buffers for the life of the process.
  { Connection gone = std::exchange(*c, Connection{}); }
  // Only a pool's answer can arrive for a connection gone: without one nothing compares the
  // generation, which then stays what it is (and a search's states do not count closes).
  c->generation = pool_ != nullptr ? generation + 1 : generation;
  --connection_count_;
  load_.fetch_sub(1, std::memory_order_acq_rel);
  if (group_ != nullptr) {  // R10: room for the accept thread, if it waits for some
    std::atomic_thread_fence(std::memory_order_seq_cst);
    group_->closed_one();
  }
  observer_.closed(worker_, fd);
  if (abortive) {
    kernel_.abort(fd);
  } else {
    kernel_.close(fd);
  }
  if (accept_blocked_) retry_now_ = true;  // R4: a descriptor was freed
  if (backpressured_) {  // R9, max_connections: room again; the doors are owed their batch
    backpressured_ = false;
    accept_owed_ = !listener_closed_;
    if (config_.owe_when_room && handoffs_pending() > 0) handoff_owed_ = true;
  }
}

}  // namespace loopsim
