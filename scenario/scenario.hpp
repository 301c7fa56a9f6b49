// A scenario: kernel and loop configuration, a workload, faults, actions, expectations and
// arms. Loaded from TOML (format version 1, documented in scenarios/README.md).
#pragma once

#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "model/choice.hpp"
#include "model/window.hpp"
#include "realloop/config.hpp"
#include "realloop/kernel.hpp"

namespace loopsim::sim {

struct KernelConfig {
  PollerFlavour poller = PollerFlavour::epoll;
  int listen_backlog = 128;
  int somaxconn = 4096;
  int rlimit_nofile = 1024;
  int file_max = 1048576;
  bool abort_on_overflow = false;
  std::vector<Duration> timer_slack{Duration(0)};  // several: each sleep's is a choice point
  std::int64_t send_buffer = 16384;
  // K11: autotuning's ceiling, Debian 12's tcp_wmem maximum; a choice, grown by default; 0: none
  std::int64_t send_buffer_max = 4194304;
  std::int64_t receive_buffer = 131072;
};

// Every time at which something happens (a connection, a request, a fault, a post, an action)
// is a window (model::Window): a run draws the instant from the seed, a search tries each
// placement the server can tell apart. Most are one instant.
using Window = model::Window;

struct RequestSpec {
  Window at;  // absolute virtual time; sent once connected, never before
  std::string path;  // an HTTP request's path, or a raw request's bytes (`bytes`)
  bool raw = false;
};

struct ClientGroup {
  std::string name;
  int count = 1;
  Window connect_at;  // the first member's; each member's is its own, shifted by `rate`
  // Connections per 1,000 s: the file's `rate` (per second) exact to 3 decimals, an integer so
  // that every machine spaces arrivals alike; 0: all at connect_at.
  std::int64_t rate_milli = 0;
  bool keep_alive = false;
  // Misbehaving clients (R12, R13). stall: each request is sent cut short and never finished:
  // `head` stops before the head's last empty line, `body` sends a head that announces a
  // 64-byte body and then 16 bytes of it. reads = false: the client never reads its answers.
  enum class Stall : std::uint8_t { none, head, body };
  Stall stall = Stall::none;
  bool reads = true;
  // Scripted: each request at its own time.
  std::vector<RequestSpec> requests;

  // Closed loop (wrk's shape), instead of a script: a connection sends its first `pipeline`
  // requests once connected and one more for each answer, `think` after it, until it has sent
  // `closed_requests` (requests = N; 0: no count) or `duration` has passed since it connected
  // (0: no time bound). Each request's path is `path`, or drawn from `paths` by weight.
  std::int64_t closed_requests = 0;
  Duration duration{0};
  Duration think{0};
  int pipeline = 1;
  std::string path = "/fast";
  struct WeightedPath {
    std::string path;
    std::int64_t weight = 1;
  };
  std::vector<WeightedPath> paths;
  bool closed_loop() const { return closed_requests > 0 || duration > Duration{0}; }

  // When a connection's first requests leave, once its handshake completes. Unset: with the
  // handshake's completion, in the same step, so the loop finds them as soon as it accepts.
  // 0: at that instant, as a happening of its own, so the order of "the bytes arrive" against
  // "the loop accepts" is a choice point (the explorer tries both). More: that much later.
  std::optional<Duration> send_after_connect;

  // Once it has sent its last request, the client shuts its writing side (shutdown(SHUT_WR)):
  // the server reads the end after the requests, and the client still reads the answers.
  bool half_close = false;
  // A slow reader: bytes per second it reads of its answers (0: as fast as they come). It takes
  // read_rate / 100 bytes every 10 ms while bytes wait for it; the rest stays in the server's
  // send buffer, whose writes then stall.
  std::int64_t read_rate = 0;

  // Network delay: each way takes rtt / 2, plus a draw from [0, jitter] (from the seed) that
  // never reorders a connection's bytes. The handshake costs a round trip before the client
  // may send. Bandwidth is not modelled: bytes in flight take no room in the socket buffers.
  Duration rtt{0};
  Duration jitter{0};

  // Every request carries a body of this many bytes, with its Content-Length.
  std::int64_t body = 0;

