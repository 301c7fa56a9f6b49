#include "probe/live_clients.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <queue>

#include "sim/workload.hpp"

namespace loopsim::probe {

namespace {

using sim::ClientGroup;
using sim::ClientIndex;
namespace ev = sim::ev;

struct Client {
  const ClientGroup* group = nullptr;
  int fd = -1;
  bool connecting = false;
  bool established = false;
  bool done = false;  // closed, refused or reset
  std::size_t next_request = 0;
  std::size_t due = 0;
  sim::PathQueue unanswered;
  sim::AnswerStream input;  // a head at most, never a body: a live server's answers may be endless
  std::string output;  // bytes not yet taken by the socket
  std::optional<Instant> deadline;  // a time-bound closed loop's
  std::uint64_t draws = 0;
  bool held_back = false;  // waiting out send_after_connect
  bool shut = false;       // half-closed
  std::int64_t read_budget = -1;  // a slow reader's bytes left this tick; -1: no limit
};

constexpr int reads_per_event = 16;  // of 64 KiB each

enum class Todo : std::uint8_t { connect, request_due, release, read_grant, reset };

struct Pending {
  Instant at;
  std::uint64_t seq;
  Todo what;
  std::int64_t subject;  // a client, or a fault's index
  bool operator>(const Pending& o) const { return at != o.at ? at > o.at : seq > o.seq; }
};

class Driver {
 public:
  Driver(const sim::Scenario& scenario, const LiveOptions& options, LiveRun& run)
      : scenario_(scenario), options_(options), run_(run), trace_(run.trace) {}

  void go() {
    if (!prepare()) return;
    start_ = std::chrono::steady_clock::now();
    const Instant stop = std::min(scenario_.horizon, Instant{options_.time_limit});
    std::vector<epoll_event> ready(256);
    for (;;) {
      Instant t = now();
      if (t >= stop) {
        run_.end = stop < scenario_.horizon ? LiveRun::End::time_limit : LiveRun::End::horizon;
        if (run_.end == LiveRun::End::time_limit && quiet()) run_.end = LiveRun::End::quiet;
        break;
      }
      while (!pending_.empty() && pending_.top().at <= t) {
        Pending p = pending_.top();
        pending_.pop();
        act(p);
      }
      if (quiet()) {
        run_.end = LiveRun::End::quiet;
        break;
      }
      Instant next = pending_.empty() ? stop : std::min(stop, pending_.top().at);
      auto wait_ms = std::max<std::int64_t>(0, (next - now()).count() / 1'000'000);
      int n = ::epoll_wait(epoll_, ready.data(), int(ready.size()), int(std::min<std::int64_t>(wait_ms, 100)));
      for (int i = 0; i < n; ++i) handle(ClientIndex(ready[std::size_t(i)].data.u32), ready[std::size_t(i)].events);
    }
    run_.ran = since_start(now());
    for (Client& c : clients_) {
      if (c.fd >= 0) ::close(c.fd);
    }
    ::close(epoll_);
  }

 private:
  // The scenario's clock, live: the wall time since the clients started.
  Instant now() const { return Instant{std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now() - start_)}; }

