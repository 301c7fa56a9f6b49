// The monitors' state (sim/monitors.hpp), digested: what it keeps of a run's past is exactly
// what the rest of the run needs to decide its property, and two pasts that differ in it digest
// apart. A search merges states on it, so a part left out is a verdict lost.
#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <set>
#include <vector>

#include "sim/monitors.hpp"

using namespace loopsim;
using namespace loopsim::sim;

namespace {

struct Values final : state::Sink {
  std::vector<std::int64_t> values;
  void add(std::int64_t v) override { values.push_back(v); }
};

// A trace of a worker's passes, written as the loop writes it: each inner vector one pass, each
// number an accept from the listener (1: it took a connection, -1: it failed).
Trace passes(const std::vector<std::vector<int>>& each, bool end_last = true) {
  Trace t;
  std::uint64_t pass = 0;
  for (std::size_t i = 0; i < each.size(); ++i) {
    t.events.push_back(ev::PassBegin{Instant{Duration(0)}, 0, ++pass, std::nullopt});
    for (int a : each[i]) t.events.push_back(ev::Accept{Instant{Duration(0)}, 0, Door::listener, a > 0 ? 7 : -1, 0});
    if (end_last || i + 1 < each.size()) t.events.push_back(ev::PassEnd{Instant{Duration(0)}, 0, pass, false, false});
  }
  return t;
}

std::vector<std::int64_t> batch_state(const Trace& trace, std::int64_t bound) {
  Monitors m(trace);
  m.watch_batch(bound);
  Values v;
  m.digest_state(v, Instant{Duration(0)});
  return v.values;
}

}  // namespace

TEST_CASE("monitors: batch_bound keeps whether a pass already took more than the bound") {
  // Two accepts in one pass, or one in each of two: the passes are over, only the past differs.
  CHECK(batch_state(passes({{1, 1}}), 1) != batch_state(passes({{1}, {1}}), 1));
  // Within the bound both are alike: the monitor keeps no more than the verdict needs.
  CHECK(batch_state(passes({{1, 1}}), 2) == batch_state(passes({{1}, {1}}), 2));
}

TEST_CASE("monitors: batch_bound keeps what the current pass took, clamped past the bound") {
  // A pass under way that took one, or none yet: its next accept decides.
  CHECK(batch_state(passes({{1}, {1}}, false), 2) != batch_state(passes({{1}, {}}, false), 2));
  // Failed accepts take nothing.
  CHECK(batch_state(passes({{1}, {-1, -1}}, false), 2) == batch_state(passes({{1}, {}}, false), 2));
  // Past the bound, how far past does not matter.
  CHECK(batch_state(passes({{1, 1, 1}}, false), 1) == batch_state(passes({{1, 1, 1, 1}}, false), 1));
}

TEST_CASE("monitors: batch_bound keeps whether anything was accepted, and leaves a shutdown's drain out") {
  CHECK(batch_state(passes({{}}), 2) != batch_state(passes({{1}}), 2));
  Trace drained = passes({{1}}, false);
  drained.events.push_back(ev::ShutdownBegin{Instant{Duration(0)}, 0});
  for (int i = 0; i < 5; ++i) drained.events.push_back(ev::Accept{Instant{Duration(0)}, 0, Door::listener, 7, 0});
  drained.events.push_back(ev::ListenerClosed{Instant{Duration(0)}, 0});
  drained.events.push_back(ev::PassEnd{Instant{Duration(0)}, 0, 1, false, false});
  CHECK(batch_state(drained, 2) == batch_state(passes({{1}}), 2));
}

namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

std::vector<std::int64_t> state_of(const Monitors& m, Duration now) {
  Values v;
  m.digest_state(v, Instant{now});
  return v.values;
}

// A worker's passes as no_spin reads them: each a wait called at `wait` (us) that returned with
// `work` calls done before it (-1: a trace without the kernel's count).
Trace waits(const std::vector<std::pair<int, int>>& each) {
  Trace t;
  std::uint64_t pass = 0;
  for (auto [wait, work] : each) {
    t.events.push_back(ev::PassBegin{Instant{microseconds(wait)}, 0, ++pass, Duration(0)});
    t.events.push_back(ev::Events{Instant{microseconds(wait)}, 0, pass, {}, work});
  }
  return t;
}

