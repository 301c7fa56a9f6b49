#include "sim/clients.hpp"

#include <charconv>
#include <cmath>

#include "realloop/assert.hpp"

namespace loopsim::sim {

namespace {

constexpr std::string_view content_length = "Content-Length: ";

std::string request_text(const std::string& path, bool close, const ClientGroup& group) {
  std::string text = "GET " + path + " HTTP/1.1\r\nHost: loopsim\r\n";
  if (close) text += "Connection: close\r\n";
  switch (group.stall) {
    case ClientGroup::Stall::none:
      if (group.body > 0) {
        text += "Content-Length: " + std::to_string(group.body) + "\r\n\r\n";
        text.append(std::size_t(group.body), 'b');
      } else {
        text += "\r\n";
      }
      break;
    case ClientGroup::Stall::head: break;  // the head's end never comes
    case ClientGroup::Stall::body: text += "Content-Length: 64\r\n\r\n0123456789abcdef"; break;
  }
  return text;
}

// Parses one answer at the front of `input`: its status and its length, or 0 if incomplete.
std::size_t parse_answer(std::string_view input, int& status) {
  auto head_end = input.find("\r\n\r\n");
  if (head_end == std::string_view::npos || input.size() < 12) return 0;
  std::from_chars(input.data() + 9, input.data() + 12, status);
  auto head = input.substr(0, head_end);
  std::size_t body = 0;
  if (auto at = head.find(content_length); at != std::string_view::npos) {
    auto digits = head.substr(at + content_length.size());
    std::from_chars(digits.data(), digits.data() + digits.size(), body);
  }
  std::size_t total = head_end + 4 + body;
  return input.size() >= total ? total : 0;
}

model::Tag tag(model::Happening what, ClientIndex client) { return {what, std::uint32_t(client)}; }

// A uniform draw in [0, 1) from 53 bits of SplitMix64.
double unit_draw(std::uint64_t& state) { return double(model::splitmix64(state) >> 11) * 0x1p-53; }

// The connection times of a group's members, in order: evenly spaced at `rate`, or a Poisson
// process at `rate` (exponential gaps), both from connect_at, where the first member connects.
class Arrivals {
 public:
  Arrivals(const ClientGroup& group, std::uint64_t seed, std::int32_t group_index)
      : group_(group), state_(seed ^ (0xa0761d6478bd642full * std::uint64_t(group_index + 1))) {}
  Nanos next(int member) {
    if (group_.rate <= 0) return group_.connect_at;
    if (group_.arrivals == ClientGroup::Arrivals::uniform)
      return group_.connect_at + Nanos(std::llround(double(member) * 1e9 / group_.rate));
    if (member > 0) elapsed_ += -std::log1p(-unit_draw(state_)) * 1e9 / group_.rate;
    return group_.connect_at + Nanos(std::llround(elapsed_));
  }

