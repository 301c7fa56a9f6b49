#include "realloop/loop.hpp"

#include <cerrno>

#include "realloop/assert.hpp"
#include "realloop/http.hpp"

namespace loopsim {

const char* door_name(Door door) { return door == Door::listener ? "listener" : "handoff"; }

const char* batch_stop_name(BatchStop stop) {
  switch (stop) {
    case BatchStop::count: return "count";
    case BatchStop::again: return "EAGAIN";
    case BatchStop::emfile: return "EMFILE";
    case BatchStop::enfile: return "ENFILE";
    case BatchStop::enobufs: return "ENOBUFS";
    case BatchStop::max_connections: return "max_connections";
    case BatchStop::error: return "error";
  }
  return "?";
}

namespace {

constexpr std::size_t read_chunk = 16 * 1024;

BatchStop stop_for(int error) {
  switch (error) {
    case -EAGAIN: return BatchStop::again;
    case -EMFILE: return BatchStop::emfile;
    case -ENFILE: return BatchStop::enfile;
    case -ENOBUFS: return BatchStop::enobufs;
    default: return BatchStop::error;
  }
}

}  // namespace

Loop::Loop(Kernel& kernel, LoopConfig config, LoopObserver& observer, int worker)
    : kernel_(kernel), config_(config), observer_(observer), worker_(worker) {
  LOOPSIM_ASSERT_OP(config_.accept_batch, >=, 0);
  LOOPSIM_ASSERT_OP(config_.max_events, >, 0);
  events_.resize(std::size_t(config_.max_events));
}

Loop::~Loop() {
  for (std::size_t fd = 0; fd < connections_.size(); ++fd) {
    if (connections_[fd].open) kernel_.close(int(fd));
  }
  if (listener_ >= 0) kernel_.close(listener_);
  if (stop_wake_ >= 0) kernel_.close(stop_wake_);
  if (poller_ >= 0) kernel_.close(poller_);
}

int Loop::open(const ListenSpec& spec) {
  LOOPSIM_ASSERT(poller_ < 0);
  poller_ = kernel_.poller_create();
  if (poller_ < 0) return poller_;
  stop_wake_ = kernel_.wake_create();
  if (stop_wake_ < 0) return stop_wake_;
  if (int rc = kernel_.watch(poller_, stop_wake_, io::readable, Trigger::edge); rc < 0) return rc;
  listener_ = kernel_.listen(spec);
  if (listener_ < 0) return listener_;
  return kernel_.watch(poller_, listener_, io::readable, Trigger::edge);
}

void Loop::stop() {
  stop_requested_.store(true, std::memory_order_release);
  if (stop_wake_ >= 0) kernel_.wake_signal(stop_wake_);
}

void Loop::run() {
  LOOPSIM_ASSERT(poller_ >= 0);
  // The flag is read here too: a stop() that came before open() had no wake object to signal.
  while (!stopping_ && !stop_requested_.load(std::memory_order_acquire)) run_pass();
}

Nanos Loop::wait_timeout() const {
  if (accept_owed_ && config_.nonblocking_wait_when_owed) return Nanos(0);
  return config_.idle_timeout;
}

void Loop::run_pass() {
  ++pass_;
  Nanos timeout = wait_timeout();
  observer_.pass_begin(worker_, pass_, timeout);
  int n = kernel_.wait(poller_, events_, timeout);
  LOOPSIM_ASSERT_OP(n, >=, 0);
  observer_.events(worker_, pass_, std::span(events_.data(), std::size_t(n)));

  listener_ready_ = false;
  for (int i = 0; i < n; ++i) dispatch(events_[std::size_t(i)]);
  // R1: the batch runs after the pass's events, whether announced now or owed from before.
  if (config_.accept_after_events && (listener_ready_ || accept_owed_)) take_batch(Door::listener);
  if (!config_.accept_after_events && accept_owed_ && !listener_ready_) take_batch(Door::listener);
  observer_.pass_end(worker_, pass_, accept_owed_, false);
}

void Loop::dispatch(const PollEvent& event) {
  if (event.fd == stop_wake_) {
    kernel_.wake_drain(stop_wake_);
    if (stop_requested_.load(std::memory_order_acquire)) stopping_ = true;
    return;
  }
  if (event.fd == listener_) {
    listener_ready_ = true;
    // Sabotage of R1: the batch runs where the listen event falls in the list.
    if (!config_.accept_after_events) take_batch(Door::listener);
    return;
  }
  Connection* c = connection(event.fd);
  if (c == nullptr) return;  // closed earlier in this pass
  if (event.ready & io::writable) flush(event.fd, *c);
  if (connection(event.fd) != nullptr) serve(event.fd);
}

void Loop::take_batch(Door door) {
  int accepted = 0;
  BatchStop why = BatchStop::again;
  for (;;) {
    if (config_.accept_batch > 0 && accepted == config_.accept_batch) {
      why = BatchStop::count;
      break;
    }
    if (connection_count_ >= std::size_t(config_.max_connections)) {
      why = BatchStop::max_connections;
      break;
    }
    int fd = kernel_.accept(listener_);
    observer_.accepted(worker_, door, fd);
    if (fd == -ECONNABORTED) continue;  // that connection is gone; the next may not be
    if (fd < 0) {
      why = stop_for(fd);
      break;
    }
    ++accepted;
    admit(fd);
  }
  // R2/R3: owed only when the count stopped the drain.
  accept_owed_ = why == BatchStop::count && config_.owe_unfinished_batch;
  observer_.batch_end(worker_, door, accepted, why, accept_owed_);
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

int Loop::fd_of(const Connection& c) const {
  return int(&c - connections_.data());
}

Loop::Connection* Loop::connection(int fd) {
  if (fd < 0 || std::size_t(fd) >= connections_.size()) return nullptr;
  Connection& c = connections_[std::size_t(fd)];
  return c.open ? &c : nullptr;
}

void Loop::serve(int fd) {
  Connection* c = connection(fd);
  LOOPSIM_ASSERT(c != nullptr);
  Input input = read_input(*c);
  if (input == Input::reset) {
    close_connection(fd);
    return;
  }
  answer_requests(fd, *c);
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

void Loop::answer_requests(int fd, Connection& c) {
  while (!c.closing) {
    http::Request request;
    auto parsed = http::parse_request(c.input, std::size_t(config_.max_request_head), request);
    if (parsed == http::Parse::incomplete) return;
    http::Response response;
    if (parsed == http::Parse::complete) {
      observer_.request_begin(worker_, fd, request.target);
      response = http::handle(request, kernel_);
    } else {
      observer_.request_begin(worker_, fd, "");
      response = http::reject(parsed);
    }
    http::serialize(response, c.output);
    observer_.request_end(worker_, fd, response.status);
    c.closing = response.close;
    c.input.erase(0, parsed == http::Parse::complete ? request.length : c.input.size());
  }
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
  if (c.output.empty() && c.closing) {
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
  *c = Connection{};
  --connection_count_;
  observer_.closed(worker_, fd);
  kernel_.close(fd);
}

}  // namespace loopsim
