// One test per kernel rule (docs/design.md, K1..), named after it. Each drives SimKernel directly:
// client connections from the client side, the loop's calls through Kernel.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <string>
#include <vector>

#include "model/sim_kernel.hpp"

using namespace loopsim;
using namespace loopsim::model;
using namespace std::chrono_literals;

namespace {

constexpr std::uint16_t port = 80;

struct Recorder : ClientSink {
  std::vector<std::string> log;
  std::string received_bytes;
  void established(ConnId c) override { log.push_back("established " + std::to_string(c)); }
  void syn_dropped(ConnId c, Instant retry_at) override {
    log.push_back("dropped " + std::to_string(c) + " retry " + std::to_string(since_start(retry_at).count()));
  }
  void refused(ConnId c, int error) override {
    log.push_back("refused " + std::to_string(c) + " " + std::to_string(error));
  }
  void received(ConnId, std::string_view bytes) override { received_bytes.append(bytes); }
  void peer_closed(ConnId c) override { log.push_back("closed " + std::to_string(c)); }
};

struct Fixture {
  explicit Fixture(SimKernelConfig config = {}) : kernel(scheduler, config) {
    kernel.set_client_sink(&sink);
  }
  // Runs what is due now (a connection's SYN arrives just after connect returns).
  void settle() { scheduler.run_until(scheduler.now() + 1ns); }
  int listener(int backlog = 128) { return kernel.listen(ListenSpec{"127.0.0.1", port, backlog}); }
  ConnId connect() {
    ConnId c = kernel.connect(port);
    settle();
    return c;
  }
  std::vector<PollEvent> poll(int poller, std::size_t max = 16) {
    std::vector<PollEvent> events(max);
    int n = kernel.wait(poller, events, Duration(0));
    REQUIRE(n >= 0);
    events.resize(std::size_t(n));
    return events;
  }
  Scheduler scheduler;
  Recorder sink;
  SimKernel kernel;
};

SimKernelConfig flavoured(PollerFlavour flavour, SimKernelConfig config = {}) {
  config.poller = flavour;
  return config;
}

const char* name_of(PollerFlavour flavour) {
  return flavour == PollerFlavour::epoll ? "epoll" : "kqueue";
}

std::vector<int> fds_of(const std::vector<PollEvent>& events) {
  std::vector<int> fds;
  for (const auto& e : events) fds.push_back(e.fd);
  return fds;
}

}  // namespace

TEST_CASE("K1 virtual time moves only when every simulated thread is blocked or spending") {
  Fixture f;
  std::vector<std::pair<std::string, Duration>> seen;
  f.scheduler.spawn("a", [&] {
    seen.emplace_back("a starts", f.kernel.now().time_since_epoch());
    f.kernel.spend(10ms);
    seen.emplace_back("a spent", f.kernel.now().time_since_epoch());
  });
  f.scheduler.spawn("b", [&] {
    seen.emplace_back("b starts", f.kernel.now().time_since_epoch());
    f.kernel.spend(3ms);
    seen.emplace_back("b spent", f.kernel.now().time_since_epoch());
  });
  f.scheduler.run_until(Instant{1s});
  REQUIRE(seen == std::vector<std::pair<std::string, Duration>>{
                      {"a starts", 0ms}, {"b starts", 0ms}, {"b spent", 3ms}, {"a spent", 10ms}});
  CHECK(f.kernel.now().time_since_epoch() == 1s);
}

TEST_CASE("K1 timer slack makes every spend and timed wait oversleep") {
  SimKernelConfig config;
  config.timer_slack = {2ms};
  Fixture f(config);
  int poller = f.kernel.poller_create();
  Duration spent{}, waited{};
  f.scheduler.spawn("t", [&] {
    f.kernel.spend(10ms);
    spent = f.kernel.now().time_since_epoch();
    std::vector<PollEvent> events(4);
    CHECK(f.kernel.wait(poller, events, 5ms) == 0);
    waited = f.kernel.now().time_since_epoch() - spent;
  });
  f.scheduler.run_until(Instant{1s});
  CHECK(spent == 12ms);
  CHECK(waited == 7ms);
}

TEST_CASE("K3 a signal for a thread blocked in a wait ends the wait with EINTR, one not waiting is not touched") {
  Fixture f;
  int poller = f.kernel.poller_create();
  int rc = 1;
  Duration ended{};
  model::ThreadId waiter = f.scheduler.spawn("t", [&] {
    std::vector<PollEvent> events(4);
    rc = f.kernel.wait(poller, events, wait_forever);
    ended = f.kernel.now().time_since_epoch();
  });
  model::ThreadId idle = f.scheduler.spawn("idle", [&] { f.kernel.spend(1s); });
  bool waiting = false, idle_waiting = true;
  f.scheduler.at(Instant{30ms}, [&] {
    waiting = f.kernel.interrupt(waiter);
    idle_waiting = f.kernel.interrupt(idle);
  }, model::Tag{model::Happening::scripted, 0});
  f.scheduler.run_until(Instant{2s});
  CHECK(waiting);
  CHECK_FALSE(idle_waiting);
  CHECK(rc == -EINTR);
  CHECK(ended == 30ms);
  // The flag was taken: the next wait blocks again, to its timeout.
  std::vector<PollEvent> events(4);
  f.scheduler.spawn("again", [&] { rc = f.kernel.wait(poller, events, 5ms); });
  f.scheduler.run_until(Instant{3s});
  CHECK(rc == 0);
}

