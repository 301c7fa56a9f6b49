// Property tests of SimKernel as a state machine: random sequences of arrivals, accepts, sends,
// reads, waits, closes and limit changes, run against a small reference model of what Linux
// would do. After every step the invariants hold: the accept queue never exceeds its capacity;
// an edge-triggered item is reported only after a wake-up since its last harvest; EMFILE never
// consumes a connection; descriptors take the lowest free number; none leaks.
#include <rapidcheck.h>
#include <rapidcheck/state.h>

#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <sstream>

#include "model/sim_kernel.hpp"

using namespace loopsim;
using namespace loopsim::model;
using namespace std::chrono_literals;

namespace {

constexpr std::uint16_t port = 80;
constexpr int backlog = 4;             // capacity 5: overflows are common
constexpr int first_fd = 3;            // after the standard streams
constexpr std::size_t clients_max = 40;
constexpr std::size_t events_max = 64;  // more than can ever be ready: every item is harvested

struct ClientModel {
  enum class State { queued, accepted, dropped, gone } state = State::queued;
  int fd = -1;
  std::size_t buffered = 0;  // bytes sent and not yet read
  bool closed = false;       // the client closed its end
};

struct Model {
  int listener = first_fd;
  int poller = first_fd + 1;
  int rlimit = 1024;
  std::vector<ClientModel> clients;  // by ConnId
  std::deque<ConnId> queue;
  std::map<int, ConnId> accepted;    // server fd -> client
  bool listener_woken = false;       // an arrival since the listener's last harvest
  std::set<int> sockets_woken;       // sockets with a wake-up since their last harvest