 private:
  const ClientGroup& group_;
  std::uint64_t state_;
  double elapsed_ = 0;  // nanoseconds since connect_at
};

// A closed loop's limit on the requests it sends; scripted clients send their list.
std::size_t request_limit(const ClientGroup& group) {
  if (!group.closed_loop()) return group.requests.size();
  return group.closed_requests > 0 ? std::size_t(group.closed_requests) : SIZE_MAX;
}

}  // namespace

Clients::Clients(model::Scheduler& scheduler, model::SimKernel& kernel, Trace& trace,
                 std::uint16_t port, std::uint64_t seed)
    : scheduler_(scheduler), kernel_(kernel), trace_(trace), port_(port), seed_(seed) {
  kernel_.set_client_sink(this);
}

void Clients::schedule(const std::vector<ClientGroup>& groups) {
  for (const ClientGroup& group : groups) {
    auto group_index = std::int32_t(trace_.groups.size());
    trace_.groups.push_back(group.name);
    trace_.group_sizes.push_back(group.count);
    Arrivals arrivals(group, seed_, group_index);
    // A closed loop bounded by time alone means what it has sent: its label counts up.
    const std::size_t meant = group.duration > Nanos{0} ? 0 : request_limit(group);
    for (int member = 0; member < group.count; ++member) {
      auto client = ClientIndex(clients_.size());
      Nanos connect_at = arrivals.next(member);
      Client c;
      c.group = &group;
      c.group_index = group_index;
      if (group.closed_loop()) {
        c.due = std::min(std::size_t(group.pipeline), request_limit(group));
        if (group.duration > Nanos{0}) c.deadline = connect_at + group.duration;
        if (group.paths.size() > 1) c.draws = seed_ ^ (0xe7037ed1a0b428dbull * std::uint64_t(client + 1));
      }
      clients_.push_back(std::move(c));
      trace_.clients.push_back(ClientLabel{group_index, member, std::int32_t(meant)});
      scheduler_.at(connect_at, [this, client] { start(client); }, tag(model::Happening::connect, client));
      for (const RequestSpec& request : group.requests) {
        // A request due by the time the client connects goes out with the handshake's
        // completion, in the same step, as a client that writes right after connect() does.
        if (request.at <= connect_at) {
          ++clients_.back().due;
          continue;
        }
        scheduler_.at(request.at, [this, client] { request_due(client); }, tag(model::Happening::request_due, client));
      }
    }
  }
}

ClientIndex Clients::client_of_conn(model::ConnId conn) const {
  return conn < by_conn_.size() ? by_conn_[conn] : no_client;
}

ClientIndex Clients::client_of(int server_fd) const {
  model::ConnId conn = kernel_.conn_of(server_fd);
  return conn == model::no_conn ? no_client : client_of_conn(conn);
}

void Clients::digest(model::Digest& d) const {
  state::visit([&d](std::int64_t v) { d.add(v); }, *this, scheduler_.now());
}

std::uint64_t Clients::twin_class(const model::Tag& tag) const {
  using model::Happening;
  ClientIndex client = no_client;
  switch (tag.what) {
    case Happening::connect:
    case Happening::request_due: client = ClientIndex(tag.subject); break;
    case Happening::handshake: client = client_of_conn(tag.subject); break;
    default: return 0;  // not a client's, or about a connection the server knows
  }
  if (client == no_client) return 0;
  const Client& c = clients_[std::size_t(client)];
  // A connection the server has seen has a place in its queue, a descriptor, bytes: renaming
  // its client would change more than a name.
  int attempts = 0;
  if (c.conn != model::no_conn) {
    attempts = kernel_.unseen_attempts(c.conn);
    if (attempts < 0) return 0;
  }
  model::Digest& d = twin_scratch_;
  d.clear();
  d.add(std::int64_t(tag.what)).add(c.group_index).add(attempts);
  Client unnamed = c;  // what tells it from its twins is only its connection's number
  unnamed.conn = c.conn == model::no_conn ? model::no_conn : 0;
  state::visit([&d](std::int64_t v) { d.add(v); }, unnamed, scheduler_.now());
  return d.value() | 1;  // 0 means "no twin"
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
    kernel_.client_reset(c.conn);
    trace_.events.push_back(ev::Reset{scheduler_.now(), i});
    c.done = true;
    ++done;
  }
}

void Clients::start(ClientIndex client) {
  trace_.events.push_back(ev::Connect{scheduler_.now(), client});
  model::ConnId conn = kernel_.connect(port_);
  if (by_conn_.size() <= conn) by_conn_.resize(conn + 1, no_client);
  by_conn_[conn] = client;
  clients_[std::size_t(client)].conn = conn;
  if (!clients_[std::size_t(client)].group->reads) kernel_.set_client_reading(conn, false);
}

void Clients::request_due(ClientIndex client) {
  ++clients_[std::size_t(client)].due;
  send_due(client);
}

void Clients::send_due(ClientIndex client) {
  Client& c = clients_[std::size_t(client)];
  if (!c.established || c.done) return;
  const ClientGroup& group = *c.group;
  const std::size_t limit = request_limit(group);
  // Only a count tells a request that it is the last; a closed loop bounded by time closes
  // its connection itself when it is done (answered_closed).
  const bool counted = group.duration == Nanos{0};
  while (c.next_request < c.due) {
    if (group.closed_loop() && !closed_sending(c)) {
      c.due = c.next_request;
      close_when_done(client);
      return;
    }
    const std::string& path = group.closed_loop() ? next_path(c) : group.requests[c.next_request].path;
    bool last = counted && c.next_request + 1 == limit;
    kernel_.send(c.conn, request_text(path, last && !group.keep_alive, group));
    trace_.events.push_back(ev::Send{scheduler_.now(), client, path});
    c.unanswered.push_back(path);
    ++c.next_request;
    if (!counted) ++trace_.clients[std::size_t(client)].requests;
  }
}