TEST_CASE("K2 descriptors take the lowest free number") {
  const auto flavour = GENERATE(PollerFlavour::epoll, PollerFlavour::kqueue);
  INFO("flavour: " << name_of(flavour));
  Fixture f(flavoured(flavour));
  int a = f.kernel.poller_create();
  int b = f.kernel.wake_create();
  int c = f.kernel.wake_create();
  CHECK(a == 3);  // 0, 1 and 2 are the standard streams
  CHECK(b == 4);
  CHECK(c == 5);
  REQUIRE(f.kernel.close(b) == 0);
  CHECK(f.kernel.wake_create() == 4);
  CHECK(f.kernel.close(b + 100) == -EBADF);
}

TEST_CASE("K2 the per-process limit gives EMFILE and the system-wide limit ENFILE") {
  const auto flavour = GENERATE(PollerFlavour::epoll, PollerFlavour::kqueue);
  INFO("flavour: " << name_of(flavour));
  SimKernelConfig config = flavoured(flavour);
  config.rlimit_nofile = 6;
  Fixture f(config);
  int l = f.listener();  // 3
  CHECK(f.kernel.poller_create() == 4);
  f.connect();
  CHECK(f.kernel.accept(l) == 5);
  f.connect();
  CHECK(f.kernel.accept(l) == -EMFILE);
  CHECK(f.kernel.wake_create() == -EMFILE);

  SimKernelConfig tight;
  tight.file_max = 6;  // 3 standard streams, the listener, one client end, one server end
  Fixture g(tight);
  int gl = g.listener();
  g.connect();
  CHECK(g.kernel.accept(gl) == 4);
  g.connect();  // its client end takes the last file
  CHECK(g.kernel.accept(gl) == -ENFILE);
  CHECK(g.kernel.backlog(gl) == 1);
}

TEST_CASE("K3 every arrival re-queues a harvested edge-triggered listener") {
  const auto flavour = GENERATE(PollerFlavour::epoll, PollerFlavour::kqueue);
  INFO("flavour: " << name_of(flavour));
  Fixture f(flavoured(flavour));
  int l = f.listener();
  int p = f.kernel.poller_create();
  REQUIRE(f.kernel.watch(p, l, io::readable, Trigger::edge) == 0);
  f.connect();
  f.connect();
  f.connect();
  // N arrivals before one wait: one event.
  auto events = f.poll(p);
  REQUIRE(events.size() == 1);
  CHECK(events[0].fd == l);
  // epoll says nothing of the depth; kqueue counts it at retrieval.
  CHECK(events[0].data == (flavour == PollerFlavour::epoll ? -1 : 3));
  // A drain that stops before EAGAIN gets no new event...
  REQUIRE(f.kernel.accept(l) >= 0);
  CHECK(f.poll(p).empty());
  // ...until the next arrival.
  f.connect();
  CHECK(fds_of(f.poll(p)) == std::vector<int>{l});
  CHECK(f.kernel.backlog(l) == 3);
}

TEST_CASE("K3 each data arrival wakes an edge-triggered socket, a partial read does not") {
  const auto flavour = GENERATE(PollerFlavour::epoll, PollerFlavour::kqueue);
  INFO("flavour: " << name_of(flavour));
  Fixture f(flavoured(flavour));
  int l = f.listener();
  int p = f.kernel.poller_create();
  ConnId c = f.connect();
  int s = f.kernel.accept(l);
  REQUIRE(f.kernel.watch(p, s, io::readable, Trigger::edge) == 0);
  CHECK(f.poll(p).empty());  // nothing buffered yet
  f.kernel.send(c, "hello");
  f.kernel.send(c, "world");
  CHECK(fds_of(f.poll(p)) == std::vector<int>{s});
  char buffer[4];
  CHECK(f.kernel.read(s, buffer) == 4);  // partial: six bytes stay buffered
  CHECK(f.poll(p).empty());
  f.kernel.send(c, "!");
  CHECK(fds_of(f.poll(p)) == std::vector<int>{s});
}

TEST_CASE("K11 a peek returns what a read would and leaves it: the bytes, and no new edge") {
  Fixture f;
  int l = f.listener();
  int p = f.kernel.poller_create();
  ConnId c = f.connect();
  int s = f.kernel.accept(l);
  REQUIRE(f.kernel.watch(p, s, io::readable, Trigger::edge) == 0);
  char buffer[8] = {};
  CHECK(f.kernel.peek(s, buffer) == -EAGAIN);
  f.kernel.send(c, "hello");
  CHECK(fds_of(f.poll(p)) == std::vector<int>{s});
  CHECK(f.kernel.peek(s, std::span(buffer, 2)) == 2);
  CHECK(std::string(buffer, 2) == "he");
  CHECK(f.poll(p).empty());  // peeking re-arms nothing
  CHECK(f.kernel.read(s, buffer) == 5);
  CHECK(std::string(buffer, 5) == "hello");
  int pipe_ends[2];
  REQUIRE(f.kernel.pipe(pipe_ends) == 0);
  CHECK(f.kernel.peek(pipe_ends[0], buffer) == -ENOTSOCK);
}

TEST_CASE("K4 an item no longer ready at harvest is dropped silently, and level items requeue") {
  const auto flavour = GENERATE(PollerFlavour::epoll, PollerFlavour::kqueue);
  INFO("flavour: " << name_of(flavour));
  Fixture f(flavoured(flavour));
  int l = f.listener();
  int p = f.kernel.poller_create();
  int w = f.kernel.wake_create();
  REQUIRE(f.kernel.watch(p, l, io::readable, Trigger::edge) == 0);
  REQUIRE(f.kernel.watch(p, w, io::readable, Trigger::level) == 0);
  f.connect();
  REQUIRE(f.kernel.accept(l) >= 0);  // drained before the wait: the queued edge is stale
  f.kernel.wake_signal(w);
  CHECK(fds_of(f.poll(p)) == std::vector<int>{w});
  CHECK(fds_of(f.poll(p)) == std::vector<int>{w});  // level: reported while ready
  f.kernel.wake_drain(w);
  CHECK(f.poll(p).empty());
}

