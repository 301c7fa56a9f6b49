// Each property on a trace that keeps it and on one that breaks it, built by hand so the
// checker is tested apart from the loop.
#include <catch2/catch.hpp>

#include <limits>

#include "checker/judge.hpp"
#include "checker/properties.hpp"

using namespace loopsim;
using namespace loopsim::sim;
using namespace loopsim::checker;
using namespace std::chrono_literals;

namespace {

// Two groups: "a" (one client) and "b" (three), one request each.
Trace two_groups() {
  Trace t;
  t.groups = {"a", "b"};
  t.group_sizes = {1, 3};
  t.clients = {{0, 0, 1}, {1, 0, 1}, {1, 1, 1}, {1, 2, 1}};
  for (ClientIndex c = 0; c < 4; ++c) t.events.push_back(ev::Connect{Instant{0ms}, c});
  return t;
}

void answer(Trace& t, Duration at, ClientIndex c) {
  t.events.push_back(ev::Answer{Instant{at}, c, "/x", 200});
}

void serve(Trace& t, Duration begin, Duration end, int fd) {
  t.events.push_back(ev::RequestBegin{Instant{begin}, 0, fd, no_client, "/x"});
  t.events.push_back(ev::RequestEnd{Instant{end}, 0, fd, no_client, 200});
}

Expectation expect(std::string property, std::string of, Bound max, std::string after = "") {
  Expectation e;
  e.property = std::move(property);
  e.of = std::move(of);
  e.after = std::move(after);
  e.max = max;
  return e;
}

Bound ms(double v) { return Bound{Bound::Unit::time, v * 1e6, std::to_string(v) + "ms"}; }

}  // namespace

TEST_CASE("answered holds when every request has one answer, fails on a lost one") {
  Trace t = two_groups();
  for (ClientIndex c = 0; c < 4; ++c) answer(t, 10ms, c);
  CHECK(answered(t).held);

  Trace lost = two_groups();
  for (ClientIndex c = 0; c < 3; ++c) answer(lost, 10ms, c);
  Verdict v = answered(lost);
  CHECK_FALSE(v.held);
  CHECK(v.measured == 1);
  REQUIRE(v.first_bad);
  CHECK(*v.first_bad == 3);  // the connect of the client never answered
}

TEST_CASE("answered of one group judges that group alone: its loss fails, another's does not") {
  Trace t = two_groups();
  answer(t, 10ms, 0);  // "a" answered; "b" lost all three (shed by the kernel, say)
  CHECK(answered(t, "a").held);
  CHECK(answered(t, "a").of == "a");
  Verdict b = answered(t, "b");
  CHECK_FALSE(b.held);
  CHECK(b.measured == 3);
  CHECK(*b.first_bad == 1);  // b's first client's connect
  CHECK_FALSE(answered(t).held);
  Trace lost_a = two_groups();
  for (ClientIndex c = 1; c < 4; ++c) answer(lost_a, 10ms, c);
  CHECK_FALSE(answered(lost_a, "a").held);
  CHECK(answered(lost_a, "b").held);
}

TEST_CASE("answered fails on a request answered twice") {
  Trace t = two_groups();
  for (ClientIndex c = 0; c < 4; ++c) answer(t, 10ms, c);
  answer(t, 20ms, 2);
  Verdict v = answered(t);
  CHECK_FALSE(v.held);
  CHECK(v.first_bad == t.events.size() - 1);
}

TEST_CASE("answered forgives a client that reset, not one answered twice") {
  Trace t = two_groups();
  for (ClientIndex c = 0; c < 3; ++c) answer(t, 10ms, c);
  t.events.push_back(ev::Reset{Instant{15ms}, 3});  // withdrew its request
  CHECK(answered(t).held);
  answer(t, 20ms, 3);
  answer(t, 20ms, 3);  // and yet two answers reached it: the second was someone else's
  Verdict v = answered(t);
  CHECK_FALSE(v.held);
  CHECK(v.first_bad == t.events.size() - 1);
}