  bool prepare() {
    std::int64_t total = 0;
    for (const ClientGroup& g : scenario_.clients) total += g.count;
    if (total > live_clients_max) {
      run_.error = "limit: " + std::to_string(total) + " clients; the probe runs at most " +
                   std::to_string(live_clients_max) + " live";
      return false;
    }
    rlimit limit{};
    ::getrlimit(RLIMIT_NOFILE, &limit);
    if (limit.rlim_cur < limit.rlim_max) {
      limit.rlim_cur = limit.rlim_max;
      ::setrlimit(RLIMIT_NOFILE, &limit);
      ::getrlimit(RLIMIT_NOFILE, &limit);
    }
    if (std::int64_t(limit.rlim_cur) < total + 64) {
      run_.error = "limit: " + std::to_string(total) + " clients need as many descriptors; this process may open " +
                   std::to_string(limit.rlim_cur) + " (ulimit -n)";
      return false;
    }
    if (::inet_pton(AF_INET, options_.address.c_str(), &address_.sin_addr) != 1) {
      run_.error = "\"" + options_.address + "\" is not an IPv4 address";
      return false;
    }
    address_.sin_family = AF_INET;
    address_.sin_port = htons(options_.port);
    epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (epoll_ < 0) {
      run_.error = std::string("epoll_create1: ") + std::strerror(errno);
      return false;
    }
    label();
    for (std::size_t f = 0; f < scenario_.faults.size(); ++f) {
      const sim::FaultSpec& fault = scenario_.faults[f];
      if (fault.kind == sim::FaultSpec::Kind::reset && fault.arms.empty()) {
        push(sim::drawn_instant(fault.at, scenario_.seed, sim::draw_salt(sim::Drawn::fault, std::int64_t(f))), Todo::reset,
             std::int64_t(f));
      } else {
        run_.not_applied.push_back(fault.kind == sim::FaultSpec::Kind::reset ? "a reset scoped to arms"
                                                                              : "a server-side fault ([[faults]])");
      }
    }
    if (!scenario_.actions.empty()) run_.not_applied.push_back("[[actions]] (the server's shutdown)");
    for (const ClientGroup& g : scenario_.clients) {
      if (g.rtt > Duration{0} || g.jitter > Duration{0}) {
        run_.not_applied.push_back("rtt and jitter (of \"" + g.name + "\": loopback adds no delay of its own)");
      }
    }
    if (!scenario_.posters.empty()) run_.not_applied.push_back("[[posters]] (the server's foreign threads)");
    return true;
  }

  // The trace's header and labels as the simulation writes them, and every connection and
  // scripted request scheduled.
  void label() {
    trace_.scenario = scenario_.name;
    trace_.arm = "live";
    trace_.seed = scenario_.seed;
    trace_.horizon = scenario_.horizon;
    trace_.accept_batch = scenario_.loop.accept_batch;
    trace_.max_connections = scenario_.loop.max_connections;
    trace_.workers = scenario_.workers;
    for (const ClientGroup& group : scenario_.clients) {
      auto group_index = std::int32_t(trace_.groups.size());
      trace_.groups.push_back(group.name);
      trace_.group_sizes.push_back(group.count);
      sim::Arrivals arrivals(group, scenario_.seed, group_index);
      const std::size_t meant = group.duration > Duration{0} ? 0 : sim::request_limit(group);
      for (int member = 0; member < group.count; ++member) {
        auto client = ClientIndex(clients_.size());
        // The instants a simulated run draws (sim/clients.cpp), window by window.
        Instant connect_at = sim::drawn_instant(arrivals.next(member), scenario_.seed,
                                              sim::draw_salt(sim::Drawn::connect, group_index, member));
        Client c;
        c.group = &group;
        c.input = sim::AnswerStream(group);
        if (group.closed_loop()) {
          c.due = std::min(std::size_t(group.pipeline), sim::request_limit(group));
          if (group.duration > Duration{0}) c.deadline = connect_at + group.duration;
          c.draws = sim::path_draws(group, scenario_.seed, client);
        }
        for (std::size_t r = 0; r < group.requests.size(); ++r) {
          Instant request_at = sim::drawn_instant(group.requests[r].at, scenario_.seed,
                                                sim::draw_salt(sim::Drawn::request, group_index, member, std::int64_t(r)));
          if (request_at <= connect_at) {
            ++c.due;
          } else {
            push(request_at, Todo::request_due, client);
          }
        }
        clients_.push_back(std::move(c));
        trace_.clients.push_back(sim::ClientLabel{group_index, member, std::int32_t(meant)});
        push(connect_at, Todo::connect, client);
      }
    }
  }

  void push(Instant at, Todo what, std::int64_t subject) { pending_.push(Pending{at, seq_++, what, subject}); }

  // Nothing is due and nothing is on its way: every client is done, or idle with every answer in.
  bool quiet() const {
    if (!pending_.empty()) return false;
    for (const Client& c : clients_) {
      if (c.done) continue;
      if (c.connecting || c.held_back || !c.unanswered.empty() || c.next_request < c.due) return false;
    }
    return true;
  }

  void act(const Pending& p) {
    switch (p.what) {
      case Todo::connect: return connect(ClientIndex(p.subject));
      case Todo::request_due: return request_due(ClientIndex(p.subject));
      case Todo::read_grant:
        clients_[std::size_t(p.subject)].read_budget = sim::read_share(*clients_[std::size_t(p.subject)].group);
        if (!clients_[std::size_t(p.subject)].done) interest(ClientIndex(p.subject));
        return;
      case Todo::release:
        clients_[std::size_t(p.subject)].held_back = false;
        return send_due(ClientIndex(p.subject));
      case Todo::reset: return reset(scenario_.faults[std::size_t(p.subject)]);
    }
  }