TEST_CASE("K5 the ready list is FIFO, a wait takes at most max, the rest stays in front") {
  const auto flavour = GENERATE(PollerFlavour::epoll, PollerFlavour::kqueue);
  INFO("flavour: " << name_of(flavour));
  Fixture f(flavoured(flavour));
  int p = f.kernel.poller_create();
  std::vector<int> wakes;
  for (int i = 0; i < 5; ++i) {
    wakes.push_back(f.kernel.wake_create());
    REQUIRE(f.kernel.watch(p, wakes.back(), io::readable, Trigger::edge) == 0);
  }
  for (int i : {2, 0, 4, 1, 3}) f.kernel.wake_signal(wakes[std::size_t(i)]);
  CHECK(fds_of(f.poll(p, 2)) == std::vector<int>{wakes[2], wakes[0]});
  f.kernel.wake_signal(wakes[2]);  // re-queued behind the undelivered ones
  CHECK(fds_of(f.poll(p, 3)) == std::vector<int>{wakes[4], wakes[1], wakes[3]});
  CHECK(fds_of(f.poll(p, 3)) == std::vector<int>{wakes[2]});
}

TEST_CASE("K6 a one-shot item reports once, and re-arming a ready item queues it at once") {
  const auto flavour = GENERATE(PollerFlavour::epoll, PollerFlavour::kqueue);
  INFO("flavour: " << name_of(flavour));
  Fixture f(flavoured(flavour));
  int p = f.kernel.poller_create();
  int w = f.kernel.wake_create();
  REQUIRE(f.kernel.watch(p, w, io::readable, Trigger::oneshot) == 0);
  f.kernel.wake_signal(w);
  CHECK(f.poll(p).size() == 1);
  f.kernel.wake_signal(w);
  CHECK(f.poll(p).empty());  // disabled until re-armed
  REQUIRE(f.kernel.rewatch(p, w, io::readable, Trigger::oneshot) == 0);
  CHECK(f.poll(p).size() == 1);
}

TEST_CASE("K8 a kqueue-flavoured listener event carries the backlog depth") {
  SimKernelConfig config;
  config.poller = PollerFlavour::kqueue;
  Fixture f(config);
  int l = f.listener();
  int p = f.kernel.poller_create();
  REQUIRE(f.kernel.watch(p, l, io::readable, Trigger::edge) == 0);
  for (int i = 0; i < 3; ++i) f.connect();
  auto events = f.poll(p);
  REQUIRE(events.size() == 1);
  CHECK(events[0].data == 3);
}

TEST_CASE("K9 the accept queue holds min(backlog, somaxconn) + 1, then SYNs are dropped") {
  const auto flavour = GENERATE(PollerFlavour::epoll, PollerFlavour::kqueue);
  INFO("flavour: " << name_of(flavour));
  SimKernelConfig config = flavoured(flavour);
  config.somaxconn = 4;
  Fixture f(config);
  int l = f.listener(8);  // min(8, 4) + 1 = 5
  for (int i = 0; i < 6; ++i) f.kernel.connect(port);
  f.settle();
  CHECK(f.kernel.backlog(l) == 5);
  REQUIRE(f.sink.log.back() == "dropped 5 retry 1000000000");
  // The client retransmits after 1 s, then 2 s: once there is room, it gets in.
  f.scheduler.run_until(Instant{1s + 1ns});
  CHECK(f.sink.log.back() == "dropped 5 retry 3000000000");
  REQUIRE(f.kernel.accept(l) >= 0);
  f.scheduler.run_until(Instant{3s + 1ns});
  CHECK(f.sink.log.back() == "established 5");
  CHECK(f.kernel.backlog(l) == 5);
}

TEST_CASE("K9 with abort_on_overflow a full queue resets the client") {
  const auto flavour = GENERATE(PollerFlavour::epoll, PollerFlavour::kqueue);
  INFO("flavour: " << name_of(flavour));
  SimKernelConfig config = flavoured(flavour);
  config.abort_on_overflow = true;
  Fixture f(config);
  int l = f.listener(0);  // holds one
  f.connect();
  f.connect();
  CHECK(f.kernel.backlog(l) == 1);
  CHECK(f.sink.log.back() == "refused 1 " + std::to_string(ECONNRESET));
}

TEST_CASE("K10 accept takes the oldest connection and says EAGAIN when none is queued") {
  const auto flavour = GENERATE(PollerFlavour::epoll, PollerFlavour::kqueue);
  INFO("flavour: " << name_of(flavour));
  Fixture f(flavoured(flavour));
  int l = f.listener();
  ConnId a = f.connect();
  ConnId b = f.connect();
  int fa = f.kernel.accept(l);
  int fb = f.kernel.accept(l);
  CHECK(f.kernel.conn_of(fa) == a);
  CHECK(f.kernel.conn_of(fb) == b);
  CHECK(f.kernel.accept(l) == -EAGAIN);
}