  std::set<int> open_fds() const {
    std::set<int> fds{listener, poller};
    for (const auto& [fd, client] : accepted) fds.insert(fd);
    return fds;
  }
  int lowest_free() const {
    auto fds = open_fds();
    int fd = 0;
    while (fd < first_fd || fds.count(fd)) ++fd;
    return fd;
  }
  std::vector<ConnId> talking() const {  // clients that may still send or close
    std::vector<ConnId> out;
    for (ConnId c = 0; c < clients.size(); ++c) {
      auto s = clients[c].state;
      if (!clients[c].closed && (s == ClientModel::State::queued || s == ClientModel::State::accepted)) {
        out.push_back(c);
      }
    }
    return out;
  }
  std::vector<int> server_fds() const {
    std::vector<int> out;
    for (const auto& [fd, client] : accepted) out.push_back(fd);
    return out;
  }
};

struct Sut {
  Sut() : kernel(scheduler, SimKernelConfig{}) {
    listener = kernel.listen(ListenSpec{"127.0.0.1", port, backlog});
    poller = kernel.poller_create();
    kernel.watch(poller, listener, io::readable, Trigger::edge);
  }
  void settle() { scheduler.run_until(scheduler.now() + 1ns); }
  Scheduler scheduler;
  SimKernel kernel;
  int listener = -1;
  int poller = -1;
};

using Command = rc::state::Command<Model, Sut>;

void check_invariants(const Model& m, Sut& s) {
  RC_ASSERT(s.kernel.backlog(s.listener) == m.queue.size());
  RC_ASSERT(m.queue.size() <= std::size_t(backlog) + 1);
  RC_ASSERT(s.kernel.open_descriptors() == std::size_t(first_fd) + m.open_fds().size());
}

struct Connect : Command {
  void checkPreconditions(const Model& m) const override { RC_PRE(m.clients.size() < clients_max); }
  void apply(Model& m) const override {
    ClientModel c;
    if (m.queue.size() < std::size_t(backlog) + 1) {
      m.queue.push_back(ConnId(m.clients.size()));
      m.listener_woken = true;  // K3: every completed handshake is a wake-up
    } else {
      c.state = ClientModel::State::dropped;  // K9: the SYN is dropped
    }
    m.clients.push_back(c);
  }
  void run(const Model& m, Sut& s) const override {
    RC_ASSERT(s.kernel.connect(port) == ConnId(m.clients.size()));
    s.settle();
    Model after = m;
    apply(after);
    check_invariants(after, s);
  }
  void show(std::ostream& os) const override { os << "Connect"; }
};

struct Accept : Command {
  void apply(Model& m) const override {
    int fd = m.lowest_free();
    if (fd >= m.rlimit || m.queue.empty()) return;  // EMFILE consumes nothing; EAGAIN
    ConnId c = m.queue.front();
    m.queue.pop_front();
    m.accepted[fd] = c;
    m.clients[c].state = ClientModel::State::accepted;
    m.clients[c].fd = fd;
    // Registering a ready socket queues it at once.
    if (m.clients[c].buffered > 0 || m.clients[c].closed) m.sockets_woken.insert(fd);
  }
  void run(const Model& m, Sut& s) const override {
    int fd = m.lowest_free();
    int expected = fd >= m.rlimit ? -EMFILE : m.queue.empty() ? -EAGAIN : fd;
    int got = s.kernel.accept(s.listener);
    RC_ASSERT(got == expected);
    if (got >= 0) {
      RC_ASSERT(s.kernel.conn_of(got) == m.queue.front());
      RC_ASSERT(s.kernel.watch(s.poller, got, io::readable, Trigger::edge) == 0);
    }
    Model after = m;
    apply(after);
    check_invariants(after, s);
  }
  void show(std::ostream& os) const override { os << "Accept"; }
};

struct Send : Command {
  ConnId client = 0;
  std::size_t bytes = 1;
  explicit Send(const Model& m)
      : client(*rc::gen::elementOf(m.talking())), bytes(*rc::gen::inRange<std::size_t>(1, 64)) {}
  void checkPreconditions(const Model& m) const override {
    auto t = m.talking();
    RC_PRE(std::find(t.begin(), t.end(), client) != t.end());
  }
  void apply(Model& m) const override {
    m.clients[client].buffered += bytes;
    if (m.clients[client].state == ClientModel::State::accepted) {
      m.sockets_woken.insert(m.clients[client].fd);  // K3: each arrival is a wake-up
    }
  }
  void run(const Model& m, Sut& s) const override {
    s.kernel.send(client, std::string(bytes, 'x'));
    Model after = m;
    apply(after);
    check_invariants(after, s);
  }
  void show(std::ostream& os) const override { os << "Send(" << client << ", " << bytes << ")"; }
};

struct ClientClose : Command {
  ConnId client = 0;
  explicit ClientClose(const Model& m) : client(*rc::gen::elementOf(m.talking())) {}
  void checkPreconditions(const Model& m) const override {
    auto t = m.talking();
    RC_PRE(std::find(t.begin(), t.end(), client) != t.end());
  }
  void apply(Model& m) const override {
    m.clients[client].closed = true;
    if (m.clients[client].state == ClientModel::State::accepted) {
      m.sockets_woken.insert(m.clients[client].fd);
    }
  }
  void run(const Model& m, Sut& s) const override {
    s.kernel.client_close(client);
    Model after = m;
    apply(after);
    check_invariants(after, s);
  }
  void show(std::ostream& os) const override { os << "ClientClose(" << client << ")"; }
};

struct Read : Command {
  int fd = -1;
  explicit Read(const Model& m) : fd(*rc::gen::elementOf(m.server_fds())) {}
  void checkPreconditions(const Model& m) const override { RC_PRE(m.accepted.count(fd) == 1u); }
  void apply(Model& m) const override {
    auto& c = m.clients[m.accepted.at(fd)];
    c.buffered -= std::min<std::size_t>(c.buffered, 32);
  }
  void run(const Model& m, Sut& s) const override {
    const auto& c = m.clients[m.accepted.at(fd)];
    std::int64_t expected = c.buffered > 0 ? std::int64_t(std::min<std::size_t>(c.buffered, 32))
                            : c.closed     ? 0
                                           : -EAGAIN;
    char buffer[32];
    RC_ASSERT(s.kernel.read(fd, buffer) == expected);
  }
  void show(std::ostream& os) const override { os << "Read(" << fd << ")"; }
};

struct ServerClose : Command {
  int fd = -1;
  explicit ServerClose(const Model& m) : fd(*rc::gen::elementOf(m.server_fds())) {}
  void checkPreconditions(const Model& m) const override { RC_PRE(m.accepted.count(fd) == 1u); }
  void apply(Model& m) const override {
    m.clients[m.accepted.at(fd)].state = ClientModel::State::gone;
    m.accepted.erase(fd);
    m.sockets_woken.erase(fd);  // K12: off every ready list
  }
  void run(const Model& m, Sut& s) const override {
    RC_ASSERT(s.kernel.close(fd) == 0);
    Model after = m;
    apply(after);
    check_invariants(after, s);
  }
  void show(std::ostream& os) const override { os << "ServerClose(" << fd << ")"; }
};

// K3/K4: exactly the items woken since their last harvest and still ready are reported.
struct Wait : Command {
  void apply(Model& m) const override {
    m.listener_woken = false;
    m.sockets_woken.clear();
  }
  void run(const Model& m, Sut& s) const override {
    std::set<int> expected;
    if (m.listener_woken && !m.queue.empty()) expected.insert(m.listener);
    for (int fd : m.sockets_woken) {
      const auto& c = m.clients[m.accepted.at(fd)];
      if (c.buffered > 0 || c.closed) expected.insert(fd);
    }
    std::vector<PollEvent> events(events_max);
    int n = s.kernel.wait(s.poller, events, Duration(0));
    std::set<int> got;
    for (int i = 0; i < n; ++i) RC_ASSERT(got.insert(events[std::size_t(i)].fd).second);
    RC_ASSERT(got == expected);
  }
  void show(std::ostream& os) const override { os << "Wait"; }
};

struct SetRlimit : Command {
  int value = first_fd;
  SetRlimit() : value(*rc::gen::inRange(first_fd + 2, first_fd + 12)) {}
  void apply(Model& m) const override { m.rlimit = value; }
  void run(const Model&, Sut& s) const override { s.kernel.set_rlimit_nofile(value); }
  void show(std::ostream& os) const override { os << "SetRlimit(" << value << ")"; }
};

// At least 1,000 cases a property, whatever RC_PARAMS asks for less.
template <class Testable>
void check_property(const std::string& name, Testable&& testable) {
  rc::detail::TestParams params = rc::detail::configuration().testParams;
  params.maxSuccess = std::max(params.maxSuccess, 1000);
  rc::detail::TestMetadata metadata{name, name};
  auto result = rc::detail::checkTestable(std::forward<Testable>(testable), metadata, params);
  if (result.template is<rc::detail::SuccessResult>()) return;
  std::ostringstream message;
  rc::detail::printResultMessage(result, message);
  FAIL(message.str());
}

}  // namespace

TEST_CASE("K2 K3 K4 K9 K10 K12 random sequences agree with the reference model") {
  check_property("simulated kernel against the reference model", [] {
    Model model;
    Sut sut;
    rc::state::check(model, sut,
                     rc::state::gen::execOneOfWithArgs<Connect, Accept, Send, ClientClose, Read,
                                                       ServerClose, Wait, SetRlimit>());
  });
}