bool Clients::closed_sending(const Client& c) const {
  if (c.next_request >= request_limit(*c.group)) return false;
  return c.deadline == Nanos{0} || scheduler_.now() < c.deadline;
}

const std::string& Clients::next_path(Client& c) {
  const ClientGroup& group = *c.group;
  if (group.paths.empty()) return group.path;
  if (group.paths.size() == 1) return group.paths.front().path;
  std::int64_t total = 0;
  for (const auto& p : group.paths) total += p.weight;
  auto pick = std::int64_t(model::splitmix64(c.draws) % std::uint64_t(total));
  for (const auto& p : group.paths) {
    if (pick < p.weight) return p.path;
    pick -= p.weight;
  }
  return group.paths.back().path;
}

// One more request for each answer, after `think`.
void Clients::answered_closed(ClientIndex client) {
  Client& c = clients_[std::size_t(client)];
  if (c.done) return;
  if (!closed_sending(c)) return close_when_done(client);
  if (c.group->think == Nanos{0}) return request_due(client);
  scheduler_.at(scheduler_.now() + c.group->think, [this, client] { request_due(client); },
                tag(model::Happening::request_due, client));
}

// A closed loop bounded by time that has stopped sending and has every answer closes its
// connection, unless it keeps it alive. (Bounded by a count, its last request said close.)
void Clients::close_when_done(ClientIndex client) {
  const Client& c = clients_[std::size_t(client)];
  if (c.unanswered.empty() && c.group->duration > Nanos{0} && !c.group->keep_alive) finish(client);
}

void Clients::established(model::ConnId conn) {
  ClientIndex client = client_of_conn(conn);
  LOOPSIM_ASSERT(client != no_client);
  trace_.events.push_back(ev::Established{scheduler_.now(), client});
  clients_[std::size_t(client)].established = true;
  send_due(client);
}

void Clients::syn_dropped(model::ConnId conn, Nanos retry_at) {
  trace_.events.push_back(ev::SynDropped{scheduler_.now(), client_of_conn(conn), retry_at});
}

void Clients::refused(model::ConnId conn, int error) {
  ClientIndex client = client_of_conn(conn);
  trace_.events.push_back(ev::Refused{scheduler_.now(), client, error});
  clients_[std::size_t(client)].done = true;
}

void Clients::received(model::ConnId conn, std::string_view bytes) {
  ClientIndex client = client_of_conn(conn);
  clients_[std::size_t(client)].input.append(bytes);
  read_answers(client);
}

void Clients::read_answers(ClientIndex client) {
  Client& c = clients_[std::size_t(client)];
  int status = 0;
  std::size_t consumed = 0;  // erased once at the end: a pipelined burst costs linear time
  while (std::size_t length = parse_answer(std::string_view(c.input).substr(consumed), status)) {
    consumed += length;
    std::string path = "?";  // an answer to nothing it asked
    if (!c.unanswered.empty()) {
      path = std::move(c.unanswered.front());
      c.unanswered.pop_front();
    }
    ++c.answered;
    trace_.events.push_back(ev::Answer{scheduler_.now(), client, std::move(path), status});
    if (c.group->closed_loop()) answered_closed(client);
  }
  c.input.erase(0, consumed);
}

void Clients::peer_closed(model::ConnId conn) {
  ClientIndex client = client_of_conn(conn);
  trace_.events.push_back(ev::PeerClosed{scheduler_.now(), client});
  finish(client);
}

void Clients::peer_reset(model::ConnId conn) {
  ClientIndex client = client_of_conn(conn);
  trace_.events.push_back(ev::Refused{scheduler_.now(), client, ECONNRESET});
  clients_[std::size_t(client)].done = true;
}

// After the server's close, the client closes its end too, as a real client does.
void Clients::finish(ClientIndex client) {
  Client& c = clients_[std::size_t(client)];
  if (c.done) return;
  c.done = true;
  kernel_.client_close(c.conn);
}

}  // namespace loopsim::sim