TEST_CASE("K10 EMFILE leaves the connection queued, and comes before EAGAIN as in Linux") {
  const auto flavour = GENERATE(PollerFlavour::epoll, PollerFlavour::kqueue);
  INFO("flavour: " << name_of(flavour));
  SimKernelConfig config = flavoured(flavour);
  config.rlimit_nofile = 4;  // the listener takes the last number
  Fixture f(config);
  int l = f.listener();
  CHECK(f.kernel.accept(l) == -EMFILE);  // the descriptor is allocated before the queue is read
  f.connect();
  CHECK(f.kernel.accept(l) == -EMFILE);
  CHECK(f.kernel.backlog(l) == 1);
  f.kernel.set_rlimit_nofile(5);
  CHECK(f.kernel.accept(l) == 4);
  CHECK(f.kernel.backlog(l) == 0);
}

TEST_CASE("K11 a peer's close reads as end of stream after the buffered bytes") {
  const auto flavour = GENERATE(PollerFlavour::epoll, PollerFlavour::kqueue);
  INFO("flavour: " << name_of(flavour));
  Fixture f(flavoured(flavour));
  int l = f.listener();
  ConnId c = f.connect();
  int s = f.kernel.accept(l);
  int p = f.kernel.poller_create();
  REQUIRE(f.kernel.watch(p, s, io::readable, Trigger::edge) == 0);
  f.kernel.send(c, "bye");
  f.kernel.client_close(c);
  auto events = f.poll(p);
  REQUIRE(events.size() == 1);
  CHECK((events[0].ready & io::read_hangup) != 0);
  char buffer[16];
  CHECK(f.kernel.read(s, buffer) == 3);
  CHECK(f.kernel.read(s, buffer) == 0);
}

TEST_CASE("K12 close removes a descriptor from every interest set and ready list") {
  const auto flavour = GENERATE(PollerFlavour::epoll, PollerFlavour::kqueue);
  INFO("flavour: " << name_of(flavour));
  Fixture f(flavoured(flavour));
  int p1 = f.kernel.poller_create();
  int p2 = f.kernel.poller_create();
  int w = f.kernel.wake_create();
  REQUIRE(f.kernel.watch(p1, w, io::readable, Trigger::edge) == 0);
  REQUIRE(f.kernel.watch(p2, w, io::readable, Trigger::level) == 0);
  f.kernel.wake_signal(w);
  REQUIRE(f.kernel.close(w) == 0);
  CHECK(f.poll(p1).empty());
  CHECK(f.poll(p2).empty());
  int again = f.kernel.wake_create();  // the same number, a new object
  REQUIRE(again == w);
  f.kernel.wake_signal(again);
  CHECK(f.poll(p1).empty());
  CHECK(f.kernel.unwatch(p1, again) == -ENOENT);
}

TEST_CASE("a wait blocks until an arrival wakes it, and times out otherwise") {
  Fixture f;
  int l = f.listener();
  int p = f.kernel.poller_create();
  REQUIRE(f.kernel.watch(p, l, io::readable, Trigger::edge) == 0);
  std::vector<std::pair<int, Duration>> returns;
  f.scheduler.spawn("loop", [&] {
    std::vector<PollEvent> events(4);
    for (int i = 0; i < 2; ++i) {
      int n = f.kernel.wait(p, events, 1s);
      returns.emplace_back(n, f.kernel.now().time_since_epoch());
    }
  });
  f.scheduler.at(Instant{250ms}, [&] { f.kernel.connect(port); }, {model::Happening::scripted});
  f.scheduler.run_until(Instant{10s});
  REQUIRE(returns.size() == 2);
  CHECK(returns[0].first == 1);
  CHECK(returns[0].second == 250ms);
  CHECK(returns[1].first == 0);
  CHECK(returns[1].second == 1250ms);
}

TEST_CASE("K7 an exclusive arrival wakes one blocked waiter, the earliest registrant") {
  Fixture f;
  int l = f.listener();
  std::vector<int> pollers;
  for (int i = 0; i < 3; ++i) {
    pollers.push_back(f.kernel.poller_create());
    REQUIRE(f.kernel.watch(pollers.back(), l, io::readable | io::exclusive, Trigger::edge) == 0);
  }
  std::vector<std::pair<int, Duration>> woke;  // which poller's waiter returned, and when
  for (int i : {1, 2}) {  // poller 0's thread is busy; 1 and 2 block in their waits
    f.scheduler.spawn("w", [&, i] {
      std::vector<PollEvent> events(4);
      int n = f.kernel.wait(pollers[std::size_t(i)], events, 1s);
      if (n > 0) woke.emplace_back(i, f.kernel.now().time_since_epoch());
    });
  }
  f.scheduler.at(Instant{100ms}, [&] { f.kernel.connect(port); }, {model::Happening::scripted});
  f.scheduler.run_until(Instant{2s});
  REQUIRE(woke.size() == 1);
  CHECK(woke[0].first == 1);
  CHECK(woke[0].second == 100ms);
  // The busy poller still got the item; the one after the woken waiter did not.
  CHECK(f.poll(pollers[0]).size() == 1);
  CHECK(f.poll(pollers[2]).empty());
}

TEST_CASE("K7 without EPOLLEXCLUSIVE every waiter wakes") {
  Fixture f;
  int l = f.listener();
  std::vector<int> pollers{f.kernel.poller_create(), f.kernel.poller_create()};
  for (int p : pollers) REQUIRE(f.kernel.watch(p, l, io::readable, Trigger::edge) == 0);
  int woke = 0;
  for (int p : pollers) {
    f.scheduler.spawn("w", [&, p] {
      std::vector<PollEvent> events(4);
      woke += f.kernel.wait(p, events, 1s);
    });
  }
  f.scheduler.at(Instant{100ms}, [&] { f.kernel.connect(port); }, {model::Happening::scripted});
  f.scheduler.run_until(Instant{2s});
  CHECK(woke == 2);
}

