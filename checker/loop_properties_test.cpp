// The loop rules' properties, each on a hand-built trace that keeps it and on one that breaks
// it, so that the checker is tested apart from the loop. A failing verdict names its measured
// figure and the first trace event that broke it.
#include <catch2/catch.hpp>
#include <cerrno>

#include "checker/loop_properties.hpp"

using namespace loopsim;
using namespace loopsim::sim;
using namespace loopsim::checker;
using namespace std::chrono_literals;

namespace {

constexpr int listener = 3;

// One group "c" of `clients` clients, one loop with this batch and ceiling.
Trace loop_trace(int clients, std::int64_t accept_batch = 16, std::int64_t max_connections = 1024) {
  Trace t;
  t.listener_fd = listener;
  t.accept_batch = accept_batch;
  t.max_connections = max_connections;
  t.groups = {"c"};
  t.group_sizes = {clients};
  for (int c = 0; c < clients; ++c) t.clients.push_back({0, c, 1});
  return t;
}

// Appends an event and returns its index.
std::size_t add(Trace& t, TraceEvent event) {
  t.events.push_back(std::move(event));
  return t.events.size() - 1;
}

std::size_t accept(Trace& t, int fd, ClientIndex client, int worker = 0, Door door = Door::listener) {
  return add(t, ev::Accept{Instant{0ms}, worker, door, fd, client});
}

std::size_t pass_begin(Trace& t, std::uint64_t pass, std::optional<Duration> timeout, int worker = 0) {
  return add(t, ev::PassBegin{Instant{0ms}, worker, pass, timeout});
}

std::size_t pass_end(Trace& t, std::uint64_t pass, int worker = 0, bool accept_owed = false) {
  return add(t, ev::PassEnd{Instant{0ms}, worker, pass, accept_owed, false});
}

// One pass that accepts clients first .. first + n - 1 from the listener; their accepts' indices.
std::vector<std::size_t> accepting_pass(Trace& t, std::uint64_t pass, int first, int n) {
  std::vector<std::size_t> accepts;
  pass_begin(t, pass, 0ns);
  for (int c = first; c < first + n; ++c) accepts.push_back(accept(t, 5 + c, c));
  pass_end(t, pass);
  return accepts;
}

std::size_t run_end(Trace& t, std::int64_t open = 0, std::int64_t handoffs = 0) {
  return add(t, ev::RunEnd{Instant{1s}, 0, open, handoffs, 0});
}

Expectation count_bounds(std::optional<std::int64_t> min, std::optional<std::int64_t> max = {}) {
  Expectation e;
  if (min) e.min = Bound{Bound::Unit::count, double(*min), std::to_string(*min)};
  if (max) e.max = Bound{Bound::Unit::count, double(*max), std::to_string(*max)};
  return e;
}

Expectation within(Duration max, std::string of = "") {
  Expectation e;
  e.of = std::move(of);
  e.max = Bound{Bound::Unit::time, double(max.count()), "max"};
  return e;
}

}  // namespace

// ---- capacity ------------------------------------------------------------------------------

TEST_CASE("capacity holds when the peak reaches min, and reports back-pressure apart from refusals") {
  Trace t = loop_trace(4, 16, 3);
  for (int c = 0; c < 3; ++c) accept(t, 5 + c, c);
  add(t, ev::Backpressure{Instant{0ms}, 0, 3});
  add(t, ev::Close{Instant{1ms}, 0, 5, 0});
  accept(t, 5, 3);
  run_end(t, 3);
  Verdict v = capacity(t, count_bounds(3));
  CHECK(v.held);
  CHECK(v.measured == 3);
  CHECK(v.bound == 3);
  CHECK(v.unit == Unit::count);
  CHECK(v.detail == "peak 3 held; 0 refused, 1 back-pressure stop(s)");
}

TEST_CASE("capacity fails on a refusal while the loop held fewer than its ceiling") {
  // The handle-ceiling seed: the table refuses while max_connections allows more.
  Trace t = loop_trace(3, 16, 4);
  accept(t, 5, 0);
  accept(t, 6, 1);
  accept(t, 7, 2);  // accepted, then reset: never held
  std::size_t refuse = add(t, ev::Refuse{Instant{0ms}, 0, 7, 2});
  add(t, ev::Close{Instant{0ms}, 0, 7, 2});
  run_end(t, 2);
  Verdict v = capacity(t, count_bounds(2));
  CHECK_FALSE(v.held);
  CHECK(v.measured == 2);
  REQUIRE(v.first_bad);
  CHECK(*v.first_bad == refuse);
  CHECK(v.detail == "peak 2 held; 1 refused (1 below the ceiling of 4), 0 back-pressure stop(s)");
}

