// Canonical names for interchangeable clients: the counting abstraction of a state.
//
// The clients of one group differ only in what happened to them. Two states that differ only in
// which of them is which (client 3 answered and client 5 waiting, or the other way round) have
// the same futures, renamed. A world's digest takes its clients, and their connections, under
// canonical names: the clients of each group sorted by their signatures (their own state, their
// connection's, its place in an accept queue, and the happenings pending for them), so that
// the group is digested as a multiset. Descriptors keep their numbers: the kernel hands out the
// lowest free one, which makes a number more than a name.
//
// The same signatures give the scheduler's twins: happenings of one kind about clients with equal
// signatures lead to states equal under a renaming, so only one of them is an alternative.
//
// A group is not interchangeable where the order of its connections matters: a `reset` fault
// that resets a count of them takes the first to have connected.
#pragma once

#include <cstdint>
#include <vector>

#include "model/scheduler.hpp"
#include "model/sim_kernel.hpp"
#include "realloop/state.hpp"
#include "scenario/scenario.hpp"
#include "sim/clients.hpp"

namespace loopsim::sim {

class Canonical final : public state::Names {
 public:
  Canonical(const Scenario& scenario, const model::Scheduler& scheduler, const model::SimKernel& kernel,
            const Clients& clients);

  // History properties' monitors (sim/monitors.hpp): a client's part of them is part of its
  // signature, for clients whose pasts differ are not twins.
  void set_monitors(const class Monitors* monitors) { monitors_ = monitors; }
  // Names for the state as it is now.
  void refresh();
  // The twin class of a pending happening (model::TwinClass).
  std::uint64_t twin(const model::Tag& tag, std::uint64_t own) const;
  // Its key (model::TwinKey): the happening's kind and its client's group; then the server's
  // descriptor for the client's connection, where it has one, or else the client's progress
  // and its connection's bytes. Equal classes mean equal keys. A key by descriptor lasts.
  model::TwinKeyed twin_key(const model::Tag& tag) const;
  // Moves whenever the server lets a connection's descriptor go (model::TwinKeyEpoch): all
  // that changes a lasting key.
  std::uint64_t twin_key_epoch() const;

  std::int64_t canonical(state::Name kind, std::int64_t id) const override;
  std::int64_t original(state::Name kind, std::int64_t at) const override;

 private:
  const model::Scheduler& scheduler_;
  const model::SimKernel& kernel_;
  const Clients& clients_;
  // A client's own state, its connection's, and what is pending for either.
  std::uint64_t own_signature(ClientIndex client) const;
  const class Monitors* monitors_ = nullptr;

  std::vector<bool> interchangeable_;   // by group
  std::vector<std::uint64_t> signature_;  // by client, as of refresh()
  std::vector<std::int64_t> client_to_, client_from_, conn_to_, conn_from_;
};

}  // namespace loopsim::sim