TEST_CASE("K8 kqueue: repeated triggers merge into one event whose data is the depth now") {
  SimKernelConfig config;
  config.poller = PollerFlavour::kqueue;
  Fixture f(config);
  int l = f.listener();
  int p = f.kernel.poller_create();
  REQUIRE(f.kernel.watch(p, l, io::readable, Trigger::edge) == 0);
  f.connect();
  f.connect();
  REQUIRE(f.kernel.accept(l) >= 0);
  auto events = f.poll(p);
  REQUIRE(events.size() == 1);
  CHECK(events[0].data == 1);  // counted at retrieval, not at the trigger
  CHECK(f.poll(p).empty());   // EV_CLEAR: reset after retrieval
  REQUIRE(f.kernel.accept(l) >= 0);
  ConnId c = f.connect();
  int s = f.kernel.accept(l);
  REQUIRE(f.kernel.conn_of(s) == c);
  REQUIRE(f.kernel.watch(p, s, io::readable, Trigger::edge) == 0);
  f.kernel.send(c, "12345");
  events = f.poll(p);
  REQUIRE(events.size() == 1);  // the listener's arrival was drained before the harvest
  CHECK(events[0].fd == s);
  CHECK(events[0].data == 5);
}

TEST_CASE("K10 injected ECONNABORTED consumes one connection, ENOBUFS leaves it queued") {
  const auto flavour = GENERATE(PollerFlavour::epoll, PollerFlavour::kqueue);
  INFO("flavour: " << name_of(flavour));
  Fixture f(flavoured(flavour));
  int l = f.listener();
  f.kernel.add_accept_fault(AcceptFault{ENOBUFS, 1, {}, {}, 0});
  f.kernel.add_accept_fault(AcceptFault{ECONNABORTED, 2, {}, {}, 0});
  ConnId a = f.connect();
  ConnId b = f.connect();
  CHECK(f.kernel.accept(l) == -ENOBUFS);
  CHECK(f.kernel.backlog(l) == 2);
  CHECK(f.kernel.accept(l) == -ECONNABORTED);
  CHECK(f.kernel.backlog(l) == 1);
  int fd = f.kernel.accept(l);
  CHECK(f.kernel.conn_of(fd) == b);
  f.settle();
  CHECK(f.sink.log.back() != "closed " + std::to_string(a));
}

TEST_CASE("K10 accepts in a fault window fail, within the budget") {
  const auto flavour = GENERATE(PollerFlavour::epoll, PollerFlavour::kqueue);
  INFO("flavour: " << name_of(flavour));
  Fixture f(flavoured(flavour));
  int l = f.listener();
  f.kernel.add_accept_fault(AcceptFault{EMFILE, 0, Instant{1s}, Instant{2s}, 0});
  f.connect();
  CHECK(f.kernel.accept(l) >= 0);  // before the window
  f.connect();
  f.scheduler.run_until(Instant{1500ms});
  CHECK(f.kernel.accept(l) == -EMFILE);
  CHECK(f.kernel.accept(l) == -EMFILE);
  f.scheduler.run_until(Instant{2s});
  CHECK(f.kernel.accept(l) >= 0);  // the window is closed at `until`
}

TEST_CASE("K11 a reset shows as an error event, ECONNRESET once, then EOF and EPIPE") {
  const auto flavour = GENERATE(PollerFlavour::epoll, PollerFlavour::kqueue);
  INFO("flavour: " << name_of(flavour));
  Fixture f(flavoured(flavour));
  int l = f.listener();
  ConnId c = f.connect();
  int s = f.kernel.accept(l);
  int p = f.kernel.poller_create();
  REQUIRE(f.kernel.watch(p, s, io::readable, Trigger::edge) == 0);
  f.kernel.client_reset(c);
  auto events = f.poll(p);
  REQUIRE(events.size() == 1);
  CHECK((events[0].ready & io::error) != 0);
  char buffer[8];
  CHECK(f.kernel.read(s, buffer) == -ECONNRESET);
  CHECK(f.kernel.read(s, buffer) == 0);
  CHECK(f.kernel.write(s, std::string_view("x")) == -EPIPE);
}

TEST_CASE("K11 a reset while queued is accepted as usual, and the first write says ECONNRESET") {
  const auto flavour = GENERATE(PollerFlavour::epoll, PollerFlavour::kqueue);
  INFO("flavour: " << name_of(flavour));
  Fixture f(flavoured(flavour));
  int l = f.listener();
  ConnId c = f.connect();
  f.kernel.client_reset(c);
  int s = f.kernel.accept(l);
  REQUIRE(s >= 0);
  CHECK(f.kernel.write(s, std::string_view("x")) == -ECONNRESET);
  CHECK(f.kernel.write(s, std::string_view("x")) == -EPIPE);
}

TEST_CASE("K11 writes are short when the send buffer fills, and draining it is a writable edge") {
  const auto flavour = GENERATE(PollerFlavour::epoll, PollerFlavour::kqueue);
  INFO("flavour: " << name_of(flavour));
  SimKernelConfig config = flavoured(flavour);
  config.send_buffer = 10;
  Fixture f(config);
  int l = f.listener();
  ConnId c = f.connect();
  int s = f.kernel.accept(l);
  int p = f.kernel.poller_create();
  REQUIRE(f.kernel.watch(p, s, io::writable, Trigger::edge) == 0);
  CHECK(f.poll(p).size() == 1);  // writable at registration
  f.kernel.set_client_reading(c, false);  // a slow reader
  CHECK(f.kernel.write(s, std::string_view("0123456")) == 7);
  CHECK(f.kernel.write(s, std::string_view("789abc")) == 3);  // short
  CHECK(f.kernel.write(s, std::string_view("d")) == -EAGAIN);
  f.settle();
  CHECK(f.poll(p).empty());
  f.kernel.set_client_reading(c, true);
  f.settle();
  CHECK(f.sink.received_bytes == "0123456789");
  CHECK(f.poll(p).size() == 1);
}