TEST_CASE("capacity lets a refusal at the ceiling pass, but not a peak short of min") {
  Trace t = loop_trace(3, 16, 2);
  accept(t, 5, 0);
  accept(t, 6, 1);
  accept(t, 7, 2);
  std::size_t refuse = add(t, ev::Refuse{Instant{0ms}, 0, 7, 2});
  run_end(t, 2);
  CHECK(capacity(t, count_bounds(2)).held);
  Verdict short_of_min = capacity(t, count_bounds(3));
  CHECK_FALSE(short_of_min.held);
  CHECK(short_of_min.measured == 2);
  CHECK(short_of_min.first_bad == refuse);  // what stopped the growth
}

TEST_CASE("capacity fails when the peak passes max, at the accept that passed it") {
  Trace t = loop_trace(3);
  accept(t, 5, 0);
  accept(t, 6, 1);
  std::size_t third = accept(t, 7, 2);
  run_end(t, 3);
  CHECK(capacity(t, count_bounds(1, 3)).held);
  Verdict v = capacity(t, count_bounds(1, 2));
  CHECK_FALSE(v.held);
  CHECK(v.measured == 3);
  CHECK(v.first_bad == third);
}

TEST_CASE("capacity counts a handed-off connection once, on the worker that admits it") {
  Trace t = loop_trace(2);
  accept(t, 5, 0, 0);
  add(t, ev::Handoff{Instant{0ms}, 0, 1, 0});
  accept(t, 5, 0, 1, Door::handoff);
  accept(t, 6, 1, 0);
  add(t, ev::Close{Instant{0ms}, 0, 5, 0});  // not worker 0's any more: it left with the hand-off
  run_end(t, 2);
  Verdict v = capacity(t, count_bounds(2));
  CHECK(v.held);
  CHECK(v.measured == 2);
}

// ---- post_latency --------------------------------------------------------------------------

TEST_CASE("post_latency holds when every post runs within max, and measures the worst") {
  Trace t = loop_trace(0);
  add(t, ev::Post{Instant{0ms}, 1, "bg"});
  add(t, ev::Post{Instant{1ms}, 2, "bg"});
  add(t, ev::PostRun{Instant{1ms}, 0, 1});
  add(t, ev::PostRun{Instant{3ms}, 0, 2});
  Verdict v = post_latency(t, within(2ms), Costs{});
  CHECK(v.held);
  CHECK(v.measured == Duration(2ms).count());
  CHECK(v.unit == Unit::ns);
}

TEST_CASE("post_latency fails on a post that waited behind a whole batch") {
  Trace t = loop_trace(0);
  add(t, ev::Post{Instant{0ms}, 1, "bg"});
  add(t, ev::PostRun{Instant{1ms}, 0, 1});
  add(t, ev::Post{Instant{10ms}, 2, "bg"});
  std::size_t late = add(t, ev::PostRun{Instant{51ms}, 0, 2});
  Verdict v = post_latency(t, within(2ms), Costs{});
  CHECK_FALSE(v.held);
  CHECK(v.measured == Duration(41ms).count());
  CHECK(v.first_bad == late);
  CHECK(v.detail == "the slowest (id 2) ran 41.0 ms after it was posted");
}

TEST_CASE("post_latency fails with -1 on a post that never ran") {
  Trace t = loop_trace(0);
  add(t, ev::Post{Instant{0ms}, 1, "bg"});
  std::size_t lost = add(t, ev::Post{Instant{0ms}, 2, "bg"});
  add(t, ev::PostRun{Instant{1ms}, 0, 1});
  Verdict v = post_latency(t, within(2ms), Costs{});
  CHECK_FALSE(v.held);
  CHECK(v.measured == -1);
  CHECK(v.first_bad == lost);
}

TEST_CASE("post_latency with of judges only that poster's posts") {
  Trace t = loop_trace(0);
  add(t, ev::Post{Instant{0ms}, 1, "bg"});
  add(t, ev::Post{Instant{0ms}, 2, "slow"});
  add(t, ev::PostRun{Instant{1ms}, 0, 1});
  std::size_t slow_run = add(t, ev::PostRun{Instant{9ms}, 0, 2});
  CHECK(post_latency(t, within(2ms, "bg"), Costs{}).held);
  Verdict v = post_latency(t, within(2ms, "slow"), Costs{});
  CHECK_FALSE(v.held);
  CHECK(v.of == "slow");
  CHECK(v.measured == Duration(9ms).count());
  CHECK(v.first_bad == slow_run);
  Verdict nobody = post_latency(t, within(2ms, "nobody"), Costs{});
  CHECK_FALSE(nobody.held);
  CHECK(nobody.measured == -1);
  CHECK(nobody.detail == "no post from \"nobody\"");
}

TEST_CASE("post_latency fails on a post callback that ran twice") {
  Trace t = loop_trace(0);
  add(t, ev::Post{Instant{0ms}, 1, "bg"});
  add(t, ev::PostRun{Instant{1ms}, 0, 1});
  std::size_t again = add(t, ev::PostRun{Instant{1ms}, 0, 1});
  Verdict v = post_latency(t, within(2ms), Costs{});
  CHECK_FALSE(v.held);
  CHECK(v.first_bad == again);
}