TEST_CASE("no_stranded_backlog fails when connections are still queued at the end") {
  Trace t = two_groups();
  t.events.push_back(ev::RunEnd{Instant{20s}, 0, 0, 0, 0});
  CHECK(no_stranded_backlog(t, Expectation{}, Costs{}).held);
  t.events.back() = ev::RunEnd{Instant{20s}, 89, 0, 0, 0};
  Verdict v = no_stranded_backlog(t, Expectation{}, Costs{});
  CHECK_FALSE(v.held);
  CHECK(v.measured == 89);
}

TEST_CASE("no_stranded_backlog with max fails when a connection waited while the loop slept") {
  Trace t = two_groups();
  t.events.push_back(ev::Established{Instant{0ms}, 1});
  t.events.push_back(ev::PassBegin{Instant{0ms}, 0, 1, 1s});  // a blocking wait...
  t.events.push_back(ev::Events{Instant{1s}, 0, 1, {}});        // ...that slept a whole second
  t.events.push_back(ev::Accept{Instant{1s}, 0, Door::listener, 5, 1});
  t.events.push_back(ev::RunEnd{Instant{2s}, 0, 0, 0, 0});
  Expectation e = expect("no_stranded_backlog", "", ms(500));
  Verdict v = no_stranded_backlog(t, e, Costs{});
  CHECK_FALSE(v.held);
  CHECK(v.measured == Duration(1s).count());
  e.max = ms(1500);
  CHECK(no_stranded_backlog(t, e, Costs{}).held);
}

TEST_CASE("no_stranded_backlog counts hand-offs nobody admitted, and a trace with no run_end") {
  // Multi-worker: a sibling handed connections over and the worker never took them from the
  // channel. The listener's backlog is empty; the hand-off door is not.
  Trace t = two_groups();
  t.workers = 2;
  t.events.push_back(ev::RunEnd{Instant{20s}, 0, 0, 0, 0});
  CHECK(no_stranded_backlog(t, Expectation{}, Costs{}).held);
  t.events.back() = ev::RunEnd{Instant{20s}, 0, 0, 3, 0};
  Verdict v = no_stranded_backlog(t, Expectation{}, Costs{});
  CHECK_FALSE(v.held);
  CHECK(v.measured == 3);
  CHECK(v.first_bad == t.events.size() - 1);
  CHECK(v.detail == "0 connection(s) still queued and 3 handed over but not admitted at the end of the run");
  t.events.back() = ev::RunEnd{Instant{20s}, 2, 0, 3, 0};
  CHECK(no_stranded_backlog(t, Expectation{}, Costs{}).measured == 5);
  t.events.pop_back();
  Verdict unknown = no_stranded_backlog(t, Expectation{}, Costs{});
  CHECK_FALSE(unknown.held);
  CHECK(unknown.measured == -1);
}

TEST_CASE("no_stranded_backlog with max fails on a hand-off that waited while both loops slept") {
  Trace t = two_groups();
  t.workers = 2;
  t.events.push_back(ev::Established{Instant{0ms}, 1});
  t.events.push_back(ev::Accept{Instant{0ms}, 0, Door::listener, 5, 1});
  t.events.push_back(ev::Handoff{Instant{0ms}, 0, 1, 1});
  t.events.push_back(ev::PassBegin{Instant{0ms}, 0, 1, 1s});  // both loops block...
  t.events.push_back(ev::PassBegin{Instant{0ms}, 1, 1, 1s});
  t.events.push_back(ev::Events{Instant{1s}, 1, 1, {}});       // ...and the sibling wakes a second later
  std::size_t admitted = t.events.size();
  t.events.push_back(ev::Accept{Instant{1s}, 1, Door::handoff, 5, 1});
  t.events.push_back(ev::RunEnd{Instant{2s}, 0, 0, 0, 0});
  Expectation e = expect("no_stranded_backlog", "", ms(500));
  Verdict v = no_stranded_backlog(t, e, Costs{});
  CHECK_FALSE(v.held);
  CHECK(v.measured == Duration(1s).count());
  CHECK(v.first_bad == admitted);
  CHECK(v.detail == "a connection waited 1000.0 ms at the handoff door while the loop was idle");
  e.max = ms(1500);
  CHECK(no_stranded_backlog(t, e, Costs{}).held);
}