TEST_CASE("K11 autotuning: a write beyond the send buffer is a choice, and a grown buffer stays grown, as SO_SNDBUF says") {
  struct Scripted : Chooser {
    std::vector<std::uint32_t> picks;
    std::vector<Choice> seen;
    std::uint32_t choose(ChoiceKind kind, std::uint32_t options) override {
      std::uint32_t pick = seen.size() < picks.size() ? picks[seen.size()] : 0;
      seen.push_back({kind, options, pick});
      return pick;
    }
  };
  SimKernelConfig config;
  config.send_buffer = 10;
  config.send_buffer_max = 100;
  for (std::uint32_t grow : {0u, 1u}) {
    INFO("grow " << grow);
    Scripted chooser;
    chooser.picks = {grow ? 0u : 1u};  // 0, the natural pick, grows
    Fixture f(config);
    f.scheduler.set_chooser(&chooser);
    int l = f.listener();
    ConnId c = f.connect();
    int s = f.kernel.accept(l);
    f.kernel.set_client_reading(c, false);
    CHECK(f.kernel.write(s, std::string_view("01234")) == 5);  // fits: no choice
    CHECK(chooser.seen.empty());
    CHECK(f.kernel.send_buffer_of(s) == 10);  // what getsockopt(SO_SNDBUF) reports
    const std::string big(200, 'x');
    CHECK(f.kernel.write(s, big) == (grow ? 95 : 5));  // the buffer as it is, or grown to 100
    CHECK(f.kernel.send_buffer_of(s) == (grow ? 100u : 10u));  // Linux reports the grown size
    CHECK(f.kernel.send_buffer_of(l) == 10);  // not a connection: the configured size
    REQUIRE(chooser.seen.size() == 1);
    CHECK(chooser.seen[0].kind == ChoiceKind::take);
    CHECK(chooser.seen[0].options == 2);
    // Full either way: a write that finds no room asks nothing.
    CHECK(f.kernel.write(s, big) == -EAGAIN);
    CHECK(chooser.seen.size() == 1);
  }
  Fixture off;  // send_buffer_max 0: never a choice (the default Scheduler has no chooser to ask)
  int l = off.listener();
  ConnId c = off.connect();
  int s = off.kernel.accept(l);
  off.kernel.set_client_reading(c, false);
  CHECK(off.kernel.write(s, std::string(20000, 'x')) == 16384);
}

TEST_CASE("K11 a client's bytes beyond the receive buffer wait until the server reads") {
  const auto flavour = GENERATE(PollerFlavour::epoll, PollerFlavour::kqueue);
  INFO("flavour: " << name_of(flavour));
  SimKernelConfig config = flavoured(flavour);
  config.receive_buffer = 4;
  Fixture f(config);
  int l = f.listener();
  ConnId c = f.connect();
  int s = f.kernel.accept(l);
  f.kernel.send(c, "abcdefgh");
  char buffer[16];
  CHECK(f.kernel.read(s, buffer) == 4);
  CHECK(f.kernel.read(s, buffer) == 4);
  CHECK(f.kernel.read(s, buffer) == -EAGAIN);
}

TEST_CASE("K1 with several timer slacks, each sleep's is a recorded choice") {
  struct Always : Chooser {
    std::vector<Choice> seen;
    std::uint32_t choose(ChoiceKind kind, std::uint32_t options) override {
      seen.push_back({kind, options, options - 1});
      return options - 1;
    }
  } chooser;
  Scheduler scheduler(&chooser);
  SimKernelConfig config;
  config.timer_slack = {Duration(0), 50us};
  SimKernel kernel(scheduler, config);
  Duration woke{};
  scheduler.spawn("t", [&] {
    kernel.spend(1ms);
    woke = kernel.now().time_since_epoch();
  });
  scheduler.run_until(Instant{1s});
  CHECK(woke == 1050us);
  REQUIRE(chooser.seen.size() == 1);
  CHECK(chooser.seen[0].kind == ChoiceKind::slack);
}

TEST_CASE("K13 a pipe reads what was written, says EAGAIN when empty, and ends when the writer closes") {
  Fixture f;
  int ends[2];
  REQUIRE(f.kernel.pipe(ends) == 0);
  CHECK(ends[0] == 3);  // K2: the lowest free numbers, reader first
  CHECK(ends[1] == 4);
  int p = f.kernel.poller_create();
  REQUIRE(f.kernel.watch(p, ends[0], io::readable, Trigger::edge) == 0);
  REQUIRE(f.kernel.watch(p, ends[1], io::writable, Trigger::edge) == 0);
  auto first = f.poll(p);  // registering a ready item queues it: the writer has room
  REQUIRE(first.size() == 1);
  CHECK(first[0].fd == ends[1]);
  char buffer[16];
  CHECK(f.kernel.read(ends[0], buffer) == -EAGAIN);
  CHECK(f.kernel.write(ends[1], std::string_view("ab")) == 2);
  CHECK(f.kernel.write(ends[1], std::string_view("c")) == 1);
  auto events = f.poll(p);  // two arrivals, one edge
  REQUIRE(events.size() == 1);
  CHECK(events[0].fd == ends[0]);
  CHECK(events[0].ready == io::readable);
  CHECK(f.kernel.read(ends[0], std::span<char>(buffer, 2)) == 2);
  CHECK(f.poll(p).empty());  // a partial read is no new edge
  CHECK(f.kernel.write(ends[0], std::string_view("x")) == -EBADF);  // the wrong end
  CHECK(f.kernel.read(ends[1], buffer) == -EBADF);
  REQUIRE(f.kernel.close(ends[1]) == 0);
  events = f.poll(p);
  REQUIRE(events.size() == 1);
  CHECK(events[0].ready == (io::readable | io::hangup));
  CHECK(f.kernel.read(ends[0], buffer) == 1);  // the bytes, then the end
  CHECK(f.kernel.read(ends[0], buffer) == 0);
}