// ---- no_spin -------------------------------------------------------------------------------

namespace {

// Passes as the kernel sees them: each a wait called at a time, returning `waited` later with
// `fds` ready, and the kernel's count of calls that got something done since the previous wait.
struct Passes {
  Trace t = loop_trace(1);
  Duration now{0};
  std::uint64_t pass = 0;
  // One pass; returns the index of its wait's return.
  std::size_t wait(std::optional<Duration> timeout, Duration waited, std::int32_t work_before, std::vector<int> fds = {}, int worker = 0) {
    ++pass;
    add(t, ev::PassBegin{Instant{now}, worker, pass, timeout});
    now += waited;
    return add(t, ev::Events{Instant{now}, worker, pass, std::move(fds), work_before});
  }
  // `n` passes whose waits return the listener at once, each followed by a failing accept: the
  // level-triggered EMFILE spin, whatever the timeout asked.
  // `first_work`: the count the first of them brings for the pass before it.
  std::size_t emfile_passes(int n, std::int64_t first_work = 0, Duration timeout = 1s, int worker = 0) {
    std::size_t first = 0;
    for (int i = 0; i < n; ++i) {
      std::size_t at = wait(timeout, 0ns, i == 0 ? first_work : 0, {listener}, worker);
      if (i == 0) first = at;
      add(t, ev::Accept{Instant{now}, worker, Door::listener, -EMFILE, no_client});
      now += 1us;  // a failing call's cost
    }
    return first;
  }
};

}  // namespace

TEST_CASE("no_spin: a level-triggered listener under EMFILE, returned at once by a 1 s wait, spins") {
  // An unmodified epoll server: wait(1000 ms) returns the listener at once, accept fails, again.
  Passes p;
  p.wait(1s, 1s, 0);  // a quiet second first
  std::size_t first = p.emfile_passes(6);
  p.wait(1s, 0ns, 0);  // the next wait's count closes the last pass
  Verdict v = no_spin(p.t, count_bounds({}, 3));
  CHECK_FALSE(v.held);
  CHECK(v.measured == 6);
  CHECK(v.first_bad == first + 3 * 3);  // the fourth idle pass's wait return
  CHECK(v.detail.find("worker 0 made 6 passes in a row that returned at once and got nothing done") == 0);
}

TEST_CASE("no_spin: passes at once that each finish a request are work, though the kernel moved no byte") {
  // R8's turns with a full send buffer: each pass answers one more request into the loop's own
  // buffer, and its write finds no room. The kernel counts nothing; the loop did something.
  auto passes = [](bool answering) {
    Passes p;
    p.wait(1s, 1s, 0);
    for (int i = 0; i < 6; ++i) {
      p.wait(0ns, 0ns, 0, {7});
      if (answering) add(p.t, ev::RequestEnd{Instant{p.now}, 0, 7, 0, 200});
    }
    p.wait(1s, 0ns, 0);
    return no_spin(p.t, count_bounds({}, 3));
  };
  CHECK(passes(true).held);
  CHECK(passes(true).measured == 0);
  CHECK_FALSE(passes(false).held);  // the same passes answering nothing spin
}

TEST_CASE("no_spin says when the spin began, not when its last pass did") {
  Passes p;
  p.wait(1s, 1s, 0);
  p.emfile_passes(600);  // a failing accept costs 1 us: the last pass begins at 1000.6 ms
  p.wait(1s, 0ns, 0);
  Verdict v = no_spin(p.t, count_bounds({}, 3));
  INFO(v.detail);
  CHECK(v.detail.find(", from 1000.0 ms)") != std::string::npos);
}

TEST_CASE("no_spin: a level-triggered descriptor never drained under wait(-1) spins") {
  Passes p;
  for (int i = 0; i < 5; ++i) p.wait(wait_forever, 0ns, 0, {7});
  CHECK_FALSE(no_spin(p.t, count_bounds({}, 3)).held);
}

TEST_CASE("no_spin: busy polling with a zero timeout and nothing to do spins, the clock moves 1 us a poll") {
  Passes p;
  for (int i = 0; i < 5; ++i) p.wait(0ns, 1us, 0);
  Verdict v = no_spin(p.t, count_bounds({}, 3));
  CHECK_FALSE(v.held);
  CHECK(v.measured == 4);  // the last pass is not over
}

TEST_CASE("no_spin holds when a wait blocks or a pass gets something done") {
  Passes p;
  p.emfile_passes(3);
  p.wait(1s, 5ms, 0);  // blocks: the run of three ends (this pass's count is the last one's)
  p.emfile_passes(2);
  p.wait(0ns, 0ns, 0, {listener});
  accept(p.t, 5, 0);
  p.emfile_passes(3, 1);  // the kernel counts the accept for the pass before
  p.wait(1s, 1s, 0);
  Verdict v = no_spin(p.t, count_bounds({}, 3));
  CHECK(v.held);
  CHECK(v.measured == 3);
  CHECK(v.bound == 3);
}