  void connect(ClientIndex client) {
    Client& c = clients_[std::size_t(client)];
    trace_.events.push_back(ev::Connect{now(), client});
    c.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c.fd < 0) return refused(client, errno);
    int one = 1;
    ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int rc = ::connect(c.fd, reinterpret_cast<const sockaddr*>(&address_), sizeof address_);
    if (rc < 0 && errno != EINPROGRESS) return refused(client, errno);
    epoll_event e{};
    e.events = EPOLLOUT;
    e.data.u32 = std::uint32_t(client);
    ::epoll_ctl(epoll_, EPOLL_CTL_ADD, c.fd, &e);
    c.connecting = true;
    if (c.group->read_rate > 0) c.read_budget = sim::read_share(*c.group);
  }

  void refused(ClientIndex client, int error) {
    Client& c = clients_[std::size_t(client)];
    trace_.events.push_back(ev::Refused{now(), client, error});
    close_client(c);
  }

  void close_client(Client& c) {
    if (c.fd >= 0) ::close(c.fd);  // closing removes it from the epoll set
    c.fd = -1;
    c.done = true;
    c.connecting = false;
  }

  void interest(ClientIndex client) {
    Client& c = clients_[std::size_t(client)];
    epoll_event e{};
    const bool reading = c.group->reads && c.read_budget != 0;
    e.events = (reading ? EPOLLIN : 0u) | (c.output.empty() ? 0u : EPOLLOUT);
    e.data.u32 = std::uint32_t(client);
    ::epoll_ctl(epoll_, EPOLL_CTL_MOD, c.fd, &e);
  }

  void handle(ClientIndex client, std::uint32_t events) {
    Client& c = clients_[std::size_t(client)];
    if (c.done) return;
    if (c.connecting) {
      int error = 0;
      socklen_t size = sizeof error;
      ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &error, &size);
      if (error != 0) return refused(client, error);
      c.connecting = false;
      c.established = true;
      trace_.events.push_back(ev::Established{now(), client});
      // A gap of 0 is what a real client does, and the race it opens is the real one.
      if (c.group->send_after_connect && *c.group->send_after_connect > Duration{0}) {
        c.held_back = true;
        push(now() + *c.group->send_after_connect, Todo::release, client);
      }
      send_due(client);
      if (!c.done) interest(client);
      return;
    }
    if (!c.group->reads && (events & (EPOLLHUP | EPOLLERR))) {  // gone, and it never reads to hear it
      trace_.events.push_back(ev::PeerClosed{now(), client});
      return close_client(c);
    }
    if (events & EPOLLOUT) flush(client);
    if (!c.done && (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && c.group->reads) read(client);
  }

  void flush(ClientIndex client) {
    Client& c = clients_[std::size_t(client)];
    while (!c.output.empty()) {
      ssize_t n = ::send(c.fd, c.output.data(), c.output.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EAGAIN) break;
      if (n < 0) return refused(client, errno);
      c.output.erase(0, std::size_t(n));
    }
    interest(client);
    if (c.output.empty()) half_close_when_sent(client);
  }

  // At most reads_per_event reads, then back to the loop: a server that never stops sending
  // must not keep the probe from its clock (--time-limit) or from its other clients.
  void read(ClientIndex client) {
    Client& c = clients_[std::size_t(client)];
    char buffer[65536];
    for (int reads = 0; reads < reads_per_event; ++reads) {
      if (c.read_budget == 0) {  // a slow reader: the rest waits for the next share
        push(now() + sim::read_tick, Todo::read_grant, client);
        return interest(client);
      }
      std::size_t want = c.read_budget < 0 ? sizeof buffer : std::min<std::size_t>(sizeof buffer, std::size_t(c.read_budget));
      ssize_t n = ::recv(c.fd, buffer, want, 0);
      if (n > 0) {
        if (c.read_budget > 0) c.read_budget -= n;
        answers(client, std::string_view(buffer, std::size_t(n)));
        if (c.done) return;
        continue;
      }
      if (n < 0 && errno == EAGAIN) return;
      if (n < 0) return refused(client, errno);  // ECONNRESET, as the simulation records it
      trace_.events.push_back(ev::PeerClosed{now(), client});
      return close_client(c);
    }
  }

