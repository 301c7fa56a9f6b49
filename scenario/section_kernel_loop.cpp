// The scenario reader's [kernel] and [loop] sections: the simulated kernel's knobs and the
// built-in loop's rules.
#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "scenario/properties.hpp"
#include "scenario/scenario.hpp"
#include "scenario/scenario_reading.hpp"
#include "scenario/units.hpp"

namespace loopsim::sim::reading {

constexpr std::string_view poller_names[] = {"epoll", "kqueue"};
constexpr PollerFlavour poller_values[] = {PollerFlavour::epoll, PollerFlavour::kqueue};
constexpr std::string_view mode_names[] = {"loop-only", "pool"};
constexpr HandlerMode mode_values[] = {HandlerMode::loop_only, HandlerMode::pool};
constexpr std::string_view handle_policy_names[] = {"fixed", "rlimit", "grow"};  // HandlePolicy
constexpr std::string_view on_full_names[] = {"refuse", "backpressure"};         // OnFull

constexpr std::int64_t buffer_max = 1 << 30;
constexpr std::size_t slack_choices_max = 16;

// One duration, or a set of them (each sleep's slack is then a choice point).
std::vector<Duration> read_slack(C c, N n, K k) {
  if (!n.is_array()) return {read_duration(c, n, k)};
  std::vector<Duration> out;
  for (const toml::node& item : as_array(c, n, k)) out.push_back(read_duration(c, item, k));
  if (out.empty() || out.size() > slack_choices_max)
    c.fail(n.source(), cat(k, " takes 1 to ", slack_choices_max, " durations"),
           R"(e.g. timer_slack = ["0us", "50us"])");
  return out;
}

const Field<Scenario> kernel_fields[] = {
    {"poller",
     [](C c, N n, K k, auto& s) {
       s.kernel.poller = poller_values[read_choice(c, n, k, poller_names)];
     }},
    {"listen_backlog",
     [](C c, N n, K k, auto& s) { s.kernel.listen_backlog = int(read_integer(c, n, k, 0)); }},
    {"somaxconn",
     [](C c, N n, K k, auto& s) { s.kernel.somaxconn = int(read_integer(c, n, k, 0)); }},
    {"rlimit_nofile",
     [](C c, N n, K k, auto& s) { s.kernel.rlimit_nofile = int(read_integer(c, n, k, 1)); }},
    {"file_max", [](C c, N n, K k, auto& s) { s.kernel.file_max = int(read_integer(c, n, k, 1)); }},
    {"abort_on_overflow",
     [](C c, N n, K k, auto& s) { s.kernel.abort_on_overflow = read_bool(c, n, k); }},
    {"timer_slack", [](C c, N n, K k, auto& s) { s.kernel.timer_slack = read_slack(c, n, k); }},
    {"send_buffer",
     [](C c, N n, K k, auto& s) { s.kernel.send_buffer = read_integer(c, n, k, 1, buffer_max); }},
    {"receive_buffer",
     [](C c, N n, K k, auto& s) { s.kernel.receive_buffer = read_integer(c, n, k, 1, buffer_max); }},
    {"send_buffer_max",
     [](C c, N n, K k, auto& s) { s.kernel.send_buffer_max = read_integer(c, n, k, 0, buffer_max); }},
};
const Section<Scenario> kernel_section{"kernel", "[kernel]", kernel_fields};

const Field<Scenario> loop_fields[] = {
    {"mode",
     [](C c, N n, K k, auto& s) { s.loop.mode = mode_values[read_choice(c, n, k, mode_names)]; }},
    {"workers", [](C c, N n, K k, auto& s) { s.workers = int(read_integer(c, n, k, 1, workers_max)); }},
    {"accept_batch",
     [](C c, N n, K k, auto& s) { s.loop.accept_batch = int(read_integer(c, n, k, 0)); }},
    {"accept_after_events",
     [](C c, N n, K k, auto& s) { s.loop.accept_after_events = read_bool(c, n, k); }},
    {"owe_unfinished_batch",
     [](C c, N n, K k, auto& s) { s.loop.owe_unfinished_batch = read_bool(c, n, k); }},
    {"nonblocking_wait_when_owed",
     [](C c, N n, K k, auto& s) { s.loop.nonblocking_wait_when_owed = read_bool(c, n, k); }},
    {"idle_timeout",
     [](C c, N n, K k, auto& s) { s.loop.idle_timeout = read_duration(c, n, k, true); }},
    {"max_events",
     [](C c, N n, K k, auto& s) { s.loop.max_events = int(read_integer(c, n, k, 1, max_events_max)); }},
    {"max_connections",
     [](C c, N n, K k, auto& s) { s.loop.max_connections = int(read_integer(c, n, k, 1)); }},
    {"pool_threads",
     [](C c, N n, K k, auto& s) { s.loop.pool_threads = int(read_integer(c, n, k, 1, workers_max)); }},
    {"owe_after_emfile", [](C c, N n, K k, auto& s) { s.loop.owe_after_emfile = read_bool(c, n, k); }},
    {"emfile_retry", [](C c, N n, K k, auto& s) { s.loop.emfile_retry = read_bool(c, n, k); }},
    {"emfile_backoff",
     [](C c, N n, K k, auto& s) { s.loop.emfile_backoff = read_duration(c, n, k, true); }},
    {"shutdown_clears_owed",
     [](C c, N n, K k, auto& s) { s.loop.shutdown_clears_owed = read_bool(c, n, k); }},
    {"shutdown_admits_handoffs",
     [](C c, N n, K k, auto& s) { s.loop.shutdown_admits_handoffs = read_bool(c, n, k); }},
    {"shutdown_serves_after_close",
     [](C c, N n, K k, auto& s) { s.loop.shutdown_serves_after_close = read_bool(c, n, k); }},
    {"shutdown_admits_past_capacity",
     [](C c, N n, K k, auto& s) { s.loop.shutdown_admits_past_capacity = read_bool(c, n, k); }},
    {"shutdown_before_batches",
     [](C c, N n, K k, auto& s) { s.loop.shutdown_before_batches = read_bool(c, n, k); }},
    {"owe_when_room", [](C c, N n, K k, auto& s) { s.loop.owe_when_room = read_bool(c, n, k); }},
    {"enobufs_retry", [](C c, N n, K k, auto& s) { s.loop.enobufs_retry = read_bool(c, n, k); }},
    {"inverted", [](C c, N n, K k, auto& s) { s.loop.inverted = read_bool(c, n, k); }},
    {"inverted_owed_passes",
     [](C c, N n, K k, auto& s) { s.loop.inverted_owed_passes = read_bool(c, n, k); }},
    {"inverted_owes_turns",
     [](C c, N n, K k, auto& s) { s.loop.inverted_owes_turns = read_bool(c, n, k); }},
    {"drain_chunk", [](C c, N n, K k, auto& s) { s.loop.drain_chunk = int(read_integer(c, n, k, 0)); }},
    {"yield_batch", [](C c, N n, K k, auto& s) { s.loop.yield_batch = int(read_integer(c, n, k, 0)); }},
    {"max_handles", [](C c, N n, K k, auto& s) { s.loop.max_handles = int(read_integer(c, n, k, 2)); }},
    {"handle_policy",
     [](C c, N n, K k, auto& s) {
       s.loop.handle_policy = HandlePolicy(read_choice(c, n, k, handle_policy_names));
     }},
    {"on_full",
     [](C c, N n, K k, auto& s) { s.loop.on_full = OnFull(read_choice(c, n, k, on_full_names)); }},
    {"accept_share", [](C c, N n, K k, auto& s) { s.loop.accept_share = read_bool(c, n, k); }},
    {"shutdown_drains_backlog",
     [](C c, N n, K k, auto& s) { s.loop.shutdown_drains_backlog = read_bool(c, n, k); }},
    {"drain_timeout", [](C c, N n, K k, auto& s) { s.loop.drain_timeout = read_duration(c, n, k); }},
    {"drain_closes_gracefully",
     [](C c, N n, K k, auto& s) { s.loop.drain_closes_gracefully = read_bool(c, n, k); }},
    {"drain_idle_grace", [](C c, N n, K k, auto& s) { s.loop.drain_idle_grace = read_duration(c, n, k); }},
    {"shutdown_between_handlers",
     [](C c, N n, K k, auto& s) { s.loop.shutdown_between_handlers = read_bool(c, n, k); }},
    {"head_timeout", [](C c, N n, K k, auto& s) { s.loop.head_timeout = read_duration(c, n, k); }},
    {"body_timeout", [](C c, N n, K k, auto& s) { s.loop.body_timeout = read_duration(c, n, k); }},
    {"keepalive_timeout",
     [](C c, N n, K k, auto& s) { s.loop.keepalive_timeout = read_duration(c, n, k); }},
    {"write_timeout", [](C c, N n, K k, auto& s) { s.loop.write_timeout = read_duration(c, n, k); }},
    {"max_input",
     [](C c, N n, K k, auto& s) { s.loop.max_input = int(read_integer(c, n, k, 0, buffer_max)); }},
    {"max_output",
     [](C c, N n, K k, auto& s) { s.loop.max_output = int(read_integer(c, n, k, 0, buffer_max)); }},
    {"share_counts_siblings", [](C c, N n, K k, auto& s) { s.loop.share_counts_siblings = read_bool(c, n, k); }},
    {"accept_thread", [](C c, N n, K k, auto& s) { s.loop.accept_thread = read_bool(c, n, k); }},
    {"shutdown_drops_listener_event",
     [](C c, N n, K k, auto& s) { s.loop.shutdown_drops_listener_event = read_bool(c, n, k); }},
    {"siblings_watch_listener", [](C c, N n, K k, auto& s) { s.loop.siblings_watch_listener = read_bool(c, n, k); }},
    {"resume_after_flush", [](C c, N n, K k, auto& s) { s.loop.resume_after_flush = read_bool(c, n, k); }},
    {"handoff_wakes_when_empty", [](C c, N n, K k, auto& s) { s.loop.handoff_wakes_when_empty = read_bool(c, n, k); }},
    {"short_read_drains", [](C c, N n, K k, auto& s) { s.loop.short_read_drains = read_bool(c, n, k); }},
    {"short_read_heeds_hangup", [](C c, N n, K k, auto& s) { s.loop.short_read_heeds_hangup = read_bool(c, n, k); }},
    {"watch_after_eager_read", [](C c, N n, K k, auto& s) { s.loop.watch_after_eager_read = read_bool(c, n, k); }},
    {"watch_served_connections", [](C c, N n, K k, auto& s) { s.loop.watch_served_connections = read_bool(c, n, k); }},
};
const Section<Scenario> loop_section{"loop", "[loop]", loop_fields};

}  // namespace loopsim::sim::reading
