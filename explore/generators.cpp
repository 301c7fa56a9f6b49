// The generators of `loopsim generate`: scenario descriptions drawn from the whole format.
#include <algorithm>
#include <vector>

#include "explore/generate.hpp"
#include "realloop/loop.hpp"
#include "scenario/scenario.hpp"

namespace loopsim::explore {

using Route = GenRequest::Route;
using Kind = GenFault::Kind;

// Generators. They are tuples of independent picks mapped to structs (never gen::exec, whose
// shrinking fixes every pick before the last one it shrank), so that shrinking comes back to
// each field until none shrinks further. Every pick shrinks towards its first alternative or
// its lower end: the default, or the plainest case, is written first.

namespace {

namespace gen = rc::gen;

// One of `values`, each as likely; shrinks towards the first (gen::element does not shrink).
template <class T>
rc::Gen<T> pick(std::initializer_list<T> values) {
  std::vector<T> all(values);
  return gen::map(gen::inRange<std::size_t>(0, all.size()), [all](std::size_t i) { return all[i]; });
}

// Up to `most` of `element`, as many as `count` draws. The length is drawn apart from the
// elements: gen::resize would shrink the size every element is drawn at, and RapidCheck scales
// gen::inRange by the size. Shrinking drops elements from the end, and simplifies each.
template <class T>
rc::Gen<std::vector<T>> some(rc::Gen<int> count, std::size_t most, rc::Gen<T> element) {
  return gen::map(gen::pair(count, gen::container<std::vector<T>>(most, element)), [](auto p) {
    p.second.resize(std::min(p.second.size(), std::size_t(std::max(0, p.first))));
    return p.second;
  });
}

// True one time in n; shrinks to false.
rc::Gen<bool> rare(int n) {
  return gen::map(gen::inRange(0, n), [n](int v) { return v == n - 1; });
}

// A request's `at_ms` is drawn as the time after the one before (0 first: pipelined, R8).
rc::Gen<GenRequest> request_gen() {
  return gen::map(gen::tuple(pick({0, 0, 5, 40, 150, 400}),
                             pick({Route::fast, Route::hello, Route::slow_ms, Route::slow_us}),
                             gen::inRange(1, 31), gen::inRange(1, 800)),
                  [](const std::tuple<int, Route, int, int>& t) {
                    auto [after, route, slow_ms, slow_us] = t;
                    int amount = route == Route::slow_ms ? slow_ms : route == Route::slow_us ? slow_us : 0;
                    return GenRequest{after, route, amount};
                  });
}

// Mostly a plain client on a plain network; each twist is drawn apart and shrinks away.
rc::Gen<GenWire> wire_gen() {
  return gen::map(gen::tuple(rare(3), pick({0, 0, 0, 1, 20}), pick({0, 0, 5}), rare(4), pick({0, 0, 0, 100}),
                             pick({0, 0, 0, 2000})),
                  [](const std::tuple<bool, int, int, bool, int, int>& t) {
                    auto [poisson, rtt_ms, jitter_ms, half_close, body, read_rate] = t;
                    return GenWire{poisson, rtt_ms, jitter_ms, half_close, body, read_rate};
                  });
}

// A pipelined burst ahead of a group's requests: this many /fast requests, all sent when the
// connection is made. Mostly none; else sizes around and past the reads servers make (about 37
// bytes a request, more with a body: 14 pass 512 bytes, 120 pass 4 KiB, 900 pass 32 KiB, and
// with a 100-byte body 64 KiB), where a loop that reads once per edge leaves the rest unread.
// With the group's own requests, at most 903 on a connection: under the 1,000 after which nginx
// closes a keep-alive connection (keepalive_requests), as RFC 9112 lets a server do.
// Drawn for every group; a target's is sent over a network without delay (render.cpp).
rc::Gen<int> burst_gen() { return pick({0, 0, 0, 0, 0, 0, 0, 0, 14, 20, 60, 120, 450, 900}); }

rc::Gen<GenGroup> group_gen() {
  // Up to 3 requests; none is a holder that connects and stays.
  auto requests = some(pick({1, 1, 2, 3, 0}), 3, request_gen());
  return gen::map(gen::tuple(gen::inRange(1, 16), pick({0, 0, 10, 50, 100, 300, 700}),
                             pick({0, 0, 100, 1000, 20000}), gen::arbitrary<bool>(), requests, wire_gen(), burst_gen()),
                  [](const std::tuple<int, int, int, bool, std::vector<GenRequest>, GenWire, int>& t) {
                    auto [count, connect_ms, rate, keep_alive, requests, wire, burst] = t;
                    int at = connect_ms;
                    for (GenRequest& r : requests) at = r.at_ms = at + r.at_ms;
                    return GenGroup{count, connect_ms, rate, keep_alive, requests, wire, burst};
                  });
}

rc::Gen<GenFault> fault_gen() {
  auto what = gen::tuple(pick({Kind::accept_nth, Kind::accept_window, Kind::rlimit, Kind::reset}),
                         pick({EMFILE, ENFILE, ENOBUFS, ECONNABORTED}),
                         pick({1, 20, 60, 150, 400, 900}));  // never at 0: threads start then
  auto how = gen::tuple(gen::inRange(1, 40), pick({50, 10, 200, 600}), pick({1, 2, 3, 0}),
                        gen::inRange(-2, 24), gen::inRange(0, 5), pick({1, 2, 0}));
  return gen::map(gen::pair(what, how), [](const auto& p) {
    auto [kind, error, at_ms] = p.first;
    auto [nth, window_ms, window_count, rlimit_delta, group, reset_count] = p.second;
    GenFault f;
    f.kind = kind;
    f.error = error;
    f.at_ms = at_ms;
    if (kind == Kind::accept_nth) f.nth = nth;
    if (kind == Kind::accept_window) f.until_ms = at_ms + window_ms, f.count = window_count;
    if (kind == Kind::rlimit) f.rlimit_delta = rlimit_delta;
    if (kind == Kind::reset) f.group = group, f.count = reset_count;
    return f;
  });
}

rc::Gen<GenTrouble> trouble_gen() {
  using K = GenTrouble::Kind;
  return gen::map(gen::tuple(pick({K::none, K::none, K::none, K::none, K::none, K::none, K::reset, K::accept_window, K::sigterm}),
                             pick({1, 20, 60, 150, 400}), pick({10, 50, 200}), pick({EMFILE, ENFILE, ENOBUFS}),
                             gen::inRange(0, 5), gen::inRange(1, 4)),
                  [](const std::tuple<K, int, int, int, int, int>& t) {
                    auto [kind, at_ms, window_ms, error, group, count] = t;
                    return GenTrouble{kind, at_ms, window_ms, error, group, count};
                  });
}

// Mostly none; else answers past the send buffers drawn (64 B to 1 KiB) and the default 16 KiB.
rc::Gen<GenLarge> large_gen() {
  return gen::map(gen::pair(pick({0, 0, 0, 0, 0, 0, 20000, 100000}), gen::inRange(0, 5)),
                  [](const std::pair<int, int>& p) { return GenLarge{p.first, p.second}; });
}

rc::Gen<GenPoster> poster_gen() {
  return gen::map(gen::tuple(pick({0, 5, 30, 100, 500}), pick({0, 10, 200, 2000}),
                             gen::inRange(1, 4), pick({0, 1, 20, 100}), gen::inRange(0, 3)),
                  [](const std::tuple<int, int, int, int, int>& t) {
                    auto [at_ms, cost_us, count, every_ms, worker] = t;
                    return GenPoster{at_ms, cost_us, count, every_ms, worker};
                  });
}

// The kernel's and the loop's settings, drawn into a description.
rc::Gen<Description> settings_gen() {
  using Handles = Description::Handles;
  auto kernel = gen::tuple(gen::inRange(1, 1000), gen::arbitrary<bool>(),
                           pick({0, 1, 2, 3, 5, 8, 12, 20, 40}), pick({0, 0, 64, 256, 1024}),
                           pick({0, 0, 32, 128, 1024}));
  auto batches = gen::tuple(pick({16, 1, 2, 3, 4, 8, 0}), pick({16, 1, 2, 0}),
                            pick({8, 0, 1, 2, 32}), pick({0, 0, 1, 2, 4}));
  auto threads = gen::tuple(pick({1, 1, 2, 3}), gen::arbitrary<bool>(), gen::inRange(1, 4), rare(6));
  auto capacity = gen::tuple(pick({0, 0, 1, 2, 3, 5, 8, 16}),
                             pick({Handles::rlimit, Handles::fixed, Handles::grow}), gen::inRange(1, 20),
                             gen::arbitrary<bool>(), pick({100, 10, 50, 300}), pick({1000, 100, 250}));
  return gen::map(gen::tuple(kernel, batches, threads, capacity), [](const auto& t) {
    Description d;
    const auto& [k, b, w, c] = t;
    std::tie(d.seed, d.kqueue, d.rlimit_room, d.send_buffer, d.receive_buffer) = k;
    std::tie(d.accept_batch, d.yield_batch, d.drain_chunk, d.max_events) = b;
    std::tie(d.workers, d.pool, d.pool_threads, d.inverted) = w;
    int handle_pairs = 0;
    std::tie(d.max_connections, d.handles, handle_pairs, d.refuse, d.emfile_backoff_ms, d.idle_timeout_ms) = c;
    d.max_handles = d.handles == Handles::fixed ? 2 * handle_pairs : d.max_handles;
    if (!d.pool) d.pool_threads = LoopConfig{}.pool_threads;
    return d;
  });
}

}  // namespace

rc::Gen<Description> description_gen() {
  auto groups = some(gen::inRange(1, 6), 5, group_gen());
  auto faults = some(gen::inRange(0, 4), 3, fault_gen());
  auto posters = some(gen::inRange(0, 3), 2, poster_gen());
  auto shutdown = gen::tuple(rare(4), pick({0, 10, 100, 300, 800, 1500}));
  // Drawn last, so that the rest draws as it did before it was added.
  return gen::map(gen::tuple(settings_gen(), groups, faults, posters, shutdown, trouble_gen(), large_gen()), [](const auto& t) {
    auto [d, groups, faults, posters, shutdown, trouble, large] = t;
    if (large.bytes > 0 && !groups.empty()) {
      GenGroup& g = groups[std::size_t(large.group) % groups.size()];
      if (!g.requests.empty()) {
        g.requests.front().route = Route::bytes;
        g.requests.front().amount = large.bytes;
        if (g.wire.read_rate == 0) g.wire.read_rate = 20000;  // 200 bytes every 10 ms
      }
    }
    d.large = large;
    d.groups = groups;
    d.faults = faults;
    d.posters = posters;
    if (std::get<0>(shutdown)) d.shutdown_ms = std::get<1>(shutdown);
    d.trouble = trouble;
    return d;
  });
}

int clients_of(const Description& d) {
  int n = 0;
  for (const GenGroup& g : d.groups) n += g.count;
  return n;
}

int own_descriptors(const sim::Scenario& s) {
  const int loops = LoopLayout::of(s.loop, s.workers).loops;  // the workers and the accept thread
  int pool = s.loop.mode == HandlerMode::pool ? 2 * s.loop.pool_threads : 0;
  int inverted = s.loop.inverted ? loops : 0;
  return 3 + 1 + 2 * loops + pool + inverted;
}

}  // namespace loopsim::explore