TEST_CASE("no_spin: an owed batch per pass under a flood holds, each pass accepting") {
  Passes p;
  for (int i = 0; i < 1000; ++i) p.wait(0ns, 0ns, 16, {listener});
  Verdict v = no_spin(p.t, Expectation{});
  CHECK(v.held);
  CHECK(v.measured == 0);
}

TEST_CASE("no_spin: passes a second apart are no spin, though each returns at once with nothing to do") {
  // An inverted loop ticked from outside once a second (tests/data/generated/inverted-ticks.toml).
  Passes p;
  for (int i = 0; i < 200; ++i) {
    p.wait(0ns, 0ns, 0);
    p.now += 1s;
  }
  Verdict v = no_spin(p.t, Expectation{});
  CHECK(v.held);
  CHECK(v.measured == 0);
}

TEST_CASE("no_spin catches a hot accept loop that fails again and again without waiting") {
  // libuv 1.44 under an EMFILE that does not go away: accept, the EMFILE trick, the callback,
  // and round again, inside one pass.
  Trace t = loop_trace(1);
  pass_begin(t, 1, 1s);
  std::size_t first = accept(t, -EMFILE, no_client);
  for (int i = 1; i < 5; ++i) accept(t, -EMFILE, no_client);
  Verdict v = no_spin(t, count_bounds({}, 3));
  CHECK_FALSE(v.held);
  CHECK(v.measured == 5);
  CHECK(v.first_bad == first);
  CHECK(v.detail.find("worker 0 made 5 failing accepts in a row without a wait (from EMFILE") == 0);
}

TEST_CASE("no_spin lets failed accepts be when a wait that blocks, a success or EAGAIN comes between") {
  // The built-in loop ends a batch at its first error: one failure a pass at most.
  Passes p;
  for (int i = 0; i < 10; ++i) {
    p.wait(1s, 100ms, 0, {listener});
    add(p.t, ev::Accept{Instant{p.now}, 0, Door::listener, -EMFILE, no_client});
  }
  p.wait(1s, 100ms, 0, {listener});
  accept(p.t, -EMFILE, no_client);
  accept(p.t, -EMFILE, no_client);
  accept(p.t, 5, 0);  // a success ends the run
  accept(p.t, -EMFILE, no_client);
  accept(p.t, -EAGAIN, no_client);  // EAGAIN is the end of a drain, no failure
  accept(p.t, -EMFILE, no_client);
  Verdict v = no_spin(p.t, count_bounds({}, 3));
  CHECK(v.held);
  CHECK(v.measured == 2);
}

TEST_CASE("no_spin counts each worker's run apart and defaults to 100") {
  Passes p;
  for (int i = 0; i < 61; ++i) {  // two workers, interleaved, each idle 60 times
    for (int worker : {0, 1}) p.wait(0ns, 0ns, 0, {listener}, worker);
  }
  Verdict v = no_spin(p.t, Expectation{});
  CHECK(v.held);
  CHECK(v.measured == 60);
  CHECK(v.bound == no_spin_max_default);
  p.wait(0ns, 0ns, 5, {}, 1);  // worker 1's work does not end worker 0's run
  for (int i = 0; i < 41; ++i) p.wait(0ns, 0ns, 0, {listener}, 0);
  Verdict spun = no_spin(p.t, Expectation{});
  CHECK_FALSE(spun.held);
  CHECK(spun.measured == 101);
}

TEST_CASE("no_spin reads an older trace without the kernel's counts by its progress events") {
  Trace t = loop_trace(1);
  for (std::uint64_t n = 1; n <= 5; ++n) {
    pass_begin(t, n, 0ns);
    add(t, ev::Events{Instant{0ms}, 0, n, {listener}});  // work unknown
    add(t, ev::Accept{Instant{0ms}, 0, Door::listener, -EMFILE, no_client});
  }
  CHECK_FALSE(no_spin(t, count_bounds({}, 3)).held);
  Trace busy = loop_trace(1);
  for (std::uint64_t n = 1; n <= 5; ++n) {
    pass_begin(busy, n, 0ns);
    add(busy, ev::Events{Instant{0ms}, 0, n, {listener}});
    accept(busy, 5, 0);  // progress
  }
  CHECK(no_spin(busy, count_bounds({}, 3)).held);
}

// ---- shutdown_clean ------------------------------------------------------------------------