bool spin_held(const Trace& t, std::int64_t bound) {
  Monitors m(t);
  m.watch_spin(bound);
  return m.held().at(0);
}

// Two groups, one client each: "of" (client 0) and "after" (client 1).
Trace two_groups() {
  Trace t;
  t.groups = {"of", "after"};
  t.group_sizes = {1, 1};
  t.clients = {ClientLabel{0, 0, 1}, ClientLabel{1, 0, 1}};
  return t;
}

void answer(Trace& t, ClientIndex client, int ms) {
  t.events.push_back(ev::Answer{Instant{milliseconds(ms)}, client, "/", 200});
}

}  // namespace

TEST_CASE("monitors: no_spin counts idle passes by the kernel's count, or by progress where a trace has none") {
  // Passes 1 us apart: quick. Nothing done in any of them, by the kernel's count.
  CHECK_FALSE(spin_held(waits({{0, 0}, {1, 0}, {2, 0}, {3, 0}}), 2));
  CHECK(spin_held(waits({{0, 0}, {1, 0}, {2, 0}, {3, 0}}), 3));
  // The kernel counts work done: not idle, whatever events the trace shows.
  CHECK(spin_held(waits({{0, 1}, {1, 1}, {2, 1}, {3, 1}}), 2));
  // Without the count, no progress event means idle; a request's start is progress.
  CHECK_FALSE(spin_held(waits({{0, -1}, {1, -1}, {2, -1}, {3, -1}}), 2));
  Trace busy = waits({{0, -1}, {1, -1}});
  for (int i = 2; i < 4; ++i) {
    busy.events.push_back(ev::RequestBegin{Instant{microseconds(i)}, 0, 7, 0, "/"});
    busy.events.push_back(ev::PassBegin{Instant{microseconds(i)}, 0, std::uint64_t(i + 1), Duration(0)});
    busy.events.push_back(ev::Events{Instant{microseconds(i)}, 0, std::uint64_t(i + 1), {}, -1});
  }
  CHECK(spin_held(busy, 2));
  // Passes 20 ms apart blocked or slept: not a spin.
  CHECK(spin_held(waits({{0, 0}, {20'000, 0}, {40'000, 0}, {60'000, 0}}), 2));
  // Failing accepts with no wait between them.
  Trace hot;
  for (int i = 0; i < 4; ++i) hot.events.push_back(ev::Accept{Instant{microseconds(i)}, 0, Door::listener, -EMFILE, no_client});
  CHECK_FALSE(spin_held(hot, 3));
  hot.events.insert(hot.events.begin() + 2, ev::Accept{Instant{microseconds(1)}, 0, Door::listener, -EAGAIN, no_client});
  CHECK(spin_held(hot, 3));
}

TEST_CASE("monitors: no_spin keeps a pass's start only as near as spin_pass_max, and each run's length") {
  Trace t = waits({{0, 0}});
  Monitors m(t);
  m.watch_spin(5);
  // The pass in hand began at 0: 5 us ago and 8 us ago differ (the next wait may still be
  // quick), 20 us and 30 us ago do not.
  CHECK(state_of(m, microseconds(5)) != state_of(m, microseconds(8)));
  CHECK(state_of(m, microseconds(20)) == state_of(m, microseconds(30)));
  // One idle pass or two in a row.
  Trace t2 = waits({{0, 0}, {1, 0}, {2, 0}});
  Trace t1 = waits({{0, 1}, {1, 1}, {2, 0}});
  Monitors a(t1), b(t2);
  a.watch_spin(5);
  b.watch_spin(5);
  CHECK(state_of(a, microseconds(2)) != state_of(b, microseconds(2)));
  // Past the bound, how far past does not matter.
  Trace four = waits({{0, 0}, {1, 0}, {2, 0}, {3, 0}}), five = waits({{0, 0}, {1, 0}, {2, 0}, {3, 0}, {4, 0}});
  Monitors c(four), d(five);
  c.watch_spin(1);
  d.watch_spin(1);
  CHECK(state_of(c, microseconds(30)) == state_of(d, microseconds(30)));
}

TEST_CASE("monitors: latency after another group is timed from that group's last answer") {
  Trace t = two_groups();
  answer(t, 1, 10);  // after's answer at 10 ms
  answer(t, 0, 50);  // of's, 40 ms later
  Monitors m(t);
  m.watch_latency_after("of", "after", Duration(milliseconds(30)).count());
  CHECK_FALSE(m.held().at(0));
  // A later answer of `after` restarts the clock: of's last answer came before it.
  answer(t, 1, 60);
  CHECK(m.held().at(0));
  // ...and of's next answer is timed from it.
  answer(t, 0, 100);
  CHECK_FALSE(m.held().at(0));
  // Neither group answered: not held, and the digest says which one was.
  Trace none = two_groups();
  Monitors n(none);
  n.watch_latency_after("of", "after", 1);
  CHECK_FALSE(n.held().at(0));
  Trace only_after = two_groups();
  answer(only_after, 1, 1);
  Monitors o(only_after);
  o.watch_latency_after("of", "after", 1);
  CHECK(state_of(n, milliseconds(2)) != state_of(o, milliseconds(2)));
}

TEST_CASE("monitors: latency after keeps the age of after's last answer, clamped past the bound") {
  auto state_at = [](int answered_ms, int now_ms) {
    Trace t = two_groups();
    answer(t, 1, answered_ms);
    Monitors m(t);
    m.watch_latency_after("of", "after", Duration(milliseconds(30)).count());
    return state_of(m, milliseconds(now_ms));
  };
  CHECK(state_at(0, 10) != state_at(0, 20));
  CHECK(state_at(0, 40) == state_at(0, 90));
}

TEST_CASE("monitors: post_latency keeps each waiting post's age, the posts that ran, and each fault") {
  auto posts = [](const std::vector<TraceEvent>& events, const std::string& poster = "") {
    Trace t;
    t.events.assign(events.begin(), events.end());
    Monitors m(t);
    m.watch_posts(poster, Duration(milliseconds(5)).count());
    const bool held = m.held().at(0);  // a bool, not a reference into the temporary vector<bool>
    return std::pair{held, state_of(m, milliseconds(10))};
  };
  const TraceEvent post1 = ev::Post{Instant{milliseconds(1)}, 1, "p"};
  const TraceEvent post2 = ev::Post{Instant{milliseconds(2)}, 2, "q"};
  CHECK_FALSE(posts({}).first);  // no post at all: the judge says so too
  CHECK_FALSE(posts({post1}).first);  // never ran
  CHECK(posts({post1, ev::PostRun{Instant{milliseconds(3)}, 0, 1}}).first);
  CHECK_FALSE(posts({post1, ev::PostRun{Instant{milliseconds(7)}, 0, 1}}).first);  // 6 ms: late
  CHECK_FALSE(posts({post1, ev::PostRun{Instant{milliseconds(3)}, 0, 1}, ev::PostRun{Instant{milliseconds(4)}, 0, 1}}).first);
  // Another poster's post is not this monitor's.
  CHECK(posts({post1, post2, ev::PostRun{Instant{milliseconds(3)}, 0, 1}}, "p").first);
  CHECK_FALSE(posts({post1, post2, ev::PostRun{Instant{milliseconds(3)}, 0, 1}}).first);
  // What ran, and how long a waiting post has waited, are state.
  CHECK(posts({post1, ev::PostRun{Instant{milliseconds(3)}, 0, 1}}).second != posts({post1}).second);
  CHECK(posts({ev::Post{Instant{milliseconds(8)}, 1, "p"}}).second != posts({ev::Post{Instant{milliseconds(9)}, 1, "p"}}).second);
  CHECK(posts({ev::Post{Instant{milliseconds(1)}, 1, "p"}}).second == posts({ev::Post{Instant{milliseconds(2)}, 1, "p"}}).second);
}

TEST_CASE("monitors: no_stranded_backlog's time keeps the idle wait of each connection at a door") {
  Trace t;
  t.workers = 1;
  t.groups = {"c"};
  t.group_sizes = {2};
  t.clients = {ClientLabel{0, 0, 1}, ClientLabel{0, 1, 1}};
  t.events.push_back(ev::PassBegin{Instant{milliseconds(0)}, 0, 1, std::nullopt});  // blocked: idle from 0
  t.events.push_back(ev::Established{Instant{milliseconds(1)}, 0});
  Monitors m(t);
  m.watch_idle_wait(Duration(milliseconds(5)).count());
  // Idle since it reached the door: 2 ms and 3 ms differ, 6 ms and 9 ms do not.
  CHECK(state_of(m, milliseconds(3)) != state_of(m, milliseconds(4)));
  CHECK(state_of(m, milliseconds(7)) == state_of(m, milliseconds(10)));
  CHECK(m.held().at(0));
  // The loop wakes at 2 ms and works: the wait so far is 1 ms, however long the work takes.
  t.events.push_back(ev::Events{Instant{milliseconds(2)}, 0, 1, {3}, 1});
  Monitors busy(t);
  busy.watch_idle_wait(Duration(milliseconds(5)).count());
  CHECK(state_of(busy, milliseconds(3)) == state_of(busy, milliseconds(9)));
  // Accepted after 6 ms idle: too long.
  Trace late;
  late.workers = 1;
  late.groups = t.groups;
  late.group_sizes = t.group_sizes;
  late.clients = t.clients;
  late.events.push_back(ev::PassBegin{Instant{milliseconds(0)}, 0, 1, std::nullopt});
  late.events.push_back(ev::Established{Instant{milliseconds(1)}, 0});
  late.events.push_back(ev::Events{Instant{milliseconds(7)}, 0, 1, {3}, 0});
  late.events.push_back(ev::Accept{Instant{milliseconds(7)}, 0, Door::listener, 9, 0});
  Monitors lm(late);
  lm.watch_idle_wait(Duration(milliseconds(5)).count());
  CHECK_FALSE(lm.held().at(0));
}

TEST_CASE("monitors: each part of no_spin's, post_latency's and no_stranded_backlog's state tells two pasts apart") {
  auto spin = [](const std::vector<TraceEvent>& events) {
    Trace t;
    t.events.assign(events.begin(), events.end());
    Monitors m(t);
    m.watch_spin(5);
    return state_of(m, microseconds(100));
  };
  // The next wait came 5 us or 50 us after the pass's own: only the first can be quick. Both
  // times are long past at 100 us.
  CHECK(spin({ev::PassBegin{Instant{Duration(0)}, 0, 1, Duration(0)}, ev::Events{Instant{Duration(0)}, 0, 1, {}, 0},
              ev::PassBegin{Instant{microseconds(5)}, 0, 2, Duration(0)}}) !=
        spin({ev::PassBegin{Instant{Duration(0)}, 0, 1, Duration(0)}, ev::Events{Instant{Duration(0)}, 0, 1, {}, 0},
              ev::PassBegin{Instant{microseconds(50)}, 0, 2, Duration(0)}}));
  // A failing accept, or one that found nothing: the next failure's run is two long, or one.
  CHECK(spin({ev::Accept{Instant{Duration(0)}, 0, Door::listener, -EMFILE, no_client}}) !=
        spin({ev::Accept{Instant{Duration(0)}, 0, Door::listener, -EAGAIN, no_client}}));

  auto posts = [](const std::vector<TraceEvent>& events) {
    Trace t;
    t.events.assign(events.begin(), events.end());
    Monitors m(t);
    m.watch_posts("", Duration(milliseconds(5)).count());
    const bool held = m.held().at(0);
    return std::pair{held, state_of(m, milliseconds(10))};
  };
  // Which post ran: a second run of post 1 is a fault after the first, not after post 2's.
  CHECK(posts({ev::Post{Instant{Duration(0)}, 1, "p"}, ev::PostRun{Instant{Duration(0)}, 0, 1}}).second !=
        posts({ev::Post{Instant{Duration(0)}, 2, "p"}, ev::PostRun{Instant{Duration(0)}, 0, 2}}).second);
  // Posted again after it ran, as the judge reads it: the post ran.
  CHECK(posts({ev::Post{Instant{Duration(0)}, 1, "p"}, ev::PostRun{Instant{Duration(0)}, 0, 1}, ev::Post{Instant{Duration(0)}, 1, "p"}}).first);

  auto idle = [](std::optional<Duration> timeout) {
    Trace t;
    t.workers = 1;
    t.events.push_back(ev::PassBegin{Instant{Duration(0)}, 0, 1, timeout});
    Monitors m(t);
    m.watch_idle_wait(Duration(milliseconds(5)).count());
    return state_of(m, milliseconds(1));
  };
  // A worker blocked in its wait, or polling: a connection that arrives now waits idle, or not.
  CHECK(idle(std::nullopt) != idle(Duration(0)));
}

// The property the search relies on: two pasts a monitor digests alike are judged alike,
// whatever follows. Checked by brute force over every short history from a small alphabet of
// events (and ticks of the clock), against every short continuation: a part of the state the
// digest leaves out shows as two histories that digest alike and are judged apart.
namespace {

using Letter = std::function<void(Trace&, Duration&)>;

Letter at_now(std::function<TraceEvent(Duration)> make) {
  return [make](Trace& t, Duration& now) { t.events.push_back(make(now)); };
}
Letter tick(Duration step) {
  return [step](Trace&, Duration& now) { now += step; };
}

struct Congruence {
  std::function<void(Trace&)> setup;
  std::function<void(Monitors&)> watch;
  std::vector<Letter> letters;
#if defined(__SANITIZE_ADDRESS__)
  // Under the sanitizers (unoptimized, every allocation checked) the continuations are one
  // event shorter: the full check runs in the release build.
  int prefix = 4, suffix = 2;
#else
  int prefix = 4, suffix = 3;
#endif
  int merged = 0;  // histories that digested like an earlier one (non-vacuity)

  // The history `word`, run: its trace, and the clock at its end.
  Trace trace(const std::vector<int>& word, Duration& now) const {
    Trace t;
    setup(t);
    for (int letter : word) letters[std::size_t(letter)](t, now);
    return t;
  }
  std::vector<std::int64_t> digest(const std::vector<int>& word) const {
    Duration now{0};
    Trace t = trace(word, now);
    Monitors m(t);
    watch(m);
    return state_of(m, now);
  }
  // The verdicts after `word` and each continuation of it of up to `suffix` events, in the
  // order continuations() lists them: one trace, grown and cut back as the continuations go.
  std::vector<std::vector<bool>> futures(const std::vector<int>& word) const {
    Duration now{0};
    Trace t = trace(word, now);
    std::vector<std::vector<bool>> out;
    grow(t, now, suffix, out);
    return out;
  }
  void grow(Trace& t, Duration now, int left, std::vector<std::vector<bool>>& out) const {
    Monitors m(t);
    watch(m);
    out.push_back(m.held());
    if (left == 0) return;
    const std::size_t size = t.events.size();
    for (const Letter& letter : letters) {
      Duration later = now;
      letter(t, later);
      grow(t, later, left - 1, out);
      t.events.resize(size);
    }
  }
  std::vector<std::vector<int>> continuations() const {
    std::vector<std::vector<int>> out;
    std::vector<int> word;
    std::function<void(int)> walk = [&](int left) {
      out.push_back(word);
      if (left == 0) return;
      for (std::size_t l = 0; l < letters.size(); ++l) {
        word.push_back(int(l));
        walk(left - 1);
        word.pop_back();
      }
    };
    walk(suffix);
    return out;
  }
  static std::vector<std::vector<int>> words(std::size_t alphabet, int most) {
    std::vector<std::vector<int>> out{{}};
    for (std::size_t from = 0; from < out.size(); ++from) {
      if (int(out[from].size()) == most) continue;
      for (std::size_t l = 0; l < alphabet; ++l) {
        out.push_back(out[from]);
        out.back().push_back(int(l));
      }
    }
    return out;
  }
  void check() {
    const auto prefixes = words(letters.size(), prefix);
    const auto suffixes = continuations();
    std::map<std::vector<std::int64_t>, std::vector<int>> first;  // digest -> the first history
    std::map<std::vector<int>, std::vector<std::vector<bool>>> judged;  // its futures, judged once
    for (const std::vector<int>& p : prefixes) {
      auto [it, fresh] = first.emplace(digest(p), p);
      if (fresh) continue;
      ++merged;
      auto known = judged.find(it->second);
      if (known == judged.end()) known = judged.emplace(it->second, futures(it->second)).first;
      const std::vector<std::vector<bool>> other = futures(p);
      if (other.size() != suffixes.size()) FAIL("futures listed apart: " << other.size() << " and " << suffixes.size());
      for (std::size_t s = 0; s < suffixes.size(); ++s) {
        for (std::size_t i = 0; i < other[s].size(); ++i) seen[i].insert(other[s][i]);
        if (known->second[s] == other[s]) continue;
        auto spell = [](const std::vector<int>& w) {
          std::string out;
          for (int l : w) out += std::to_string(l) + " ";
          return out;
        };
        FAIL("histories " << spell(it->second) << "and " << spell(p) << "digest alike, and are judged apart after "
                          << spell(suffixes[s]));
      }
    }
    CHECK(merged > 0);
    // Each verdict both held and broke among the futures compared: the check is not vacuous.
    for (const auto& [monitor, values] : seen) {
      INFO("monitor " << monitor);
      CHECK(values.size() == 2);
    }
    CHECK(!seen.empty());
  }
  std::map<std::size_t, std::set<bool>> seen;  // by monitor, in the order watched
};

void one_client_each(Trace& t, int groups) {
  for (int g = 0; g < groups; ++g) {
    t.groups.push_back("g" + std::to_string(g));
    t.group_sizes.push_back(1);
    t.clients.push_back(ClientLabel{g, 0, 1});
  }
}

}  // namespace

TEST_CASE("monitors: no_spin's digest is a congruence of its verdict") {
  Congruence c;
  c.setup = [](Trace& t) { t.listener_fd = 3; };
  std::int64_t bound = GENERATE(0, 1);
  c.watch = [bound](Monitors& m) { m.watch_spin(bound); };
  c.letters = {
      at_now([](Duration n) -> TraceEvent { return ev::PassBegin{Instant{n}, 0, 1, Duration(0)}; }),
      at_now([](Duration n) -> TraceEvent { return ev::Events{Instant{n}, 0, 1, {}, 0}; }),
      at_now([](Duration n) -> TraceEvent { return ev::Events{Instant{n}, 0, 1, {}, -1}; }),
      at_now([](Duration n) -> TraceEvent { return ev::Accept{Instant{n}, 0, Door::listener, -EMFILE, no_client}; }),
      at_now([](Duration n) -> TraceEvent { return ev::RequestBegin{Instant{n}, 0, 7, 0, "/"}; }),
      tick(microseconds(6)),
  };
  c.check();
}

TEST_CASE("monitors: post_latency's digest is a congruence of its verdict") {
  Congruence c;
  c.setup = [](Trace&) {};
  c.watch = [](Monitors& m) { m.watch_posts("p", Duration(milliseconds(5)).count()); };
  c.letters = {
      at_now([](Duration n) -> TraceEvent { return ev::Post{Instant{n}, 1, "p"}; }),
      at_now([](Duration n) -> TraceEvent { return ev::Post{Instant{n}, 2, "q"}; }),
      at_now([](Duration n) -> TraceEvent { return ev::Post{Instant{n}, 3, "p"}; }),
      at_now([](Duration n) -> TraceEvent { return ev::PostRun{Instant{n}, 0, 1}; }),
      at_now([](Duration n) -> TraceEvent { return ev::PostRun{Instant{n}, 0, 2}; }),
      at_now([](Duration n) -> TraceEvent { return ev::PostRun{Instant{n}, 0, 3}; }),
      tick(milliseconds(3)),
  };
  c.check();
}

TEST_CASE("monitors: latency's digests, with and without after, and max_gap's, are congruences of their verdicts") {
  Congruence c;
  c.setup = [](Trace& t) { one_client_each(t, 2); };
  c.watch = [](Monitors& m) {
    m.watch_latency("g0", Duration(milliseconds(5)).count());
    m.watch_latency_after("g0", "g1", Duration(milliseconds(5)).count());
    m.watch_gap("g0", Duration(milliseconds(5)).count());
  };
  c.letters = {
      at_now([](Duration n) -> TraceEvent { return ev::Send{Instant{n}, 0, "/"}; }),
      at_now([](Duration n) -> TraceEvent { return ev::Answer{Instant{n}, 0, "/", 200}; }),
      at_now([](Duration n) -> TraceEvent { return ev::Answer{Instant{n}, 1, "/", 200}; }),
      tick(milliseconds(3)),
  };
  c.prefix = 5;
  c.check();
}

TEST_CASE("monitors: batch_bound's digest is a congruence of its verdict") {
  Congruence c;
  c.setup = [](Trace& t) { one_client_each(t, 1); };
  c.watch = [](Monitors& m) { m.watch_batch(1); };
  c.letters = {
      at_now([](Duration n) -> TraceEvent { return ev::PassBegin{Instant{n}, 0, 1, std::nullopt}; }),
      at_now([](Duration n) -> TraceEvent { return ev::Accept{Instant{n}, 0, Door::listener, 9, 0}; }),
      at_now([](Duration n) -> TraceEvent { return ev::Accept{Instant{n}, 0, Door::handoff, 9, 0}; }),
      at_now([](Duration n) -> TraceEvent { return ev::ShutdownBegin{Instant{n}, 0}; }),
      at_now([](Duration n) -> TraceEvent { return ev::ListenerClosed{Instant{n}, 0}; }),
  };
  c.check();
}

TEST_CASE("monitors: no_stranded_backlog's digest is a congruence of its verdict") {
  Congruence c;
  c.setup = [](Trace& t) {
    one_client_each(t, 2);
    t.workers = 1;
  };
  c.watch = [](Monitors& m) { m.watch_idle_wait(Duration(milliseconds(2)).count()); };
  c.letters = {
      at_now([](Duration n) -> TraceEvent { return ev::PassBegin{Instant{n}, 0, 1, std::nullopt}; }),
      at_now([](Duration n) -> TraceEvent { return ev::Events{Instant{n}, 0, 1, {3}, 1}; }),
      at_now([](Duration n) -> TraceEvent { return ev::Established{Instant{n}, 0}; }),
      at_now([](Duration n) -> TraceEvent { return ev::Handoff{Instant{n}, 0, 0, 1}; }),
      at_now([](Duration n) -> TraceEvent { return ev::Accept{Instant{n}, 0, Door::listener, 9, 0}; }),
      at_now([](Duration n) -> TraceEvent { return ev::Accept{Instant{n}, 0, Door::handoff, 9, 1}; }),
      tick(milliseconds(3)),
  };
  c.check();
}

TEST_CASE("monitors: max_gap keeps whether one answer came or more, which the judge reads with what the end leaves unanswered") {
  // One answer and a request lost: the gap after it never closed. Two and one lost: the judge
  // measures the gap between the two. The last answer is as old in both.
  auto gap_state = [](int answers) {
    Trace t;
    one_client_each(t, 1);
    for (int i = 0; i < answers; ++i) answer(t, 0, 1);
    Monitors m(t);
    m.watch_gap("g0", Duration(milliseconds(5)).count());
    return state_of(m, milliseconds(2));
  };
  CHECK(gap_state(1) != gap_state(2));
  CHECK(gap_state(2) == gap_state(3));
}

// shutdown_clean's monitor is its judge's own scan (sim/shutdown_scan.hpp); its digest is what
// the rest of a run needs of it.
TEST_CASE("monitors: shutdown_clean's digest is a congruence of its verdict, as the drain goes") {
  Congruence c;
  c.setup = [](Trace& t) { one_client_each(t, 1); };
  std::optional<Duration> max = GENERATE(std::optional<Duration>(), std::optional<Duration>(milliseconds(5)));
  c.watch = [max](Monitors& m) { m.watch_shutdown(max); };
  c.letters = {
      at_now([](Duration n) -> TraceEvent { return ev::ShutdownAsked{Instant{n}}; }),
      at_now([](Duration n) -> TraceEvent { return ev::ShutdownBegin{Instant{n}, 0}; }),
      at_now([](Duration n) -> TraceEvent { return ev::ListenerClosed{Instant{n}, 0}; }),
      at_now([](Duration n) -> TraceEvent { return ev::LoopExit{Instant{n}, 0, 0}; }),
      at_now([](Duration n) -> TraceEvent { return ev::LoopExit{Instant{n}, 0, 1}; }),
      at_now([](Duration n) -> TraceEvent { return ev::RequestBegin{Instant{n}, 0, 7, 0, "/"}; }),
      at_now([](Duration n) -> TraceEvent { return ev::PassEnd{Instant{n}, 0, 1, true, false}; }),
      tick(milliseconds(3)),
  };
  c.check();
}

TEST_CASE("monitors: shutdown_clean's digest is a congruence of its verdict, as connections queue and are reset") {
  Congruence c;
  c.setup = [](Trace& t) {
    one_client_each(t, 2);
    t.events.push_back(ev::ShutdownBegin{Instant{Duration(0)}, 0});
  };
  c.watch = [](Monitors& m) { m.watch_shutdown(std::nullopt); };
  c.letters = {
      at_now([](Duration n) -> TraceEvent { return ev::ListenerClosed{Instant{n}, 0}; }),
      at_now([](Duration n) -> TraceEvent { return ev::LoopExit{Instant{n}, 0, 0}; }),
      at_now([](Duration n) -> TraceEvent { return ev::Established{Instant{n}, 0}; }),
      at_now([](Duration n) -> TraceEvent { return ev::Accept{Instant{n}, 0, Door::listener, 9, 0}; }),
      at_now([](Duration n) -> TraceEvent { return ev::Refused{Instant{n}, 0, ECONNRESET}; }),
      at_now([](Duration n) -> TraceEvent { return ev::Accept{Instant{n}, 0, Door::listener, -ECONNABORTED, no_client}; }),
      at_now([](Duration n) -> TraceEvent { return ev::BatchEnd{Instant{n}, 0, Door::listener, 0, BatchStop::emfile, false}; }),
  };
  c.check();
}

TEST_CASE("monitors: shutdown_clean's digest is a congruence of its verdict, as hand-offs go between workers") {
  Congruence c;
  c.setup = [](Trace& t) {
    one_client_each(t, 1);
    t.workers = 2;
    t.events.push_back(ev::ShutdownBegin{Instant{Duration(0)}, 0});
    t.events.push_back(ev::ShutdownBegin{Instant{Duration(0)}, 1});
  };
  c.watch = [](Monitors& m) { m.watch_shutdown(std::nullopt); };
  c.letters = {
      at_now([](Duration n) -> TraceEvent { return ev::ListenerClosed{Instant{n}, 0}; }),
      at_now([](Duration n) -> TraceEvent { return ev::ListenerClosed{Instant{n}, 1}; }),
      at_now([](Duration n) -> TraceEvent { return ev::LoopExit{Instant{n}, 0, 0}; }),
      at_now([](Duration n) -> TraceEvent { return ev::LoopExit{Instant{n}, 1, 0}; }),
      at_now([](Duration n) -> TraceEvent { return ev::Handoff{Instant{n}, 0, 1, 0}; }),
      at_now([](Duration n) -> TraceEvent { return ev::Handoff{Instant{n}, 1, 0, 0}; }),
      at_now([](Duration n) -> TraceEvent { return ev::Accept{Instant{n}, 1, Door::handoff, 9, 0}; }),
      at_now([](Duration n) -> TraceEvent { return ev::Accept{Instant{n}, 0, Door::handoff, 9, 0}; }),
  };
  c.check();
}

TEST_CASE("monitors: shutdown_clean's digest names the worker each part is about") {
  auto began = [](int worker) {
    Trace t;
    t.workers = 2;
    t.events.push_back(ev::ShutdownBegin{Instant{Duration(0)}, worker});
    Monitors m(t);
    m.watch_shutdown(std::nullopt);
    return state_of(m, Duration(0));
  };
  CHECK(began(0) != began(1));
}