TEST_CASE("latency fails when one answer comes too long after another") {
  Trace t = two_groups();
  answer(t, 600ms, 1);  // b's answers
  answer(t, 700ms, 2);
  answer(t, 750ms, 0);  // a's, 50 ms after b's last
  answer(t, 800ms, 3);
  CHECK(latency(t, expect("latency", "a", ms(100), "b"), Costs{}).held);
  Verdict v = latency(t, expect("latency", "a", ms(100), "b"), Costs{});
  CHECK(v.measured == Duration(-50ms).count());  // b's last answer came after a's
  Verdict tight = latency(t, expect("latency", "b", ms(100), "a"), Costs{});
  CHECK(tight.held);
  Verdict late = latency(t, expect("latency", "b", ms(10), "a"), Costs{});
  CHECK_FALSE(late.held);
  CHECK(late.measured == Duration(50ms).count());
}

TEST_CASE("latency after another group reports a negative gap as it is, and still bounds it") {
  Trace t = two_groups();
  answer(t, 100ms, 0);  // a, before every answer of b
  answer(t, 600ms, 1);
  answer(t, 650ms, 2);
  answer(t, 700ms, 3);
  Verdict v = latency(t, expect("latency", "a", ms(10), "b"), Costs{});
  CHECK(v.held);  // answered first: not stuck behind b
  CHECK(v.measured == Duration(-600ms).count());
  CHECK(v.detail == "a answered 600.0 ms before b's answer");
  Verdict reverse = latency(t, expect("latency", "b", ms(10), "a"), Costs{});
  CHECK_FALSE(reverse.held);
  CHECK(reverse.measured == Duration(600ms).count());
  CHECK(reverse.first_bad == t.events.size() - 1);
}

TEST_CASE("latency after another group fails when a request of either was never answered") {
  // a's first answer came before b's, but a asked twice and its second answer never came: the
  // answer that was measured is not the one that was late.
  Trace t = two_groups();
  t.clients[0].requests = 2;
  t.events.push_back(ev::Send{Instant{50ms}, 0, "/x"});
  answer(t, 100ms, 0);
  std::size_t second = t.events.size();
  t.events.push_back(ev::Send{Instant{200ms}, 0, "/x"});
  for (ClientIndex c = 1; c < 4; ++c) answer(t, 600ms, c);
  Verdict v = latency(t, expect("latency", "a", ms(100), "b"), Costs{});
  CHECK_FALSE(v.held);
  CHECK(v.measured == -1);
  CHECK(v.first_bad == second);
  CHECK(v.detail == "1 of 2 request(s) of a never answered");
  answer(t, 650ms, 0);
  CHECK(latency(t, expect("latency", "a", ms(100), "b"), Costs{}).held);

  // b's last member was never answered: its last answer so far would start the clock early.
  Trace early = two_groups();
  answer(early, 600ms, 1);
  answer(early, 610ms, 2);
  answer(early, 650ms, 0);
  Verdict clock = latency(early, expect("latency", "a", ms(100), "b"), Costs{});
  CHECK_FALSE(clock.held);
  CHECK(clock.measured == -1);
  CHECK(clock.first_bad == 3);  // the connect of b's member never answered
  CHECK(clock.detail == "1 of 3 request(s) of b never answered, so the clock never started");
}

TEST_CASE("latency fails when the after group was never answered") {
  Trace t = two_groups();
  answer(t, 600ms, 0);
  Verdict v = latency(t, expect("latency", "a", ms(100), "b"), Costs{});
  CHECK_FALSE(v.held);
  CHECK(v.measured == -1);
  CHECK(v.detail == "\"b\" was never answered");
  CHECK(v.first_bad == 1);  // the connect of b's first member
}