namespace {

// A shutdown of worker 0 holding the connection on descriptor 5.
Trace shut_down(bool owed_after_close) {
  Trace t = loop_trace(2);
  pass_begin(t, 1, 1s);
  accept(t, 5, 0);
  pass_end(t, 1);
  pass_begin(t, 2, 1s);
  add(t, ev::ShutdownBegin{Instant{1ms}, 0});
  accept(t, 6, 1, 0, Door::handoff);  // R5: admits what a sibling handed over
  add(t, ev::ListenerClosed{Instant{1ms}, 0});
  if (owed_after_close) accept(t, 7, no_client);  // the owed batch drains a closed listener
  add(t, ev::Close{Instant{2ms}, 0, 5, 0});
  add(t, ev::Close{Instant{2ms}, 0, 6, 1});
  add(t, ev::LoopExit{Instant{2ms}, 0, 0});
  pass_end(t, 2, 0, owed_after_close);
  run_end(t);
  return t;
}

}  // namespace

TEST_CASE("shutdown_clean holds when the loop admits, closes, clears and exits") {
  Verdict v = shutdown_clean(shut_down(false));
  CHECK(v.held);
  CHECK(v.measured == 0);
  CHECK(v.detail.empty());
}

TEST_CASE("shutdown_clean judges an exit holding connections by what their clients lose") {
  // The loop exits still holding both connections, as a process's exit leaves them to the kernel.
  auto exits_holding = [](bool owed, bool answered_later) {
    Trace t = shut_down(false);
    std::erase_if(t.events, [](const TraceEvent& e) { return std::holds_alternative<ev::Close>(e); });
    for (TraceEvent& e : t.events) {
      if (auto* x = std::get_if<ev::LoopExit>(&e)) x->open_connections = 2;
    }
    if (owed) t.events.insert(t.events.begin() + 2, ev::Send{Instant{0ms}, 0, "/"});  // before the exit
    // The answer written before the exit reaches its client after it.
    if (answered_later) t.events.insert(t.events.end() - 1, ev::Answer{Instant{3ms}, 0, "/", 200});
    return t;
  };
  Verdict idle = shutdown_clean(exits_holding(false, false));
  CHECK(idle.held);
  CHECK(idle.detail == "worker 0 exited holding 2 idle connection(s), with nothing outstanding: each client sees the close");
  Verdict lost = shutdown_clean(exits_holding(true, false));
  CHECK_FALSE(lost.held);
  CHECK(lost.detail ==
        "worker 0 exited holding 1 connection(s) owed an answer (and 1 idle connection(s), with nothing "
        "outstanding); 1 request(s) outstanding at an exit never answered");
  CHECK(shutdown_clean(exits_holding(true, true)).held);
}

TEST_CASE("shutdown_clean counts what a target's exit loses on the connections any of its threads accepted") {
  // A target's threads accept where they run (a Go program's goroutines run on any thread); the
  // seam reports its shutdown, listener and loop_exit as worker 0's, and its process_exit ends
  // every thread's connections.
  auto exits = [](bool process_exit) {
    Trace t = shut_down(false);
    std::erase_if(t.events, [](const TraceEvent& e) { return std::holds_alternative<ev::Close>(e); });
    for (TraceEvent& e : t.events) {
      if (auto* a = std::get_if<ev::Accept>(&e); a != nullptr && a->client == 0) a->worker = 3;
      if (auto* x = std::get_if<ev::LoopExit>(&e)) x->open_connections = 2;
    }
    t.events.insert(t.events.begin() + 2, ev::Send{Instant{0ms}, 0, "/"});
    if (process_exit) {
      auto at = std::find_if(t.events.begin(), t.events.end(),
                             [](const TraceEvent& e) { return std::holds_alternative<ev::LoopExit>(e); });
      t.events.insert(at + 1, ev::ProcessExit{Instant{2ms}, 0});
    }
    return t;
  };
  // A loop's exit alone leaves another worker's connections to it.
  CHECK(shutdown_clean(exits(false)).held);
  Verdict lost = shutdown_clean(exits(true));
  CHECK_FALSE(lost.held);
  CHECK(lost.detail.find("1 request(s) outstanding at an exit never answered") != std::string::npos);
}

TEST_CASE("shutdown_clean fails at an accept on the listener after it closed") {
  Trace t = shut_down(true);
  Verdict v = shutdown_clean(t);
  CHECK_FALSE(v.held);
  CHECK(v.measured == 2);  // the late accept and the owed pass end
  REQUIRE(v.first_bad);
  CHECK(std::get<ev::Accept>(t.events[*v.first_bad]).result == 7);
  CHECK(v.detail == "1 accept(s) on a closed listener; 1 pass(es) ended owed after the listener closed");
}

TEST_CASE("shutdown_clean fails when connections, hand-offs or a loop are left at the end") {
  Trace t = shut_down(false);
  std::erase_if(t.events, [](const TraceEvent& e) { return std::holds_alternative<ev::LoopExit>(e); });
  t.events.back() = ev::RunEnd{Instant{1s}, 0, 1, 2, 0};
  Verdict v = shutdown_clean(t);
  CHECK_FALSE(v.held);
  CHECK(v.measured == 4);  // no exit, two hand-offs waiting, one connection open
  CHECK(v.first_bad == t.events.size() - 1);
  CHECK(v.detail ==
        "worker 0 never exited; 2 handed-over connection(s) never admitted; 1 connection(s) still "
        "open at the end");
}