  void answers(ClientIndex client, std::string_view bytes) {
    Client& c = clients_[std::size_t(client)];
    int status = 0;
    while (!bytes.empty()) {
      switch (c.input.next(bytes, status)) {
        case sim::AnswerStream::Step::more: return;
        case sim::AnswerStream::Step::malformed:
          // No way to frame the rest, so no answer can come of it: the probe hangs up (EPROTO).
          ++run_.unframed;
          trace_.events.push_back(ev::Unframed{now(), client, c.input.unframed()});
          return refused(client, EPROTO);
        case sim::AnswerStream::Step::answer: break;
      }
      std::string path = c.unanswered.pop();  // "?": an answer to nothing asked
      trace_.events.push_back(ev::Answer{now(), client, std::move(path), status});
      if (c.group->closed_loop()) answered_closed(client);
      if (c.done) return;
      // Any protocol but HTTP has no Connection: close: a client done with it closes it.
      if (c.group->raw && !c.group->keep_alive && c.unanswered.empty() && !closed_sending(c)) return close_client(c);
    }
  }

  bool closed_sending(const Client& c) const {
    return sim::sends_more(*c.group, c.next_request, c.deadline, now());
  }

  void request_due(ClientIndex client) {
    ++clients_[std::size_t(client)].due;
    send_due(client);
  }

  void send_due(ClientIndex client) {
    Client& c = clients_[std::size_t(client)];
    if (!c.established || c.done || c.held_back) return;
    const ClientGroup& group = *c.group;
    const std::size_t limit = sim::request_limit(group);
    const bool counted = group.duration == Duration{0};
    bool sent = false;
    while (c.next_request < c.due) {
      if (group.closed_loop() && !closed_sending(c)) {
        c.due = c.next_request;
        close_when_done(client);
        break;
      }
      const std::string& path = group.closed_loop() ? sim::next_path(group, c.draws) : group.requests[c.next_request].path;
      bool last = counted && c.next_request + 1 == limit;
      c.output += sim::request_text(path, last && !group.keep_alive, group);
      trace_.events.push_back(ev::Send{now(), client, path});
      c.unanswered.push(path);
      ++c.next_request;
      if (!counted) ++trace_.clients[std::size_t(client)].requests;
      sent = true;
    }
    if (sent && !c.done) flush(client);
    half_close_when_sent(client);
  }

  // After its last request, once its bytes have left: shutdown(SHUT_WR).
  void half_close_when_sent(ClientIndex client) {
    Client& c = clients_[std::size_t(client)];
    if (!c.group->half_close || c.shut || c.done || !c.output.empty() || !c.established) return;
    if (closed_sending(c)) return;  // not all sent yet
    c.shut = true;
    ::shutdown(c.fd, SHUT_WR);
  }

  void answered_closed(ClientIndex client) {
    Client& c = clients_[std::size_t(client)];
    if (!closed_sending(c)) return close_when_done(client);
    if (c.group->think == Duration{0}) return request_due(client);
    push(now() + c.group->think, Todo::request_due, client);
  }

  void close_when_done(ClientIndex client) {
    half_close_when_sent(client);
    Client& c = clients_[std::size_t(client)];
    if (c.unanswered.empty() && c.group->duration > Duration{0} && !c.group->keep_alive) close_client(c);
  }

  // An abortive close (SO_LINGER 0), as the simulation's reset fault.
  void reset(const sim::FaultSpec& fault) {
    int done = 0;
    for (std::size_t i = 0; i < clients_.size() && (fault.count == 0 || done < fault.count); ++i) {
      Client& c = clients_[i];
      if (c.group->name != fault.of || !c.established || c.done) continue;
      linger l{1, 0};
      ::setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
      trace_.events.push_back(ev::Reset{now(), ClientIndex(i)});
      close_client(c);
      ++done;
    }
  }

  const sim::Scenario& scenario_;
  const LiveOptions& options_;
  LiveRun& run_;
  sim::Trace& trace_;
  std::vector<Client> clients_;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> pending_;
  std::uint64_t seq_ = 0;
  sockaddr_in address_{};
  int epoll_ = -1;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

LiveRun drive_live(const sim::Scenario& scenario, const LiveOptions& options) {
  LiveRun run;
  Driver(scenario, options, run).go();
  return run;
}

}  // namespace loopsim::probe