TEST_CASE("latency measures bounds in batches of the measured request cost") {
  Trace t = two_groups();
  serve(t, 0ms, 10ms, 5);
  serve(t, 10ms, 20ms, 6);
  serve(t, 20ms, 620ms, 7);  // an outlier does not move the median
  answer(t, 620ms, 1);
  answer(t, 900ms, 0);
  Costs costs;
  costs.request = request_cost(t);
  costs.batch = 16;
  CHECK(costs.request == 10ms);
  Bound b{Bound::Unit::batches, 1.5, "1.5 batches"};
  Verdict v = latency(t, expect("latency", "a", b, "b"), costs);
  CHECK(v.bound == Duration(240ms).count());
  CHECK_FALSE(v.held);  // 280 ms > 240 ms
}

TEST_CASE("latency without after measures each request to its own answer") {
  // The flood's probe: a held client asks again and again; each answer counts from its send.
  Trace t = two_groups();
  t.clients[0].requests = 3;
  for (Duration at : {100ms, 200ms, 300ms}) {
    t.events.push_back(ev::Send{Instant{at}, 0, "/fast"});
    answer(t, at + (at == 200ms ? 30ms : 1ms), 0);
  }
  Verdict v = latency(t, expect("latency", "a", ms(50)), Costs{});
  CHECK(v.held);
  CHECK(v.measured == Duration(30ms).count());
  Verdict slow = latency(t, expect("latency", "a", ms(10)), Costs{});
  CHECK_FALSE(slow.held);
  CHECK(slow.measured == Duration(30ms).count());
  CHECK(slow.first_bad == 4 + 3);  // after the connects: send, answer, send, answer (230 ms)
  t.events.push_back(ev::Send{Instant{400ms}, 0, "/fast"});
  Verdict lost = latency(t, expect("latency", "a", ms(50)), Costs{});
  CHECK_FALSE(lost.held);
  CHECK(lost.measured == -1);
  CHECK(lost.first_bad == t.events.size() - 1);
}

TEST_CASE("latency fails when the group was never answered") {
  Trace t = two_groups();
  answer(t, 600ms, 1);
  Verdict v = latency(t, expect("latency", "a", ms(100), "b"), Costs{});
  CHECK_FALSE(v.held);
  CHECK(v.measured == -1);
}

TEST_CASE("max_gap fails on the widest gap between answers of a group") {
  Trace t = two_groups();
  answer(t, 10ms, 1);
  answer(t, 20ms, 2);
  answer(t, 1030ms, 3);
  Verdict v = max_gap(t, expect("max_gap", "b", ms(500)), Costs{});
  CHECK_FALSE(v.held);
  CHECK(v.measured == Duration(1010ms).count());
  CHECK(v.first_bad == t.events.size() - 1);
  CHECK(max_gap(t, expect("max_gap", "b", ms(1500)), Costs{}).held);
}

TEST_CASE("max_gap fails on a group never answered, or answered once of several requests") {
  Trace none = two_groups();
  answer(none, 10ms, 0);
  Verdict never = max_gap(none, expect("max_gap", "b", ms(500)), Costs{});
  CHECK_FALSE(never.held);
  CHECK(never.measured == -1);
  CHECK(never.first_bad == 1);
  CHECK(never.detail == "\"b\" was never answered");

  Trace once = two_groups();
  answer(once, 10ms, 1);
  Verdict open = max_gap(once, expect("max_gap", "b", ms(500)), Costs{});
  CHECK_FALSE(open.held);
  CHECK(open.measured == -1);
  CHECK(open.first_bad == 2);  // the connect of b's second member
  CHECK(open.detail == "2 of 3 request(s) of b never answered, so the gap after its one answer never closed");

  // A group that asked once and got its answer has no gap, and nothing lost.
  CHECK(max_gap(once, expect("max_gap", "a", ms(500)), Costs{}).measured == -1);  // a: none yet
  answer(once, 20ms, 0);
  Verdict single = max_gap(once, expect("max_gap", "a", ms(500)), Costs{});
  CHECK(single.held);
  CHECK(single.measured == 0);
}