TEST_CASE("shutdown_clean fails at a handler begun after the asking and before the close, and at a drain past max") {
  Trace t = shut_down(false);
  // Asked at 0.5 ms; a handler begins at 0.8 ms, before the listener closes at 1 ms.
  t.events.insert(t.events.begin() + 1, ev::ShutdownAsked{Instant{500us}});
  auto closed = std::find_if(t.events.begin(), t.events.end(),
                             [](const TraceEvent& e) { return std::holds_alternative<ev::ShutdownBegin>(e); });
  t.events.insert(closed, ev::RequestBegin{Instant{800us}, 0, 5, 0, "/slow"});
  Verdict v = shutdown_clean(t);
  CHECK_FALSE(v.held);
  CHECK(v.measured == 1);
  CHECK(v.detail == "1 handler(s) begun after the shutdown was asked, before the listener closed");
  // The exit at 2 ms is 1.5 ms after the asking: within 2 ms, past 1 ms.
  sim::Expectation within;
  within.max = sim::Bound{sim::Bound::Unit::time, 2e6, "2ms"};
  CHECK(shutdown_clean(t, within).measured == 1);
  sim::Expectation past = within;
  past.max = sim::Bound{sim::Bound::Unit::time, 1e6, "1ms"};
  Verdict late = shutdown_clean(t, past);
  CHECK(late.measured == 2);
  CHECK(late.detail.find("the drain took 1.5 ms from the shutdown's asking to the last exit") != std::string::npos);
}

TEST_CASE("shutdown_clean fails on a queued connection that the listener's close reset") {
  Trace t = shut_down(false);
  // Client 2 completed its handshake before the shutdown and was never accepted: the close of
  // the listener resets it. Client 3, refused after the close, never connected: no breach.
  t.events.insert(t.events.begin() + 1, ev::Established{Instant{0ms}, 2});
  t.events.insert(t.events.end() - 1, ev::Refused{Instant{2ms}, 2, ECONNRESET});
  t.events.insert(t.events.end() - 1, ev::Refused{Instant{2ms}, 3, ECONNREFUSED});
  Verdict v = shutdown_clean(t);
  CHECK_FALSE(v.held);
  CHECK(v.measured == 1);
  REQUIRE(v.first_bad);
  CHECK(std::get<ev::Refused>(t.events[*v.first_bad]).client == 2);
  CHECK(v.detail == "1 queued connection(s) reset when the listener closed, never accepted");
}

TEST_CASE("shutdown_clean: a client that hears of its handshake after its accept was never queued") {
  Trace t = shut_down(false);
  // Over a delaying network, client 0 learns it is connected after the loop accepted it; a
  // reset it meets later is the loop's close, not the listener's (answered judges that).
  t.events.insert(t.events.begin() + 4, ev::Established{Instant{500us}, 0});
  t.events.insert(t.events.end() - 1, ev::Refused{Instant{3ms}, 0, ECONNRESET});
  Verdict v = shutdown_clean(t);
  CHECK(v.held);
  // The same client queued before its accept and reset by the listener's close still counts.
  Trace queued = shut_down(false);
  queued.events.insert(queued.events.begin() + 1, ev::Established{Instant{0ms}, 2});
  queued.events.insert(queued.events.end() - 1, ev::Refused{Instant{2ms}, 2, ECONNRESET});
  CHECK_FALSE(shutdown_clean(queued).held);
}

TEST_CASE("shutdown_clean fails on a hand-off that a shutdown dropped instead of admitting") {
  Trace t = shut_down(false);
  t.events.insert(t.events.begin(), ev::Handoff{Instant{0ms}, 1, 0, 1});  // worker 0 admits it at shutdown
  CHECK(shutdown_clean(t).held);
  std::size_t dropped = t.events.size() - 1;  // just before run_end: nobody admits it
  t.events.insert(t.events.begin() + std::ptrdiff_t(dropped), ev::Handoff{Instant{3ms}, 1, 0, 0});
  Verdict v = shutdown_clean(t);  // run_end counts nothing waiting: the connection was closed
  CHECK_FALSE(v.held);
  CHECK(v.measured == 1);
  CHECK(v.first_bad == dropped);
  CHECK(v.detail == "1 handed-over connection(s) never admitted");
}

TEST_CASE("shutdown_clean fails when the run never shut down") {
  Trace t = loop_trace(1);
  pass_begin(t, 1, 1s);
  pass_end(t, 1);
  std::size_t end = run_end(t);
  Verdict v = shutdown_clean(t);
  CHECK_FALSE(v.held);
  CHECK(v.measured == -1);
  CHECK(v.first_bad == end);
  CHECK(v.detail == "no shutdown in this run");
}

