#include "sim/clients.hpp"

#include <xxhash.h>

#include "base/assert.hpp"
#include "sim/workload.hpp"

namespace loopsim::sim {

namespace {

using model::tag;

bool delayed(const ClientGroup& group) { return group.rtt > Duration{0} || group.jitter > Duration{0}; }

}  // namespace

Clients::Clients(model::Scheduler& scheduler, model::SimKernel& kernel, Trace& trace,
                 std::uint16_t port, std::uint64_t seed)
    : scheduler_(scheduler), kernel_(kernel), trace_(trace), port_(port), seed_(seed) {
  kernel_.set_client_sink(this);
}

void Clients::schedule(const std::vector<ClientGroup>& groups) {
  // Each held connection costs its client and its kernel state: room for all of them at once,
  // so that a million idle clients do not also pay for a vector's growth slack.
  std::size_t total = 0, happenings = 0;
  for (const ClientGroup& group : groups) {
    total += std::size_t(std::max(group.count, 0));
    happenings += std::size_t(std::max(group.count, 0)) * (1 + group.requests.size());  // a connect, each request
  }
  clients_.reserve(clients_.size() + total);
  trace_.clients.reserve(trace_.clients.size() + total);
  kernel_.expect_connections(total);
  scheduler_.expect_happenings(happenings);
  for (const ClientGroup& group : groups) {
    auto group_index = std::int32_t(trace_.groups.size());
    trace_.groups.push_back(group.name);
    trace_.group_sizes.push_back(group.count);
    Arrivals arrivals(group, seed_, group_index);
    // A closed loop bounded by time alone means what it has sent: its label counts up.
    const std::size_t meant = group.duration > Duration{0} ? 0 : request_limit(group);
    for (int member = 0; member < group.count; ++member) {
      auto client = ClientIndex(clients_.size());
      Window connect = arrivals.next(member);
      Instant connect_at = drawn_instant(connect, seed_, draw_salt(Drawn::connect, group_index, member));
      Client c;
      c.group = &group;
      c.input = AnswerStream(group);
      c.group_index = group_index;
      if (group.closed_loop()) {
        c.due = std::min(std::size_t(group.pipeline), request_limit(group));
        c.draws = path_draws(group, seed_, client);
      }
      if (group.jitter > Duration{0}) c.net_draws = seed_ ^ (0x8ebc6af09c88c6e3ull * std::uint64_t(client + 1));
      clients_.push_back(std::move(c));
      trace_.clients.push_back(ClientLabel{group_index, member, std::int32_t(meant)});
      scheduler_.at(connect, connect_at, [this, client] { start(client); }, tag(model::Happening::connect, client));
      for (std::size_t r = 0; r < group.requests.size(); ++r) {
        const Window& at = group.requests[r].at;
        Instant request_at = drawn_instant(at, seed_, draw_salt(Drawn::request, group_index, member, std::int64_t(r)));
        // A request due by the time the client connects goes out with the handshake's
        // completion, in the same step, as a client that writes right after connect() does.
        // Searched, that is a request whose window ends before the connection's opens.
        bool with_handshake = scheduler_.windows_explored() ? at.hi <= connect.lo : request_at <= connect_at;
        if (with_handshake) {
          ++clients_.back().due;
          continue;
        }
        scheduler_.at(at, request_at, [this, client] { request_due(client); }, tag(model::Happening::request_due, client));
      }
    }
  }
}

ClientIndex Clients::client_of_conn(model::ConnId conn) const {
  return conn < by_conn_.size() ? by_conn_[conn] : no_client;
}

// The client a connection the kernel reports on belongs to: every connection is a client's, for
// only clients connect (Clients::open maps it before the kernel can say anything of it).
ClientIndex Clients::owner(model::ConnId conn) const {
  const ClientIndex client = client_of_conn(conn);
  LOOPSIM_ASSERT(client != no_client);
  LOOPSIM_ASSERT_OP(clients_[std::size_t(client)].conn, ==, conn);  // the mapping both ways agrees
  return client;
}

ClientIndex Clients::client_of_tag(const model::Tag& tag) const {
  using model::Happening;
  switch (tag.what) {
    case Happening::connect:
    case Happening::request_due:
    case Happening::network:
    case Happening::client_read: return ClientIndex(tag.subject);
    case Happening::handshake:
    case Happening::delivery:
    case Happening::peer_reset: return client_of_conn(tag.subject);
    default: return no_client;
  }
}

// A connection's arrival touches the listener's queue and readiness (so the accept, the wait
// and anything that adds to a ready list, whose order the wait reports), the count of open
// files (so anything that takes a descriptor), and its own connection. A request's arrival
// touches its connection's bytes and readiness. Over a delaying network either only starts
// its way there: a later happening does the rest.
bool Clients::commutes(const model::Tag& what, const model::Call& call) const {
  using K = model::Call::Kind;
  bool connects = what.what == model::Happening::connect;
  if (!connects && what.what != model::Happening::request_due) return false;
  const Client& c = clients_[what.subject];
  if (delayed(*c.group)) return true;
  bool quiet_read = call.kind == K::read && !kernel_.read_may_notify(call.fd);
  switch (call.kind) {
    case K::write:
    case K::shutdown:
    case K::spend:
    case K::wake_drain: return true;
    case K::read:
    case K::close: {
      if (call.kind == K::read && !quiet_read) return false;
      if (connects) return !kernel_.is_listener(call.fd);
      // A request: not its own connection's descriptor.
      return c.conn == model::no_conn || kernel_.conn_of(call.fd) != c.conn;
    }
    case K::accept: return !connects;
    default: return false;
  }
}

ClientIndex Clients::client_of(int server_fd) const {
  model::ConnId conn = kernel_.conn_of(server_fd);
  return conn == model::no_conn ? no_client : client_of_conn(conn);
}

void Clients::digest(model::Digest& d) const {
  state::visit([&d](std::int64_t v) { d.add(v); }, *this, scheduler_.now());
}

std::uint64_t Clients::local_digest(ClientIndex client, const state::Names& masked) const {
  std::uint64_t value = 0;
  state::visit([&value](std::int64_t v) { value = state::fold(value, std::uint64_t(v)); },
               clients_[std::size_t(client)], scheduler_.now(), &masked);
  return value;
}

std::uint64_t Clients::progress(ClientIndex client) const {
  const Client& c = clients_[std::size_t(client)];
  std::uint64_t value = state::fold(std::uint64_t(c.next_request), std::uint64_t(c.answered));
  value = state::fold(value, std::uint64_t(c.due));
  return state::fold(value, std::uint64_t(c.established) | std::uint64_t(c.done) << 1 | std::uint64_t(c.shut) << 2);
}

// In the order the clients connected, not in the order they are listed: clients whose order
// was a symmetric choice stay interchangeable.
void Clients::reset_group(const std::string& group, int count) {
  int done = 0;
  for (std::size_t conn = 0; conn < by_conn_.size() && (count == 0 || done < count); ++conn) {
    ClientIndex i = by_conn_[conn];
    if (i == no_client) continue;
    Client& c = clients_[std::size_t(i)];
    if (c.group->name != group || !c.established || c.done) continue;
    up(i, Carried::reset, [this, conn = c.conn] { kernel_.client_reset(conn); });
    trace_.add(ev::Reset{scheduler_.now(), i});
    c.done = true;
    ++done;
  }
}

void Clients::start(ClientIndex client) {
  trace_.add(ev::Connect{scheduler_.now(), client});
  Client& c = clients_[std::size_t(client)];
  if (c.group->closed_loop() && c.group->duration > Duration{0}) c.deadline = scheduler_.now() + c.group->duration;
  up(client, Carried::open, [this, client] { open(client); });
}

Instant Clients::arrival(Client& c, Instant& last) {
  Duration way = c.group->rtt / 2;
  if (c.group->jitter > Duration{0}) {
    way += Duration(std::int64_t(model::splitmix64(c.net_draws) % std::uint64_t(c.group->jitter.count() + 1)));
  }
  // Strictly after the one before: same-instant happenings are a choice of order, and a
  // connection's bytes are not reordered by it.
  last = std::max(last + Duration(1), scheduler_.now() + way);
  return last;
}

template <class Act>
void Clients::carry(ClientIndex client, Carried what, Instant Client::*last, Act&& act, std::string_view bytes) {
  constexpr bool takes_bytes = std::is_invocable_v<Act&, std::string_view>;
  Client& c = clients_[std::size_t(client)];
  if (!delayed(*c.group)) {
    if constexpr (takes_bytes) {
      act(bytes);
    } else {
      act();
    }
    return;
  }
  std::function<void()> arrives;
  if constexpr (takes_bytes) {
    arrives = [act = std::forward<Act>(act), text = std::string(bytes)]() mutable { act(std::string_view(text)); };
  } else {
    arrives = std::forward<Act>(act);
  }
  scheduler_.at(arrival(c, c.*last), std::move(arrives), tag(model::Happening::network, client, carrying(what, bytes)));
}

template <class Act>
void Clients::up(ClientIndex client, Carried what, Act&& act, std::string_view bytes) {
  carry(client, what, &Client::up_at, std::forward<Act>(act), bytes);
}

template <class Act>
void Clients::down(ClientIndex client, Carried what, Act&& act, std::string_view bytes) {
  carry(client, what, &Client::down_at, std::forward<Act>(act), bytes);
}

std::uint64_t Clients::carrying(Carried what, std::string_view bytes) {
  std::uint64_t state = std::uint64_t(what) ^ XXH3_64bits(bytes.data(), bytes.size());
  return model::splitmix64(state);
}

// The SYN reaches the server: the handshake completes there in the same step.
void Clients::open(ClientIndex client) {
  kernel_.arrive(port_, [this, client](model::ConnId conn) {
    if (by_conn_.size() <= conn) by_conn_.resize(conn + 1, no_client);
    by_conn_[conn] = client;
    // A client connects once: its connection, once given, is its own for good (which a
    // lasting twin key, Canonical::twin_key, counts on).
    LOOPSIM_ASSERT(clients_[std::size_t(client)].conn == model::no_conn);
    clients_[std::size_t(client)].conn = conn;
    const ClientGroup& group = *clients_[std::size_t(client)].group;
    if (!group.reads) kernel_.set_client_reading(conn, false);
    if (group.read_rate > 0) kernel_.set_client_read_budget(conn, read_share(group));
  });
}

void Clients::request_due(ClientIndex client) {
  Client& c = clients_[std::size_t(client)];
  ++c.due;
  // A script's requests are due one at a time, each once: never more than it has.
  LOOPSIM_ASSERT(c.group->closed_loop() || c.due <= c.group->requests.size());
  send_due(client);
}

void Clients::send_due(ClientIndex client) {
  Client& c = clients_[std::size_t(client)];
  if (!c.established || c.done || c.held_back || c.told_close) return;
  const ClientGroup& group = *c.group;
  const std::size_t limit = request_limit(group);
  // Only a count tells a request that it is the last; a closed loop bounded by time closes
  // its connection itself when it is done (answered_closed).
  const bool counted = group.duration == Duration{0};
  // Over a network with delay, the requests sent at one instant travel together, as one write's
  // bytes do, and arrive as one: not one arrival each, a nanosecond apart, each a wake-up.
  std::string together;
  auto send_together = [&] {
    if (together.empty()) return;
    up(client, Carried::send, [this, conn = c.conn](std::string_view text) { kernel_.send(conn, text); }, together);
    together.clear();
  };
  LOOPSIM_ASSERT(c.conn != model::no_conn);  // established: it has its connection
  while (c.next_request < c.due) {
    if (group.closed_loop() && !closed_sending(c)) {
      c.due = c.next_request;
      send_together();
      half_close_when_sent(client);
      close_when_done(client);
      return;
    }
    LOOPSIM_ASSERT(group.closed_loop() || c.next_request < group.requests.size());
    const std::string& path = group.closed_loop() ? next_path(group, c.draws) : group.requests[c.next_request].path;
    bool last = counted && c.next_request + 1 == limit;
    std::string text = request_text(path, last && !group.keep_alive, group);
    if (delayed(group)) together += text;
    else up(client, Carried::send, [this, conn = c.conn](std::string_view bytes) { kernel_.send(conn, bytes); }, text);
    trace_.add(ev::Send{scheduler_.now(), client, path});
    c.unanswered.push(path);
    ++c.next_request;
    if (!counted) ++trace_.clients[std::size_t(client)].requests;
  }
  send_together();
  half_close_when_sent(client);
}

// After its last request: a script's last, a count's last, or a time-bound loop's deadline.
void Clients::half_close_when_sent(ClientIndex client) {
  Client& c = clients_[std::size_t(client)];
  if (!c.group->half_close || c.shut || c.done) return;
  if (closed_sending(c)) return;  // not all sent yet
  c.shut = true;
  up(client, Carried::shutdown, [this, conn = c.conn] { kernel_.client_shutdown(conn); });
}

bool Clients::closed_sending(const Client& c) const {
  return sends_more(*c.group, c.next_request, c.deadline, scheduler_.now());
}

// One more request for each answer, after `think`.
void Clients::answered_closed(ClientIndex client) {
  Client& c = clients_[std::size_t(client)];
  if (c.done) return;
  if (!closed_sending(c)) return close_when_done(client);
  if (c.group->think == Duration{0}) return request_due(client);
  scheduler_.at(scheduler_.now() + c.group->think, [this, client] { request_due(client); },
                tag(model::Happening::request_due, client, std::uint64_t(Carried::think)));
}

// A closed loop bounded by time that has stopped sending and has every answer closes its
// connection, unless it keeps it alive. (Bounded by a count, its last request said close.)
void Clients::close_when_done(ClientIndex client) {
  half_close_when_sent(client);
  const Client& c = clients_[std::size_t(client)];
  if (c.unanswered.empty() && c.group->duration > Duration{0} && !c.group->keep_alive) finish(client);
}

void Clients::established(model::ConnId conn) {
  ClientIndex client = owner(conn);
  down(client, Carried::established, [this, client] { arrive_established(client); });
}

void Clients::arrive_established(ClientIndex client) {
  trace_.add(ev::Established{scheduler_.now(), client});
  Client& c = clients_[std::size_t(client)];
  LOOPSIM_ASSERT(!c.established && !c.held_back);  // a connection is established once
  c.established = true;
  if (const auto& gap = c.group->send_after_connect) {
    // Scheduled before the kernel wakes the loop for this handshake: the natural order (the
    // first scheduled) is the same as without a gap, and the other is the explorer's to try.
    c.held_back = true;
    scheduler_.at(scheduler_.now() + *gap, [this, client] { release(client); },
                  tag(model::Happening::request_due, client, std::uint64_t(Carried::release)));
    return;
  }
  send_due(client);
}

void Clients::release(ClientIndex client) {
  LOOPSIM_ASSERT(clients_[std::size_t(client)].held_back && clients_[std::size_t(client)].established);
  clients_[std::size_t(client)].held_back = false;
  send_due(client);
}

void Clients::syn_dropped(model::ConnId conn, Instant retry_at) {
  trace_.add(ev::SynDropped{scheduler_.now(), client_of_conn(conn), retry_at});
}

void Clients::refused(model::ConnId conn, int error) {
  ClientIndex client = owner(conn);
  down(client, Carried::refused, [this, client, error] {
    trace_.add(ev::Refused{scheduler_.now(), client, error});
    clients_[std::size_t(client)].done = true;
  }, std::to_string(error));
}

void Clients::received(model::ConnId conn, std::string_view bytes) {
  ClientIndex client = owner(conn);
  down(client, Carried::received, [this, client](std::string_view text) { read_answers(client, text); }, bytes);
}

void Clients::read_answers(ClientIndex client, std::string_view bytes) {
  Client& c = clients_[std::size_t(client)];
  int status = 0;
  while (!bytes.empty()) {
    const bool was_broken = c.input.broken();
    const AnswerStream::Step step = c.input.next(bytes, status);
    // Malformed: no way to frame the rest, so no answer will come of this connection's bytes.
    if (step == AnswerStream::Step::malformed && !was_broken)
      trace_.add(ev::Unframed{scheduler_.now(), client, c.input.unframed()});
    if (step != AnswerStream::Step::answer) return;
    std::string path = c.unanswered.pop();
    ++c.answered;
    trace_.add(ev::Answer{scheduler_.now(), client, std::move(path), status});
    // The server said it will take no more on this connection: a client sends no more on it.
    if (c.input.closes()) c.told_close = true;
    if (c.group->closed_loop()) answered_closed(client);
    // Any protocol but HTTP has no Connection: close: a client done with it closes it.
    if (c.group->raw && !c.group->keep_alive && c.unanswered.empty() && !closed_sending(c)) finish(client);
  }
}

void Clients::report_unframed() {
  for (std::size_t i = 0; i < clients_.size(); ++i) {
    const Client& c = clients_[i];
    if (!c.unanswered.empty() && !c.input.broken() && !c.input.unframed().empty())
      trace_.add(ev::Unframed{scheduler_.now(), ClientIndex(i), c.input.unframed()});
  }
}

void Clients::report_left() {
  if (!trace_.keeps<ev::Left>()) return;
  for (std::size_t i = 0; i < clients_.size(); ++i) {
    const model::ConnId conn = clients_[i].conn;
    if (conn == model::no_conn) continue;
    const std::size_t unread = kernel_.unread_bytes(conn), unsent = kernel_.unsent_bytes(conn);
    if (unread + unsent > 0)
      trace_.add(ev::Left{scheduler_.now(), ClientIndex(i), std::int64_t(unread), std::int64_t(unsent)});
  }
}

void Clients::served(model::ConnId conn, bool write, std::size_t size, std::int64_t result) {
  if (write) {
    if (trace_.keeps<ev::Wrote>()) trace_.add(ev::Wrote{scheduler_.now(), client_of_conn(conn), std::int64_t(size), result});
  } else if (trace_.keeps<ev::Read>()) {
    trace_.add(ev::Read{scheduler_.now(), client_of_conn(conn), std::int64_t(size), result});
  }
}

void Clients::peer_closed(model::ConnId conn) {
  ClientIndex client = owner(conn);
  down(client, Carried::peer_closed, [this, client] {
    trace_.add(ev::PeerClosed{scheduler_.now(), client});
    finish(client);
  });
}

void Clients::peer_reset(model::ConnId conn) {
  ClientIndex client = owner(conn);
  down(client, Carried::peer_reset, [this, client] {
    trace_.add(ev::Refused{scheduler_.now(), client, ECONNRESET});
    clients_[std::size_t(client)].done = true;
  });
}

void Clients::read_waiting(model::ConnId conn) {
  ClientIndex client = owner(conn);
  Client& c = clients_[std::size_t(client)];
  if (c.read_tick || c.group->read_rate == 0) return;
  c.read_tick = true;
  scheduler_.at(scheduler_.now() + read_tick, [this, client] {
    Client& reader = clients_[std::size_t(client)];
    LOOPSIM_ASSERT(reader.read_tick && reader.conn != model::no_conn);
    reader.read_tick = false;
    if (!reader.done) kernel_.set_client_read_budget(reader.conn, read_share(*reader.group));
  }, tag(model::Happening::client_read, client));
}

// After the server's close, the client closes its end too, as a real client does.
void Clients::finish(ClientIndex client) {
  Client& c = clients_[std::size_t(client)];
  if (c.done) return;
  LOOPSIM_ASSERT(c.conn != model::no_conn);  // only a client that connected has one to close
  c.done = true;
  up(client, Carried::close, [this, conn = c.conn] { kernel_.client_close(conn); });
}

}  // namespace loopsim::sim