  // Any protocol: requests that are bytes (each request's `bytes`, or a closed loop's), sent as
  // written, instead of HTTP GETs for a path; then `path` holds the bytes. Without keep_alive, a
  // client closes its connection once its last request is answered.
  bool raw = false;
  // How the group's answers are framed: HTTP (header names in any case, Content-Length or a
  // chunked body), ending at `terminator`, `answer_bytes` long, or one RESP value. A framed
  // answer that is not HTTP has status 200, a RESP error (-ERR, !bulk error) 500.
  // How answers are framed: HTTP/1.1; up to a terminator; a fixed length; RESP (redis); MQTT's
  // fixed header and Remaining Length; a 4-byte big-endian length before each (prefix32).
  enum class Framing : std::uint8_t { http, terminator, length, resp, mqtt, prefix32 };
  Framing framing = Framing::http;
  std::string terminator;
  std::int64_t answer_bytes = 0;
  // How connections arrive at `rate`: evenly spaced, or a Poisson process (exponential gaps
  // drawn from the scenario's seed).
  enum class Arrivals : std::uint8_t { uniform, poisson };
  Arrivals arrivals = Arrivals::uniform;
};

// A bound in the units the scenario wrote it in. "requests" and "batches" are multiples of the
// measured cost of one request (and, for batches, of loop.accept_batch).
struct Bound {
  enum class Unit : std::uint8_t { time, count, requests, batches };
  Unit unit = Unit::time;
  double value = 0;  // nanoseconds for time
  std::string text;  // as written, for reports
};

struct Expectation {
  std::string property;
  std::string of;
  std::string after;
  std::optional<Bound> max;
  std::optional<Bound> min;
  int line = 0;  // where it was written, for error messages
};

// [[faults]]: something made to go wrong.
struct FaultSpec {
  enum class Kind : std::uint8_t {
    accept_error,  // the nth accept, or accepts in [at, until), fail with `error`
    rlimit,        // at `at`, the descriptor limit becomes `value`
    reset,         // at `at`, `count` clients of group `of` (0: all) reset their connections
  };
  Kind kind = Kind::accept_error;
  Window at;        // accept_error: when its window of failing accepts opens
  Instant until{};
  std::uint64_t nth = 0;
  int error = 0;    // an errno value
  int value = 0;
  int count = 0;    // accept_error: the budget within the window (0: all); reset: clients
  std::string of;
  // Only these arms inject the fault; empty: the base and every arm. A sabotage of the world
  // rather than of the loop, for loops that have no knob to turn (a target's).
  std::vector<std::string> arms;
  int line = 0;
};

// "accept_error", as the file names the kind.
std::string_view fault_kind_name(FaultSpec::Kind kind);

// [[posters]]: posts from a foreign thread to a loop (R7).
struct PosterSpec {
  std::string name;
  Window at;       // the first post's; each later one's is its own, `every` after
  Duration cost{0};   // what the post's callback spends on the loop
  int count = 1;   // posts, `every` apart
  Duration every{0};
  int worker = 0;  // the loop posted to
};

// [[actions]]: things done to the loops.
struct ActionSpec {
  // shutdown: the built-in loop's graceful shutdown (R5), SIGTERM for a target. signal: a
  // signal, delivered as Linux delivers it to a target's handlers; the built-in loop takes
  // SIGTERM and SIGINT, as loopsim live does, and shuts down.
  enum class Kind : std::uint8_t { shutdown, signal };
  Kind kind = Kind::shutdown;
  Window at;
  int signal = 15;  // SIGTERM
  // SIGHUP to the built-in loop: the configuration its `reload` table gives ([loop]'s keys, on
  // top of the scenario's), of which each loop takes what may change live (take_reloadable).
  std::optional<LoopConfig> reload;
};
// The signals a scenario may send, and their names.
inline constexpr std::pair<int, const char*> action_signals[] = {
    {15, "SIGTERM"}, {2, "SIGINT"}, {1, "SIGHUP"}, {10, "SIGUSR1"}, {12, "SIGUSR2"}, {3, "SIGQUIT"}};
// SIGTERM, SIGINT and SIGQUIT ask a server to stop: shutdown_clean judges its drain from there.
constexpr bool stopping_signal(int signal) { return signal == 15 || signal == 2 || signal == 3; }

// [target]: a program of someone else's, run unmodified under the POSIX seam instead of the
// built-in loop (docs/targets.md).
struct TargetSpec {
  std::vector<std::string> exec;  // the program and its arguments, as written
  std::string program;            // exec[0] resolved: from `folder`, or on PATH
  // Where the program runs, and its relative paths start: `dir` resolved from the scenario
  // file's folder, or that folder itself. Absolute.
  std::string folder;
  int port = 0;                   // where the program listens; the clients connect there
  Duration call_cost = std::chrono::microseconds(1);  // what a failing call costs the program
  // How many times a run may switch from one of the program's threads to another at a
  // synchronisation call (a preemption, choice kind `preempt`): the search's bound, as CHESS's.
  int preemptions = 2;
  // How long one of its threads may run, in the machine's time, without a call the simulation
  // serves, before the run stops: virtual time cannot move while it runs (a spin).
  Duration spin_limit = std::chrono::seconds(20);
  // Where the program's stdout and stderr go: OUTPUT.ARM.stdout and OUTPUT.ARM.stderr; empty,
  // out/targets/NAME. Never read from the file: whoever runs the scenario says it (`loopsim
  // run --trace F` gives F without its extension, checker::SuiteOptions::target_output).
  std::string output;
};

// One `--set` or arm override: a dotted key and its value as TOML source text.
struct Override {
  std::string key;
  std::string value;
  // Where the value starts in the --set argument it came from (1-based); 0 for an override
  // that came from no command line. Errors in the value point there: "--set:1:COLUMN".
  std::uint32_t value_column = 0;
};

struct Arm {
  std::string name;
  std::vector<Override> set;
  std::vector<std::string> expect_violated;
};

// What shrinking kept of the client groups it changed (explore/shrink.hpp), each by name: how
// many clients (0: the group removed), which of its scripted requests (their indices, in
// order), or how many requests a closed loop sends (its pipeline no deeper than that); the
// windows it narrowed to one instant (a group's connect_at; a scripted request's `at`, by its
// index in the file's list); and the faults it left out (indices into the file's [[faults]],
// the arm's own among them, in the order written); each group's request body as shortened; and a
// target's arguments as kept (its program, exec[0], stays).
struct Shrinks {
  std::map<std::string, int> clients;
  std::map<std::string, std::vector<std::size_t>> script;
  std::map<std::string, std::int64_t> closed_requests;
  std::map<std::string, Instant> connect_at;
  std::map<std::string, std::map<std::size_t, Instant>> request_at;
  std::vector<std::size_t> faults_dropped;
  std::map<std::string, std::int64_t> body;
  std::optional<std::vector<std::string>> arguments;
  bool empty() const {
    return clients.empty() && script.empty() && closed_requests.empty() && connect_at.empty() && request_at.empty() &&
           faults_dropped.empty() && body.empty() && !arguments;
  }
  bool operator==(const Shrinks&) const = default;
};

struct Scenario {
  std::string file;
  std::string name;
  std::string description;
  std::uint64_t seed = 1;
  Instant horizon{std::chrono::seconds(20)};
  KernelConfig kernel;
  LoopConfig loop;
  int workers = 1;
  std::vector<ClientGroup> clients;
  std::vector<FaultSpec> faults;
  std::vector<PosterSpec> posters;
  std::vector<ActionSpec> actions;
  std::vector<Expectation> expect;
  std::vector<Arm> arms;
  // Not a key of the file: what a run's trace keeps (sim::EventMask; all of it unless the
  // command line asks for --trace-level verdicts).
  std::uint64_t trace_keep = ~std::uint64_t(0);
  // Pinned choices (a counterexample): the run takes these instead of the seed's.
  std::vector<model::Choice> choices;
  std::optional<TargetSpec> target;
  // For a target: the scenario as resolved (overrides applied, arms left out), as TOML text.
  // The target's process reads it back, for it runs the simulation on its side of the seam.
  std::string source;
  // What with_shrinks applied, against `source`: the target's process applies it again.
  Shrinks shrunk;
  // "file:line:column" where each kernel and loop knob was set ("kernel.rlimit_nofile"), each
  // of those tables ("loop"), and the horizon, for errors and limits only a run can find.
  std::map<std::string, std::string> where;
  // The position of the first of `keys` that was set, else of the file's start.
  std::string position_of(std::initializer_list<const char*> keys) const {
    for (const char* key : keys) {
      if (auto it = where.find(key); it != where.end()) return it->second;
    }
    return file + ":1:1";
  }
};

// `text` with its control characters written as C escapes: "\n", "\t", "\x1b".
std::string escape_controls(const std::string& text);

// A scenario that cannot be used: `what()` is "file:line:column: message" and `hint` a
// one-line fix. Exit status 2 at the CLI.
// Control characters (a newline or a NUL inside a value) are shown escaped ("\n", "\x00"),
// so that a message stays one line and whole.
class ScenarioError : public std::runtime_error {
 public:
  ScenarioError(const std::string& where_and_what, const std::string& hint)
      : std::runtime_error(escape_controls(where_and_what)), hint(escape_controls(hint)) {}
  std::string hint;
};

// The largest trace file loopsim reads: 4 GiB (a run's trace holds at most 10M events).
inline constexpr std::uintmax_t trace_file_max = std::uintmax_t{4} << 30;
// The largest scenario file loopsim reads: 16 MiB.
inline constexpr std::uintmax_t scenario_file_max = 16u << 20;
// Opens an input file for reading after checking that it is a regular file (not a directory, a
// FIFO that would block, or a device like /dev/zero that never ends) of at most `max_bytes`.
// Throws ScenarioError "path:1:1: ...".
std::ifstream open_input(const std::string& path, std::uintmax_t max_bytes, const char* what);
// The whole of a scenario file, so checked.
std::string read_scenario_file(const std::string& path);

// Loads a scenario file, then applies `overrides` (from --set) on top of the file's values.
// Throws ScenarioError.
// The loop.accept_batch the file itself sets for its base, 0 when it sets none (or sets one the
// loader will refuse): read from the text alone, with no override and no check of the rest, so
// that a file that only --set makes valid still has its own batch.
int file_accept_batch(const std::string& text, const std::string& name);

Scenario load_scenario(const std::string& path, const std::vector<Override>& overrides = {});
// The same from text; `name` stands for the file in messages.
Scenario parse_scenario(const std::string& text, const std::string& name,
                        const std::vector<Override>& overrides = {});
// The scenario as one of its arms runs: the base with the arm's `set` applied (then the
// command line's overrides again, so that --set wins). Throws ScenarioError.
Scenario scenario_for_arm(const std::string& text, const std::string& name, const Arm& arm,
                          const std::vector<Override>& overrides = {});
// The scenario with them applied.
Scenario with_shrinks(const Scenario& scenario, const Shrinks& shrinks);

// The scenario as `arm` runs it, with `overrides` applied, its arms left out and `choices`
// pinned: a counterexample that `loopsim run` replays. Throws ScenarioError.
// `shrinks` shrinks client groups and their requests, as with_shrinks does. With
// `written_to`, the file it will be written as: a target keeps running where it ran
// (`target.dir`, relative to that file's folder), so that its relative arguments still work.
std::string pinned_scenario(const std::string& text, const std::string& name, const Arm& arm,
                            const std::vector<Override>& overrides,
                            const std::vector<model::Choice>& choices,
                            const Shrinks& shrinks = {}, const std::string& written_to = {});
// The folder a target runs in: `dir` (absolute, or from `file`'s folder), or `file`'s folder.
std::string target_folder(const std::string& file, const std::string& dir);

// A TOML array of strings, as an override's value; and one string.
std::string toml_strings(const std::vector<std::string>& items);
std::string toml_string(const std::string& text);
// Parses "key=value" from the command line, refusing a key no scenario has (the value is
// checked where it is applied: its type depends on the key). Throws ScenarioError.
Override parse_override(const std::string& assignment);
// The longest duration a scenario may write: 1,000,000 s (about 11.6 days). Below it, sums of
// a few durations (a deadline plus slack plus a cost) cannot overflow.
inline constexpr Duration duration_max{1'000'000'000'000'000};
// The most requests a scenario sends in all (count x requests, over every group).
inline constexpr std::int64_t total_requests_max = 5'000'000;
// The largest count a bound may write, and the most requests or batches a cost bound may.
inline constexpr std::int64_t bound_count_max = 1'000'000'000'000'000;
inline constexpr double bound_cost_max = 1'000'000;
// Parses a duration such as "600ms", "80us", "1.5s", "250ns", up to duration_max. Throws
// std::invalid_argument.
Duration parse_duration(const std::string& text);
// Parses a time, or a window of time "A..B" (two durations, B not before A): the happening occurs
// at some instant in [A, B]. A plain duration is the window [A, A]. Throws std::invalid_argument.
model::Window parse_window(const std::string& text);

}  // namespace loopsim::sim