// ---- batch_bound ---------------------------------------------------------------------------

TEST_CASE("batch_bound holds when each door gives at most max a pass") {
  Trace t = loop_trace(6, 2);
  pass_begin(t, 1, 1s);
  accept(t, 5, 0);
  accept(t, 6, 1);
  accept(t, 7, 2, 0, Door::handoff);
  accept(t, 8, 3, 0, Door::handoff);
  add(t, ev::Accept{Instant{0ms}, 0, Door::listener, -EAGAIN, no_client});
  pass_end(t, 1, 0, true);
  pass_begin(t, 2, 0ns);
  accept(t, 9, 4);
  accept(t, 10, 5);
  pass_end(t, 2);
  Verdict v = batch_bound(t, count_bounds({}, 2));
  CHECK(v.held);
  CHECK(v.measured == 2);
  CHECK(v.bound == 2);
}

TEST_CASE("batch_bound fails at the accept past max in one pass") {
  Trace t = loop_trace(4, 2);
  pass_begin(t, 1, 1s);
  accept(t, 5, 0);
  accept(t, 6, 1);
  std::size_t third = accept(t, 7, 2);
  accept(t, 8, 3);
  pass_end(t, 1);
  Verdict v = batch_bound(t, count_bounds({}, 2));
  CHECK_FALSE(v.held);
  CHECK(v.measured == 4);
  CHECK(v.first_bad == third);
  CHECK(v.detail == "worker 0 accepted 4 from the listener in pass 1, more than 2");
}

TEST_CASE("batch_bound takes R1's default batch, not the batch of the run it judges") {
  // The unbounded-drain sabotage (accept_batch 0) drains 100 in one pass. Were the bound read
  // from the run's own header, the sabotage would be its own judge and pass.
  const int batch = LoopConfig{}.accept_batch;
  Trace drained = loop_trace(100, 0, 1024);
  std::size_t past = accepting_pass(drained, 1, 0, 100).at(std::size_t(batch));
  Verdict v = batch_bound(drained, Expectation{});
  CHECK_FALSE(v.held);
  CHECK(v.bound == batch);
  CHECK(v.measured == 100);
  CHECK(v.first_bad == past);
  // A configured batch above the default widens nothing either.
  Trace wide = loop_trace(batch + 4, 4 * batch);
  accepting_pass(wide, 1, 0, batch + 4);
  CHECK_FALSE(batch_bound(wide, Expectation{}).held);
  // The same 100 connections taken a default batch a pass hold, whatever the header says.
  Trace batched = loop_trace(100, 0, 1024);
  for (int first = 0; first < 100; first += batch) {
    accepting_pass(batched, std::uint64_t(first), first, std::min(batch, 100 - first));
  }
  Verdict held = batch_bound(batched, Expectation{});
  CHECK(held.held);
  CHECK(held.measured == batch);
}

TEST_CASE("batch_bound fails on a run that accepted nothing, or a max that is not a count") {
  Trace t = loop_trace(1);
  pass_begin(t, 1, 1s);
  add(t, ev::Accept{Instant{0ms}, 0, Door::listener, -EAGAIN, no_client});
  pass_end(t, 1);
  std::size_t end = run_end(t);
  Verdict none = batch_bound(t, Expectation{});
  CHECK_FALSE(none.held);
  CHECK(none.first_bad == end);
  CHECK(none.detail == "no connection was accepted in this run, so no batch was measured");
  Trace one = loop_trace(1);
  accept(one, 5, 0);
  CHECK(batch_bound(one, Expectation{}).held);
  Verdict timed = batch_bound(one, within(16ms));
  CHECK_FALSE(timed.held);
  CHECK(timed.detail.starts_with("batch_bound's max is a count of accepts"));
}

TEST_CASE("batch_bound leaves out the hand-offs a shutdown admits") {
  Trace t = loop_trace(3, 1);
  pass_begin(t, 1, 1s);
  add(t, ev::ShutdownBegin{Instant{0ms}, 0});
  for (int c = 0; c < 3; ++c) accept(t, 5 + c, c, 0, Door::handoff);
  add(t, ev::ListenerClosed{Instant{0ms}, 0});
  pass_end(t, 1);
  CHECK(batch_bound(t, count_bounds({}, 1)).held);
}

// ---- wiring --------------------------------------------------------------------------------

TEST_CASE("evaluate judges every property it knows, by name") {
  Trace t = shut_down(false);
  std::vector<Expectation> expect;
  for (const std::string& name : property_names()) {
    Expectation e = count_bounds(0, 10);
    e.property = name;
    if (name == "latency" || name == "max_gap") e.of = t.groups.front();
    expect.push_back(e);
  }
  auto verdicts = evaluate(t, expect, Costs{});
  REQUIRE(verdicts.size() == property_names().size());
  for (std::size_t i = 0; i < verdicts.size(); ++i) CHECK(verdicts[i].property == property_names()[i]);
  CHECK(known_property("shutdown_clean"));
  CHECK_FALSE(known_property("spin"));
}