TEST_CASE("K13 a pipe's size: a power of two pages, at most pipe-max-size, never below what it holds, only on a pipe") {
  Fixture f;
  int ends[2];
  REQUIRE(f.kernel.pipe(ends) == 0);
  CHECK(f.kernel.pipe_size(ends[0]) == 65536);
  CHECK(f.kernel.set_pipe_size(ends[1], 5000) == 8192);  // rounded up to two pages
  CHECK(f.kernel.pipe_size(ends[0]) == 8192);            // either end sees it
  CHECK(f.kernel.set_pipe_size(ends[0], 100) == 4096);   // one page at least
  CHECK(f.kernel.set_pipe_size(ends[1], 1048577) == -EPERM);  // past pipe-max-size, unprivileged
  CHECK(f.kernel.write(ends[1], std::string(5000, 'x')) == 4096);  // the new size bounds a write
  int p = f.kernel.poller_create();
  REQUIRE(f.kernel.watch(p, ends[1], io::writable, Trigger::edge) == 0);
  CHECK(f.poll(p).empty());  // full
  CHECK(f.kernel.set_pipe_size(ends[1], 16384) == 16384);
  auto events = f.poll(p);  // room again: a writable edge
  REQUIRE(events.size() == 1);
  CHECK(events[0].fd == ends[1]);
  CHECK(f.kernel.write(ends[1], std::string(8000, 'y')) == 8000);
  CHECK(f.kernel.set_pipe_size(ends[1], 4096) == -EBUSY);  // it holds 12,096 bytes
  CHECK(f.kernel.pipe_size(ends[0]) == 16384);
  int l = f.listener();
  CHECK(f.kernel.pipe_size(l) == -EBADF);
  CHECK(f.kernel.set_pipe_size(l, 4096) == -EBADF);
  CHECK(f.kernel.pipe_size(99) == -EBADF);
}

TEST_CASE("K15 a socketpair: each end reads what the other wrote, up to 212,992 bytes, and sees its half-close and close") {
  Fixture f;
  int ends[2];
  REQUIRE(f.kernel.socketpair(ends) == 0);
  CHECK(ends[0] == 3);  // K2: the lowest free numbers
  CHECK(ends[1] == 4);
  int p = f.kernel.poller_create();
  REQUIRE(f.kernel.watch(p, ends[1], io::readable | io::read_hangup, Trigger::edge) == 0);
  CHECK(f.kernel.write(ends[0], std::string(300000, 'x')) == 212992);  // net.core.wmem_default
  CHECK(f.kernel.write(ends[0], std::string_view("y")) == -EAGAIN);
  CHECK(f.kernel.pending_bytes(ends[1]) == 212992);
  auto events = f.poll(p);
  REQUIRE(events.size() == 1);
  CHECK(events[0].ready == io::readable);
  std::vector<char> buffer(212992);
  CHECK(f.kernel.read(ends[1], buffer) == 212992);
  CHECK(f.kernel.read(ends[1], buffer) == -EAGAIN);
  CHECK(f.kernel.write(ends[1], std::string_view("back")) == 4);  // both ways
  CHECK(f.kernel.read(ends[0], std::span<char>(buffer.data(), 16)) == 4);
  REQUIRE(f.kernel.shutdown_write(ends[0]) == 0);
  events = f.poll(p);
  REQUIRE(events.size() == 1);
  CHECK(events[0].ready == (io::readable | io::read_hangup));
  CHECK(f.kernel.read(ends[1], buffer) == 0);
  CHECK(f.kernel.write(ends[0], std::string_view("late")) == -EPIPE);
  CHECK(f.kernel.pipe_size(ends[0]) == -EBADF);  // not a pipe
  REQUIRE(f.kernel.close(ends[0]) == 0);
  CHECK(f.kernel.write(ends[1], std::string_view("gone")) == -EPIPE);
  // A close with bytes unread resets the other end, once.
  int pair[2];
  REQUIRE(f.kernel.socketpair(pair) == 0);
  CHECK(f.kernel.write(pair[0], std::string_view("unread")) == 6);
  REQUIRE(f.kernel.close(pair[1]) == 0);
  CHECK(f.kernel.read(pair[0], buffer) == -ECONNRESET);
  CHECK(f.kernel.read(pair[0], buffer) == 0);
}