TEST_CASE("max_gap fails on a group with no request to answer") {
  Trace t = two_groups();
  for (auto& client : t.clients) client.requests = 0;
  Verdict v = max_gap(t, expect("max_gap", "b", ms(500)), Costs{});
  CHECK_FALSE(v.held);
  CHECK(v.detail == "b sends no request, so there is no gap to measure");
}

TEST_CASE("an arm holds only when exactly the properties it names were violated") {
  Verdict held;
  held.property = "answered";
  Verdict broke;
  broke.property = "latency";
  broke.held = false;
  CHECK(judge({held, broke}, {"latency"}).held);
  CHECK_FALSE(judge({held, broke}, {}).held);                       // the base must hold
  CHECK_FALSE(judge({held, broke}, {"latency", "answered"}).held);  // answered was not caught
  auto j = judge({held, broke}, {"answered"});
  CHECK(j.unexpected_violations == std::vector<std::string>{"latency"});
  CHECK(j.missed_violations == std::vector<std::string>{"answered"});
}

TEST_CASE("liveness fails on a run that came back to a waiting state, or ended with nothing to do") {
  Trace t = two_groups();
  t.events.push_back(ev::RunEnd{Instant{20s}, 1, 0, 0, 0});
  CHECK(liveness(t).held);  // the backlog is no_stranded_backlog's: no cycle was seen
  t.events.insert(t.events.end() - 1, ev::Lasso{Instant{2070ms}, Instant{1070ms}, 1, false});
  Verdict cycle = liveness(t);
  CHECK_FALSE(cycle.held);
  CHECK(cycle.measured == 1);
  CHECK(cycle.first_bad == t.events.size() - 2);
  t.events[t.events.size() - 2] = ev::Lasso{Instant{3s}, Instant{3s}, 2, true};
  Verdict dead = liveness(t);
  CHECK_FALSE(dead.held);
  CHECK(dead.detail.find("nothing is left to happen") != std::string::npos);
}

TEST_CASE("a bound in requests or batches saturates instead of wrapping negative") {
  loopsim::checker::Costs costs;
  costs.request = loopsim::sim::duration_max;
  costs.batch = 16;
  loopsim::sim::Bound huge{loopsim::sim::Bound::Unit::batches, loopsim::sim::bound_cost_max, "1000000 batches"};
  CHECK(loopsim::checker::resolve(huge, costs) == std::numeric_limits<std::int64_t>::max());
  loopsim::sim::Bound two{loopsim::sim::Bound::Unit::requests, 2, "2 requests"};
  costs.request = std::chrono::milliseconds(3);
  CHECK(loopsim::checker::resolve(two, costs) == 6'000'000);
}

TEST_CASE("liveness is judged only on a trace whose run watched for a lasso, otherwise it says why it was not") {
  Trace unwatched;
  Verdict v = liveness(unwatched);
  CHECK_FALSE(v.decided);
  CHECK(v.detail.find("not judged: the run that wrote this trace did not watch its states for a lasso") == 0);
  Trace watched;
  watched.liveness_watched = true;
  Verdict quiet = liveness(watched);
  CHECK(quiet.decided);
  CHECK(quiet.held);
  watched.events.push_back(ev::Lasso{Instant{5ms}, Instant{2ms}, 3, false});
  Verdict lasso = liveness(watched);
  CHECK_FALSE(lasso.held);
  CHECK(lasso.measured == 3);
  // A lasso in a trace cut short stands: the backlog waits whatever comes after.
  watched.cut = "its trace passed 10000000 events";
  sim::Expectation e;
  e.property = "liveness";
  std::vector<Verdict> cut = evaluate(watched, {e}, {});
  CHECK_FALSE(cut.at(0).held);
  CHECK(cut.at(0).decided);
}