// ---- each bound, met exactly, missed by one, and kept by one ----------------------------------
// A measure at its bound holds; one unit (a nanosecond, a connection, a pass, an accept) past it
// fails; one short of it holds. A bound read with a tolerance, or with < for <=, fails here.

TEST_CASE("capacity's min at the peak holds, one above the peak fails, one below holds") {
  Trace t = loop_trace(3);
  accept(t, 5, 0);
  accept(t, 6, 1);
  accept(t, 7, 2);
  run_end(t, 3);
  CHECK(capacity(t, count_bounds(3)).held);
  CHECK(capacity(t, count_bounds(2)).held);
  Verdict short_of_min = capacity(t, count_bounds(4));
  CHECK_FALSE(short_of_min.held);
  CHECK(short_of_min.measured == 3);
}

TEST_CASE("capacity's max at the peak holds, one below the peak fails, one above holds") {
  Trace t = loop_trace(3);
  accept(t, 5, 0);
  accept(t, 6, 1);
  std::size_t third = accept(t, 7, 2);
  run_end(t, 3);
  CHECK(capacity(t, count_bounds(1, 3)).held);
  CHECK(capacity(t, count_bounds(1, 4)).held);
  Verdict over = capacity(t, count_bounds(1, 2));
  CHECK_FALSE(over.held);
  CHECK(over.first_bad == third);
}

TEST_CASE("post_latency at its bound holds, one nanosecond over it fails, one under it holds") {
  Trace t = loop_trace(0);
  add(t, ev::Post{Instant{1ms}, 1, "bg"});
  std::size_t ran = add(t, ev::PostRun{Instant{3ms}, 0, 1});
  CHECK(post_latency(t, within(2ms), Costs{}).held);
  CHECK(post_latency(t, within(2ms + 1ns), Costs{}).held);
  Verdict over = post_latency(t, within(2ms - 1ns), Costs{});
  CHECK_FALSE(over.held);
  CHECK(over.measured == Duration(2ms).count());
  CHECK(over.first_bad == ran);
}

TEST_CASE("no_spin's idle passes at its bound hold, one pass over it fails, one under it holds") {
  Passes p;
  for (int i = 0; i < 5; ++i) p.wait(0ns, 1us, 0);  // four idle passes closed, the fifth open
  CHECK(no_spin(p.t, count_bounds({}, 4)).held);
  CHECK(no_spin(p.t, count_bounds({}, 5)).held);
  Verdict over = no_spin(p.t, count_bounds({}, 3));
  CHECK_FALSE(over.held);
  CHECK(over.measured == 4);
}

TEST_CASE("no_spin's failing accepts at its bound hold, one over it fails, one under it holds") {
  Trace t = loop_trace(1);
  pass_begin(t, 1, 1s);
  std::size_t first = accept(t, -EMFILE, no_client);
  for (int i = 1; i < 5; ++i) accept(t, -EMFILE, no_client);
  CHECK(no_spin(t, count_bounds({}, 5)).held);
  CHECK(no_spin(t, count_bounds({}, 6)).held);
  Verdict over = no_spin(t, count_bounds({}, 4));
  CHECK_FALSE(over.held);
  CHECK(over.measured == 5);
  CHECK(over.first_bad == first);
}

TEST_CASE("shutdown_clean's drain at its max holds, one nanosecond over it fails, one under it holds") {
  Trace t = shut_down(false);
  t.events.insert(t.events.begin() + 1, ev::ShutdownAsked{Instant{500us}});  // the last exit is at 2 ms
  auto max = [](Duration drain) {
    sim::Expectation e;
    e.max = sim::Bound{sim::Bound::Unit::time, double(drain.count()), "drain"};
    return e;
  };
  CHECK(shutdown_clean(t, max(1500us)).held);
  CHECK(shutdown_clean(t, max(1500us + 1ns)).held);
  Verdict over = shutdown_clean(t, max(1500us - 1ns));
  CHECK_FALSE(over.held);
  CHECK(over.measured == 1);
  CHECK(over.detail.find("the drain took 1.5 ms from the shutdown's asking to the last exit") != std::string::npos);
}

TEST_CASE("batch_bound at its bound holds, one accept over it fails, one under it holds") {
  Trace t = loop_trace(3, 3);
  pass_begin(t, 1, 1s);
  accept(t, 5, 0);
  accept(t, 6, 1);
  std::size_t third = accept(t, 7, 2);
  pass_end(t, 1);
  CHECK(batch_bound(t, count_bounds({}, 3)).held);
  CHECK(batch_bound(t, count_bounds({}, 4)).held);
  Verdict over = batch_bound(t, count_bounds({}, 2));
  CHECK_FALSE(over.held);
  CHECK(over.measured == 3);
  CHECK(over.first_bad == third);
}