TEST_CASE("K13 a full pipe refuses small writes whole, takes part of a large one, and errs once the reader closed") {
  Fixture f;
  int ends[2];
  REQUIRE(f.kernel.pipe(ends) == 0);
  std::string big(65536 - 100, 'x');
  CHECK(f.kernel.write(ends[1], big) == std::int64_t(big.size()));
  CHECK(f.kernel.write(ends[1], std::string(200, 'y')) == -EAGAIN);  // <= PIPE_BUF: all or none
  CHECK(f.kernel.write(ends[1], std::string(5000, 'z')) == 100);     // > PIPE_BUF: what fits
  CHECK(f.kernel.write(ends[1], std::string_view("w")) == -EAGAIN);
  int p = f.kernel.poller_create();
  REQUIRE(f.kernel.watch(p, ends[1], io::writable, Trigger::edge) == 0);
  CHECK(f.poll(p).empty());
  std::vector<char> buffer(1000);
  CHECK(f.kernel.read(ends[0], buffer) == 1000);
  auto events = f.poll(p);  // room again: a writable edge
  REQUIRE(events.size() == 1);
  CHECK(events[0].ready == io::writable);
  REQUIRE(f.kernel.close(ends[0]) == 0);
  events = f.poll(p);
  REQUIRE(events.size() == 1);
  CHECK(events[0].ready == (io::writable | io::error));
  CHECK(f.kernel.write(ends[1], std::string_view("w")) == -EPIPE);
}

TEST_CASE("K14 a half-close sends the end after the written bytes, and the server still reads and may not write") {
  Fixture f;
  int l = f.listener();
  ConnId c = f.connect();
  int s = f.kernel.accept(l);
  REQUIRE(s >= 0);
  CHECK(f.kernel.write(s, std::string_view("bye")) == 3);
  REQUIRE(f.kernel.shutdown_write(s) == 0);
  f.settle();
  CHECK(f.sink.received_bytes == "bye");
  REQUIRE(!f.sink.log.empty());
  CHECK(f.sink.log.back() == "closed 0");
  CHECK(f.kernel.write(s, std::string_view("more")) == -EPIPE);
  f.kernel.send(c, "late");
  f.settle();
  char buffer[16];
  CHECK(f.kernel.read(s, buffer) == 4);
  REQUIRE(f.kernel.close(s) == 0);
  f.settle();
  CHECK(std::count(f.sink.log.begin(), f.sink.log.end(), std::string("closed 0")) == 1);  // one FIN
  CHECK(f.kernel.shutdown_write(l) == 0);  // a listener has nothing to send: no effect
  int p = f.kernel.poller_create();
  CHECK(f.kernel.shutdown_write(p) == -ENOTSOCK);
  CHECK(f.kernel.shutdown_write(99) == -EBADF);
}

TEST_CASE("K14 a client's half-close: the server reads its bytes, then the end, and still writes to it") {
  Fixture f;
  int l = f.listener();
  ConnId c = f.connect();
  int s = f.kernel.accept(l);
  REQUIRE(s >= 0);
  int p = f.kernel.poller_create();
  REQUIRE(f.kernel.watch(p, s, io::readable, Trigger::edge) == 0);
  f.kernel.send(c, "GET");
  f.kernel.client_shutdown(c);
  auto events = f.poll(p);
  REQUIRE(events.size() == 1);
  CHECK((events[0].ready & io::read_hangup) != 0);  // EPOLLRDHUP with the bytes
  char buffer[16];
  CHECK(f.kernel.read(s, buffer) == 3);
  CHECK(f.kernel.read(s, buffer) == 0);  // then the end
  CHECK(f.kernel.write(s, std::string_view("answer")) == 6);  // its reading side is open
  f.settle();
  CHECK(f.sink.received_bytes == "answer");
  f.kernel.client_shutdown(c);  // a second shutdown changes nothing
  CHECK(f.kernel.read(s, buffer) == 0);
}

TEST_CASE("K11 a client with a read budget takes that much, leaves the rest in the send buffer, and is told") {
  struct Waiting : Recorder {
    int waits = 0;
    void read_waiting(ConnId) override { ++waits; }
  };
  SimKernelConfig config;
  config.send_buffer = 8;
  Fixture f(config);
  Waiting sink;
  f.kernel.set_client_sink(&sink);
  int l = f.listener();
  ConnId c = f.connect();
  SimKernel& kernel = f.kernel;
  Scheduler& scheduler = f.scheduler;
  int s = kernel.accept(l);
  REQUIRE(s >= 0);
  kernel.set_client_read_budget(c, 3);
  CHECK(kernel.write(s, std::string_view("abcdefgh")) == 8);
  CHECK(kernel.write(s, std::string_view("i")) == -EAGAIN);  // full
  scheduler.run_until(scheduler.now() + 1ns);
  CHECK(sink.received_bytes == "abc");
  CHECK(sink.waits == 1);
  CHECK(kernel.write(s, std::string_view("ijk")) == 3);  // three bytes of room again
  CHECK(kernel.close(s) == 0);
  scheduler.run_until(scheduler.now() + 1ns);
  CHECK(std::count(sink.log.begin(), sink.log.end(), std::string("closed 0")) == 0);  // the FIN waits
  kernel.set_client_read_budget(c, -1);  // reads everything now
  scheduler.run_until(scheduler.now() + 1ns);
  CHECK(sink.received_bytes == "abcdefghijk");
  CHECK(std::count(sink.log.begin(), sink.log.end(), std::string("closed 0")) == 1);  // after the bytes
}

TEST_CASE("K2 a foreign file's descriptor takes the lowest number and counts toward the limit") {
  SimKernelConfig config;
  config.rlimit_nofile = 5;
  Fixture f(config);
  int file = f.kernel.file_open();
  CHECK(file == 3);
  int wake = f.kernel.wake_create();
  CHECK(wake == 4);
  CHECK(f.kernel.file_open() == -EMFILE);
  REQUIRE(f.kernel.close(file) == 0);
  CHECK(f.kernel.file_open() == 3);  // freed, and taken again
  char buffer[4];
  CHECK(f.kernel.read(3, buffer) == -EINVAL);  // the simulation holds no bytes for it
}
