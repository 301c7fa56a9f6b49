// The client agents: connections that connect at a time, send their requests at their times,
// read the answers and record what they saw. They are callbacks in virtual time, not threads.
#pragma once

#include <string>
#include <vector>

#include "model/digest.hpp"
#include "model/sim_kernel.hpp"
#include "scenario/scenario.hpp"
#include "sim/workload.hpp"
#include "trace/trace.hpp"

namespace loopsim::sim {

class Clients final : public model::ClientSink {
 public:
  // `seed` draws the workloads' randomness (Poisson arrivals, path mixes), apart from the
  // choices, so that every explored schedule runs the same workload.
  Clients(model::Scheduler& scheduler, model::SimKernel& kernel, Trace& trace,
          std::uint16_t port, std::uint64_t seed = 1);

  // Schedules every connection and request of the groups, and labels them in the trace.
  void schedule(const std::vector<ClientGroup>& groups);
  // Resets the connections of up to `count` (0: all) connected clients of `group`.
  void reset_group(const std::string& group, int count);
  // At the run's end: each client still waiting for an answer whose bytes so far do not frame
  // as one records them (ev::Unframed), so that the report shows what came instead.
  void report_unframed();
  // At the run's end: each connection that still holds bytes either way records them (ev::Left).
  void report_left();
  // Every client's progress, for state digests.
  void digest(model::Digest& digest) const;
  // For canonical names (sim/canonical.hpp): how many clients there are, each one's group and
  // connection, and a digest of its own state under `masked` names (its connection's number
  // is then only whether it has one).
  std::size_t count() const { return clients_.size(); }
  std::int32_t group_of(ClientIndex client) const { return clients_[std::size_t(client)].group_index; }
  model::ConnId conn_of_client(ClientIndex client) const { return clients_[std::size_t(client)].conn; }
  std::uint64_t local_digest(ClientIndex client, const state::Names& masked) const;
  // A few of the fields local_digest takes, in a few operations: clients whose progress
  // differs have different digests (Canonical::twin_key).
  std::uint64_t progress(ClientIndex client) const;
  // The client a pending happening is about, if any.
  ClientIndex client_of_tag(const model::Tag& tag) const;
  // Whether a client's connection or request, landing just before kernel call `call`, has the
  // same effect as just after it (model::Commutes): false for anything else.
  bool commutes(const model::Tag& what, const model::Call& call) const;
  // The client behind a server descriptor, for the loop's reports.
  ClientIndex client_of(int server_fd) const;

  // model::ClientSink
  void established(model::ConnId conn) override;
  void syn_dropped(model::ConnId conn, Instant retry_at) override;
  void refused(model::ConnId conn, int error) override;
  void received(model::ConnId conn, std::string_view bytes) override;
  void peer_closed(model::ConnId conn) override;
  void peer_reset(model::ConnId conn) override;
  void read_waiting(model::ConnId conn) override;
  void served(model::ConnId conn, bool write, std::size_t size, std::int64_t result) override;

