#include "sim/canonical.hpp"

#include "base/assert.hpp"
#include "sim/monitors.hpp"

#include <algorithm>
#include <numeric>

namespace loopsim::sim {

namespace {

// A client's own state digested with its connection's number masked: whether it has one.
class Masked final : public state::Names {
 public:
  std::int64_t canonical(state::Name, std::int64_t) const override { return 0; }
  std::int64_t original(state::Name, std::int64_t at) const override { return at; }
};

}  // namespace

Canonical::Canonical(const Scenario& scenario, const model::Scheduler& scheduler, const model::SimKernel& kernel,
                     const Clients& clients)
    : scheduler_(scheduler), kernel_(kernel), clients_(clients), interchangeable_(scenario.clients.size(), true) {
  for (const FaultSpec& f : scenario.faults) {
    if (f.kind != FaultSpec::Kind::reset || f.count == 0) continue;
    for (std::size_t g = 0; g < scenario.clients.size(); ++g) {
      if (scenario.clients[g].name == f.of) interchangeable_[g] = false;
    }
  }
}

std::uint64_t Canonical::own_signature(ClientIndex client) const {
  static const Masked masked;
  std::uint64_t own = state::fold(std::uint64_t(clients_.group_of(client)), clients_.local_digest(client, masked));
  std::uint64_t pending = scheduler_.pending_about(state::Name::client, std::uint32_t(client));
  model::ConnId conn = clients_.conn_of_client(client);
  if (conn != model::no_conn) {
    own = state::fold(own, kernel_.conn_digest(conn));
    pending += scheduler_.pending_about(state::Name::conn, conn);
  }
  if (monitors_ != nullptr) own = state::fold(own, monitors_->client_digest(client, scheduler_.now()));
  return state::fold(own, 0x51) + pending;
}

void Canonical::refresh() {
  const std::size_t n = clients_.count();
  signature_.resize(n);
  for (std::size_t i = 0; i < n; ++i) signature_[i] = own_signature(ClientIndex(i));
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [this](std::size_t a, std::size_t b) {
    std::int32_t ga = clients_.group_of(ClientIndex(a)), gb = clients_.group_of(ClientIndex(b));
    if (ga != gb) return ga < gb;
    if (!interchangeable_[std::size_t(ga)]) return a < b;
    return signature_[a] < signature_[b];
  });
  client_to_.assign(n, 0);
  client_from_.assign(n, 0);
  conn_to_.clear();
  conn_from_.clear();
  for (std::size_t k = 0; k < n; ++k) {
    client_to_[order[k]] = std::int64_t(k);
    client_from_[k] = std::int64_t(order[k]);
    // A renaming stays within a group: the groups keep their places.
    LOOPSIM_ASSERT(k == 0 || clients_.group_of(ClientIndex(order[k - 1])) <= clients_.group_of(ClientIndex(order[k])));
    model::ConnId conn = clients_.conn_of_client(ClientIndex(order[k]));
    if (conn == model::no_conn) continue;
    if (conn_to_.size() <= conn) conn_to_.resize(conn + 1, -1);
    LOOPSIM_ASSERT(conn_to_[conn] == -1);  // a connection is one client's
    conn_to_[conn] = std::int64_t(conn_from_.size());
    conn_from_.push_back(std::int64_t(conn));
  }
}

// Everything about the client but the happening itself (`own`), and the happening's kind and
// what it carries: twins are alike in all of it.
std::uint64_t Canonical::twin(const model::Tag& tag, std::uint64_t own) const {
  ClientIndex client = clients_.client_of_tag(tag);
  if (client == no_client || !interchangeable_[std::size_t(clients_.group_of(client))]) return 0;
  std::uint64_t rest = own_signature(client) - own;
  return state::fold(state::fold(state::fold(std::uint64_t(tag.what), tag.detail), rest), 1) | 1;
}

model::TwinKeyed Canonical::twin_key(const model::Tag& tag) const {
  // A happening's client, and its group, are its own for good; so is whether the group is
  // interchangeable.
  ClientIndex client = clients_.client_of_tag(tag);
  if (client == no_client) return {0, true};
  std::int32_t group = clients_.group_of(client);
  if (!interchangeable_[std::size_t(group)]) return {0, true};
  std::uint64_t key = state::fold(state::fold(std::uint64_t(tag.what), tag.detail), std::uint64_t(group));
  model::ConnId conn = clients_.conn_of_client(client);
  // A connection the server holds is told apart by its descriptor: no other client's has it.
  // That key lasts until the server lets the descriptor go: a client connects once, and its
  // connection is accepted once, so nothing else changes it.
  int server_fd = conn == model::no_conn ? -1 : kernel_.server_fd_of(conn);
  if (server_fd >= 0) return {state::fold(key, std::uint64_t(server_fd)) | 1, true};
  key = state::fold(key, clients_.progress(client));
  return {state::fold(key, conn == model::no_conn ? 0 : kernel_.conn_key(conn)) | 1, false};
}

std::uint64_t Canonical::twin_key_epoch() const {
  return 1 + kernel_.server_releases();
}

std::int64_t Canonical::canonical(state::Name kind, std::int64_t id) const {
  const std::vector<std::int64_t>& to = kind == state::Name::client ? client_to_ : conn_to_;
  return id >= 0 && std::size_t(id) < to.size() ? to[std::size_t(id)] : id;
}

std::int64_t Canonical::original(state::Name kind, std::int64_t at) const {
  const std::vector<std::int64_t>& from = kind == state::Name::client ? client_from_ : conn_from_;
  return at >= 0 && std::size_t(at) < from.size() ? from[std::size_t(at)] : at;
}

}  // namespace loopsim::sim