// ---- each bound, met exactly, missed by one nanosecond, and kept by one ----------------------
// A measure at its bound holds; one nanosecond over fails; one under holds. A bound read with a
// tolerance, or with < for <=, fails here.

namespace {

Bound nanos(std::int64_t ns) { return Bound{Bound::Unit::time, double(ns), std::to_string(ns) + "ns"}; }

}  // namespace

TEST_CASE("latency at its bound holds, one nanosecond over it fails, one under it holds") {
  Trace t = two_groups();
  t.events.push_back(ev::Send{Instant{100ms}, 0, "/x"});
  std::size_t answered_at = t.events.size();
  answer(t, 130ms, 0);
  const std::int64_t took = Duration(30ms).count();
  Verdict at = latency(t, expect("latency", "a", nanos(took)), Costs{});
  CHECK(at.held);
  CHECK(at.measured == took);
  CHECK(latency(t, expect("latency", "a", nanos(took + 1)), Costs{}).held);
  Verdict over = latency(t, expect("latency", "a", nanos(took - 1)), Costs{});
  CHECK_FALSE(over.held);
  CHECK(over.measured == took);
  CHECK(over.first_bad == answered_at);
}

TEST_CASE("latency after another group at its bound holds, one nanosecond over it fails, one under it holds") {
  Trace t = two_groups();
  for (ClientIndex c = 1; c < 4; ++c) answer(t, 600ms, c);
  answer(t, 650ms, 0);
  const std::int64_t gap = Duration(50ms).count();
  Verdict at = latency(t, expect("latency", "a", nanos(gap), "b"), Costs{});
  CHECK(at.held);
  CHECK(at.measured == gap);
  CHECK(latency(t, expect("latency", "a", nanos(gap + 1), "b"), Costs{}).held);
  Verdict over = latency(t, expect("latency", "a", nanos(gap - 1), "b"), Costs{});
  CHECK_FALSE(over.held);
  CHECK(over.measured == gap);
}

TEST_CASE("max_gap at its bound holds, one nanosecond over it fails, one under it holds") {
  Trace t = two_groups();
  answer(t, 10ms, 1);
  answer(t, 20ms, 2);
  answer(t, 1030ms, 3);
  const std::int64_t gap = Duration(1010ms).count();
  Verdict at = max_gap(t, expect("max_gap", "b", nanos(gap)), Costs{});
  CHECK(at.held);
  CHECK(at.measured == gap);
  CHECK(max_gap(t, expect("max_gap", "b", nanos(gap + 1)), Costs{}).held);
  Verdict over = max_gap(t, expect("max_gap", "b", nanos(gap - 1)), Costs{});
  CHECK_FALSE(over.held);
  CHECK(over.measured == gap);
  CHECK(over.first_bad == t.events.size() - 1);
}

TEST_CASE("no_stranded_backlog's idle wait at its bound holds, one nanosecond over it fails, one under it holds") {
  Trace t = two_groups();
  t.events.push_back(ev::Established{Instant{0ms}, 1});
  t.events.push_back(ev::PassBegin{Instant{0ms}, 0, 1, 1s});
  t.events.push_back(ev::Events{Instant{1s}, 0, 1, {}});
  t.events.push_back(ev::Accept{Instant{1s}, 0, Door::listener, 5, 1});
  t.events.push_back(ev::RunEnd{Instant{2s}, 0, 0, 0, 0});
  const std::int64_t waited = Duration(1s).count();
  Verdict at = no_stranded_backlog(t, expect("no_stranded_backlog", "", nanos(waited)), Costs{});
  CHECK(at.held);
  CHECK(at.measured == waited);
  CHECK(no_stranded_backlog(t, expect("no_stranded_backlog", "", nanos(waited + 1)), Costs{}).held);
  Verdict over = no_stranded_backlog(t, expect("no_stranded_backlog", "", nanos(waited - 1)), Costs{});
  CHECK_FALSE(over.held);
  CHECK(over.measured == waited);
}