 private:
  struct Client {
    const ClientGroup* group = nullptr;
    std::int32_t group_index = 0;
    model::ConnId conn = model::no_conn;
    std::size_t next_request = 0;    // the next of group->requests to send
    std::size_t due = 0;             // requests whose time has come
    PathQueue unanswered;  // paths sent and not answered yet
    std::size_t answered = 0;
    AnswerStream input;  // a head at most: a body is counted off, not kept
    // A closed loop's: when it stops sending (connect time + duration; 0: never), and its
    // path mix's draws (0 without a mix, so that twins stay twins).
    MaybeInstant deadline;  // a time-bound closed loop's: it sends nothing new after it
    std::uint64_t draws = 0;
    // A delaying network (rtt, jitter): when the last thing sent each way arrives (nothing
    // overtakes it), and the jitter's draws.
    Instant up_at{};
    Instant down_at{};
    std::uint64_t net_draws = 0;
    // Its flags, together at the end: a held connection's client is one of a million.
    bool established = false;
    bool done = false;       // closed or refused
    bool held_back = false;  // established, and waiting out send_after_connect
    bool shut = false;       // half-closed: it sends nothing more
    bool read_tick = false;  // a slow reader's next share is on its way
    bool told_close = false;  // an answer said Connection: close: it sends nothing more
    // Skipped: group and group_index, fixed for the run by the client's place: clients are made
    // once, group after group, and fed in that order or in the canonical one, which sorts by
    // group first.
    static constexpr auto state_fields = state::fields(
        state::f::skip<&Client::group>, state::f::skip<&Client::group_index>, state::f::conn_name<&Client::conn>,
        state::f::value<&Client::next_request>, state::f::value<&Client::due>, state::f::value<&Client::unanswered>,
        state::f::value<&Client::answered>, state::f::value<&Client::input>, state::f::deadline<&Client::deadline>,
        state::f::value<&Client::draws>, state::f::until<&Client::up_at>, state::f::until<&Client::down_at>,
        state::f::value<&Client::net_draws>, state::f::value<&Client::established>, state::f::value<&Client::done>,
        state::f::value<&Client::held_back>, state::f::value<&Client::shut>, state::f::value<&Client::read_tick>,
        state::f::value<&Client::told_close>);
  };

  void start(ClientIndex client);
  void request_due(ClientIndex client);
  void send_due(ClientIndex client);
  void release(ClientIndex client);  // send_after_connect has passed
  // What a pending happening of a client carries (model::Tag::detail): which message a delayed
  // network brings, or why a request falls due.
  enum class Carried : std::uint64_t {
    open = 1, send, shutdown, reset, close, established, received, peer_closed, refused, peer_reset,
    think, release,
  };
  // A message: its kind and its bytes' digest.
  static std::uint64_t carrying(Carried what, std::string_view bytes);
  // A delaying network: `act` happens when a message sent now toward the server (up) or the
  // client (down) arrives; at once without rtt or jitter. `what` and `bytes` say what it is. An
  // `act` that takes a std::string_view is given the bytes: as they are when it happens at once,
  // and a copy kept with the message while it travels (a message costs nothing more unless it
  // waits).
  template <class Act>
  void up(ClientIndex client, Carried what, Act&& act, std::string_view bytes = {});
  template <class Act>
  void down(ClientIndex client, Carried what, Act&& act, std::string_view bytes = {});
  template <class Act>
  void carry(ClientIndex client, Carried what, Instant Client::*last, Act&& act, std::string_view bytes);
  Instant arrival(Client& c, Instant& last);
  void open(ClientIndex client);  // the SYN leaves (after up's delay)
  void arrive_established(ClientIndex client);
  // A closed loop: what an answer lets it send next, and whether it has finished.
  void answered_closed(ClientIndex client);
  void close_when_done(ClientIndex client);
  void half_close_when_sent(ClientIndex client);
  bool closed_sending(const Client& c) const;
  void read_answers(ClientIndex client, std::string_view bytes);
  void finish(ClientIndex client);
  ClientIndex client_of_conn(model::ConnId conn) const;
  // client_of_conn for a connection that must be a client's (asserted).
  ClientIndex owner(model::ConnId conn) const;

  model::Scheduler& scheduler_;
  model::SimKernel& kernel_;
  Trace& trace_;
  std::uint16_t port_;
  std::uint64_t seed_;
  std::vector<Client> clients_;
  std::vector<ClientIndex> by_conn_;  // ConnId -> client; conns are numbered in connect order
 public:
  // Skipped: the scheduler, the kernel and the trace (collaborators), the port and the seed
  // (fixed for the run), and by_conn_ (the inverse of each client's conn, which the digest sees).
  static constexpr auto state_fields = state::fields(
      state::f::reference("scheduler_"), state::f::reference("kernel_"), state::f::reference("trace_"),
      state::f::skip<&Clients::port_>, state::f::skip<&Clients::seed_>, state::f::by_client<&Clients::clients_>,
      state::f::skip<&Clients::by_conn_>);
  friend struct state::Access;
};

}  // namespace loopsim::sim
