// Digest completeness: every field a layer declares as state changes the digest when it
// changes, and the fields it skips are exactly the ones listed here, by name. A field added to a
// type without a policy, or moved, does not compile (realloop/state.hpp, and the compile-failure
// test below); a field wrongly skipped, or one whose type the digest cannot see into, fails here. Every type that declares state_fields in the
// layers' sources is checked: the last test finds the declarations and fails on one unchecked.
#include <catch2/catch.hpp>
#include <cxxabi.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <typeinfo>

#include "model/scheduler.hpp"
#include "model/scheduler_thread.hpp"
#include "model/sim_kernel.hpp"
#include "realloop/loop.hpp"
#include "realloop/pool.hpp"
#include "realloop/state.hpp"
#include "sim/clients.hpp"
#include "sim/world.hpp"

using namespace loopsim;

namespace {

using Digested = std::vector<std::int64_t>;

template <class T>
Digested digest_of(const T& object, Instant now) {
  Digested out;
  state::visit([&out](std::int64_t v) { out.push_back(v); }, object, now);
  return out;
}

template <class T>
struct is_map : std::false_type {};
template <class K, class V, class C, class A>
struct is_map<std::map<K, V, C, A>> : std::true_type {};
template <class T>
struct is_by_descriptor : std::false_type {};
template <class I>
struct is_by_descriptor<model::ByDescriptor<I>> : std::true_type {};
template <class T>
struct is_set : std::false_type {};
template <class K, class C, class A>
struct is_set<std::set<K, C, A>> : std::true_type {};

template <class T>
void perturb(T& field);

// Changes the first field of a declared type that it does not skip.
template <class T, std::size_t... I>
void perturb_declared(T& object, std::index_sequence<I...>) {
  bool done = false;
  auto one = [&](auto index) {
    constexpr std::size_t i = decltype(index)::value;
    if constexpr (state::field_at<T, i>() != state::Policy::skip) {
      if (!done) perturb(state::member_at<i>(object));
      done = true;
    }
  };
  (one(std::integral_constant<std::size_t, I>{}), ...);
}

// A change of the field's value that any reading of it can see.
template <class T>
void perturb(T& field) {
  if constexpr (state::Declared<T>) {
    perturb_declared(field, std::make_index_sequence<state::field_count<T>>{});
  } else if constexpr (std::is_same_v<T, bool>) {
    field = !field;
  } else if constexpr (std::is_enum_v<T>) {
    field = T(std::underlying_type_t<T>(field) + 1);
  } else if constexpr (std::is_integral_v<T>) {
    field = T(field + 1);
  } else if constexpr (state::is_duration<T>::value) {
    field += Duration(1);
  } else if constexpr (std::is_same_v<T, Instant>) {
    field += Duration(1);
  } else if constexpr (std::is_same_v<T, std::optional<Instant>>) {
    field = field ? std::nullopt : std::optional<Instant>(Instant(Duration(0)));
  } else if constexpr (std::is_same_v<T, MaybeInstant>) {
    field = field ? MaybeInstant() : MaybeInstant(Instant(Duration(0)));
  } else if constexpr (std::is_same_v<T, AtomicInstant>) {
    field.store(field.load() ? std::nullopt : std::optional<Instant>(Instant(Duration(0))));
  } else if constexpr (state::is_atomic<T>::value) {
    using V = decltype(field.load());
    if constexpr (std::is_same_v<V, bool>) field.store(!field.load());
    else field.store(V(field.load() + 1));
  } else if constexpr (std::is_same_v<T, std::string>) {
    field.push_back('x');
  } else if constexpr (std::is_same_v<T, Output>) {
    field.append("x");
  } else if constexpr (is_map<T>::value) {
    field.emplace(typename T::key_type{987}, typename T::mapped_type{});
  } else if constexpr (is_by_descriptor<T>::value) {
    field.try_emplace(987, typename T::mapped_type{});
  } else if constexpr (is_set<T>::value) {
    field.insert(typename T::key_type{987});
  } else if constexpr (requires { field.resize(field.size() + 1); } && !requires { field.push_back(typename T::value_type{}); }) {
    field.resize(field.size() + 1);  // a table (base::Paged): one more element
  } else if constexpr (state::is_lazy<T>::value) {
    perturb(field.get([] { return typename T::value_type{}; }));
  } else {
    field.push_back(typename T::value_type{});
  }
}

// Perturbs each field of `object` that is not skipped, one at a time on a fresh copy made by
// `make`, and checks that the digest changes. Returns the names of the skipped fields.
template <class T, class Make, std::size_t... I>
std::vector<std::string> check_fields(Make make, Instant now, std::index_sequence<I...>) {
  std::vector<std::string> skipped;
  auto one = [&](auto index) {
    constexpr std::size_t i = decltype(index)::value;
    if constexpr (state::field_at<T, i>() == state::Policy::skip) {
      skipped.push_back(state::field_at<T, i>().name);
    } else {
      auto holder = make();
      T& object = holder.object();
      Digested before = digest_of(object, now);
      perturb(state::member_at<i>(object));
      INFO(typeid(T).name() << " field " << (state::field_at<T, i>().name));
      CHECK(digest_of(object, now) != before);
    }
  };
  (one(std::integral_constant<std::size_t, I>{}), ...);
  return skipped;
}

// The types whose fields skipped_fields has checked in this process, by their full names.
std::set<std::string>& checked_types() {
  static std::set<std::string> checked;
  return checked;
}

template <class T>
std::string type_name() {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(typeid(T).name(), nullptr, nullptr, &status),
                                              std::free);
  return status == 0 ? std::string(name.get()) : std::string(typeid(T).name());
}

template <class T, class Make>
std::vector<std::string> skipped_fields(Make make, Instant now = Instant{}) {
  checked_types().insert(type_name<T>());
  return check_fields<T>(make, now, std::make_index_sequence<state::field_count<T>>{});
}

// A plain value, default-made.
template <class T>
struct Plain {
  T value{};
  T& object() { return value; }
};

// A simulated kernel with what it needs, and the loop, pool and clients that live on it.
struct Rig {
  model::Scheduler scheduler;
  model::SimKernel kernel{scheduler, model::SimKernelConfig{}};
  LoopObserver observer;
  sim::Trace trace;
};

struct KernelRig {
  std::unique_ptr<Rig> rig = std::make_unique<Rig>();
  model::SimKernel& object() { return rig->kernel; }
};
struct LoopRig {
  std::unique_ptr<Rig> rig = std::make_unique<Rig>();
  std::unique_ptr<Loop> loop = std::make_unique<Loop>(rig->kernel, LoopConfig{}, rig->observer, 0);
  Loop& object() { return *loop; }
};
struct PoolRig {
  std::unique_ptr<Rig> rig = std::make_unique<Rig>();
  std::unique_ptr<HandlerPool> pool = std::make_unique<HandlerPool>(rig->kernel, 2);
  HandlerPool& object() { return *pool; }
};
struct ClientsRig {
  std::unique_ptr<Rig> rig = std::make_unique<Rig>();
  std::unique_ptr<sim::Clients> clients =
      std::make_unique<sim::Clients>(rig->scheduler, rig->kernel, rig->trace, 80);
  sim::Clients& object() { return *clients; }
};

// The type of T's member declared at entry I, and the type of its elements (for types private to
// T); name the entry by its member, state::index_of<T>("conns_").
template <class T, std::size_t I>
  requires(I < state::field_count<T>)
using FieldType = std::remove_cvref_t<decltype(state::member_at<I>(std::declval<T&>()))>;
template <class T, std::size_t I>
using ElementType = typename FieldType<T, I>::value_type;

using Skips = std::vector<std::string>;

}  // namespace

namespace {

void check_kernel() {
  using K = model::SimKernel;
  CHECK(skipped_fields<K>([] { return KernelRig{}; }) == Skips{"scheduler_", "sink_", "next_port_", "work_", "calls_instant_", "calls_at_instant_", "stalled_", "server_releases_"});  // scheduler, sink, next_port, work, the stall guard, the twin keys' epoch
  // All but rlimit_nofile, which a fault or setrlimit changes: the rest is fixed for the run.
  CHECK(skipped_fields<model::SimKernelConfig>([] { return Plain<model::SimKernelConfig>{}; }) ==
        Skips{"poller", "somaxconn", "file_max", "abort_on_overflow", "timer_slack", "empty_wait_cost", "send_buffer", "receive_buffer", "send_buffer_max", "syn_rto", "syn_retries"});
  CHECK(skipped_fields<model::AcceptFault>([] { return Plain<model::AcceptFault>{}; }).empty());
  // The kernel's own tables: descriptors, listeners, connections, pollers, fault states.
  using FdEntry = ElementType<K, state::index_of<K>("fds_")>;
  using Listener = ElementType<K, state::index_of<K>("listeners_")>;
  using Conn = ElementType<K, state::index_of<K>("conns_")>;
  using Poller = ElementType<K, state::index_of<K>("pollers_")>;
  using Pipe = ElementType<K, state::index_of<K>("pipes_")>;
  using Pair = ElementType<K, state::index_of<K>("pairs_")>;
  using PairEnd = typename std::remove_cvref_t<decltype(std::declval<Pair&>().ends)>::value_type;
  using FaultState = ElementType<K, state::index_of<K>("accept_faults_")>;
  using Interest = typename std::remove_cvref_t<decltype(std::declval<Poller&>().items)>::mapped_type;
  CHECK(skipped_fields<FdEntry>([] { return Plain<FdEntry>{}; }).empty());
  // The counts behind a connection's place in the queue: history (the queue is the state).
  CHECK(skipped_fields<Listener>([] { return Plain<Listener>{}; }) == Skips{"pushed", "popped"});  // pushed, popped
  CHECK(skipped_fields<Conn>([] { return Plain<Conn>{}; }) == Skips{"queued_at"});  // queued_at
  CHECK(skipped_fields<Poller>([] { return Plain<Poller>{}; }).empty());
  CHECK(skipped_fields<Pipe>([] { return Plain<Pipe>{}; }).empty());
  CHECK(skipped_fields<Interest>([] { return Plain<Interest>{}; }).empty());
  CHECK(skipped_fields<FaultState>([] { return Plain<FaultState>{}; }).empty());
  CHECK(skipped_fields<Pair>([] { return Plain<Pair>{}; }).empty());
  CHECK(skipped_fields<PairEnd>([] { return Plain<PairEnd>{}; }).empty());
}

void check_loop() {
  // kernel, config, observer, group, accept_only_ (fixed), pool, mailbox lock, pass counter,
  // load_ (the held count and the mailbox's size), events scratch and its room, timers (each
  // connection's timer_at), the Date field's cache (the calendar's, which a simulated kernel
  // keeps none of)
  CHECK(skipped_fields<Loop>([] { return LoopRig{}; }) == Skips{"kernel_", "config_", "observer_", "group_", "accept_only_", "pool_", "mailbox_", "pass_", "load_", "events_", "watch_span_", "timers_", "date_"});
  using Connection = ElementType<Loop, state::index_of<Loop>("connections_")>;
  CHECK(skipped_fields<Connection>([] { return Plain<Connection>{}; }) == Skips{"timer_slot", "timer_at"});  // timer_at
  CHECK(skipped_fields<HandlerPool>([] { return PoolRig{}; }) == Skips{"kernel_", "mutex_"});  // kernel, lock
  using Job = ElementType<HandlerPool, state::index_of<HandlerPool>("jobs_")>;
  CHECK(skipped_fields<Job>([] { return Plain<Job>{}; }) == Skips{"loop"});  // the job's loop
  using Post = ElementType<Loop, state::index_of<Loop>("posts_")>;
  CHECK(skipped_fields<Post>([] { return Plain<Post>{}; }) == Skips{"run"});  // the task itself
  // The loops and the acceptor: references to the process's own loops, digested there.
  CHECK(skipped_fields<WorkerGroup>([] { return Plain<WorkerGroup>{}; }) == Skips{"loops_", "acceptor_"});
}

void check_clients() {
  using C = sim::Clients;
  // scheduler, kernel, trace, the port and the workload's seed, by_conn (the clients' conns, inverted)
  CHECK(skipped_fields<C>([] { return ClientsRig{}; }) == Skips{"scheduler_", "kernel_", "trace_", "port_", "seed_", "by_conn_"});
  using Client = ElementType<C, state::index_of<C>("clients_")>;
  CHECK(skipped_fields<Client>([] { return Plain<Client>{}; }) == Skips{"group", "group_index"});  // group pointer and index
  CHECK(skipped_fields<sim::PathQueue>([] { return Plain<sim::PathQueue>{}; }).empty());
  CHECK(skipped_fields<sim::SentPaths>([] { return Plain<sim::SentPaths>{}; }).empty());
  // The framing, fixed by the group: its kind, terminator and length.
  CHECK(skipped_fields<sim::AnswerStream>([] { return Plain<sim::AnswerStream>{}; }) == Skips{"group_"});
  CHECK(skipped_fields<sim::AnswerParser>([] { return Plain<sim::AnswerParser>{}; }) == Skips{"group_"});
}

void check_scheduler() {
  // name, body, the fibers, generation, the stack and the sanitizer's, rest_at, resume_at,
  // deadline_queued
  // (model/scheduler_thread.hpp says why each).
  using Thread = model::Scheduler::Thread;
  CHECK(skipped_fields<Thread>([] { return Plain<Thread>{}; }) == Skips{"name", "body", "fiber", "sink", "generation", "stack", "fake_stack", "rest_at", "resume_at", "deadline_queued"});
}

}  // namespace

TEST_CASE("digest completeness: the simulated kernel's every field is seen, and the skips are these") {
  check_kernel();
}

TEST_CASE("digest completeness: the loop's every field is seen, and the skips are these") { check_loop(); }

TEST_CASE("digest completeness: the clients' every field is seen, and the skips are these") { check_clients(); }

TEST_CASE("digest completeness: a simulated thread's every field is seen, and the skips are these") {
  check_scheduler();
}

TEST_CASE("digest completeness: a lazy member not made yet digests as a fresh one made") {
  sim::ClientGroup group;
  sim::AnswerStream never(group);
  sim::AnswerStream fed(group);
  std::string_view nothing;
  int status = 0;
  REQUIRE(fed.next(nothing, status) == sim::AnswerStream::Step::more);  // made, nothing taken
  CHECK(digest_of(never, Instant(Duration(0))) == digest_of(fed, Instant(Duration(0))));
  std::string_view half = "HTTP/1.1 2";
  REQUIRE(fed.next(half, status) == sim::AnswerStream::Step::more);
  CHECK(digest_of(never, Instant(Duration(0))) != digest_of(fed, Instant(Duration(0))));
  sim::AnswerStream copy = fed;  // a deep copy: the copy's parser is its own
  std::string_view rest = "00 OK\r\nContent-Length: 0\r\n\r\n";
  REQUIRE(copy.next(rest, status) == sim::AnswerStream::Step::answer);
  CHECK(status == 200);
  CHECK(digest_of(copy, Instant(Duration(0))) != digest_of(fed, Instant(Duration(0))));
  std::string_view again = "00 OK\r\nContent-Length: 0\r\n\r\n";
  REQUIRE(fed.next(again, status) == sim::AnswerStream::Step::answer);  // the original, untouched by the copy
  CHECK(digest_of(copy, Instant(Duration(0))) == digest_of(fed, Instant(Duration(0))));
}

TEST_CASE("digest completeness: times are fed relative to now, so equal states at other times agree") {
  using K = model::SimKernel;
  using Poller = ElementType<K, state::index_of<K>("pollers_")>;
  Poller p;
  p.last_empty_poll = Instant(Duration(5));
  CHECK(digest_of(p, Instant(Duration(5))) != digest_of(p, Instant(Duration(6))));  // an empty poll now, or not
  Poller q = p;
  q.last_empty_poll = Instant(Duration(1));
  CHECK(digest_of(q, Instant(Duration(6))) == digest_of(p, Instant(Duration(7))));  // both long past
  model::AcceptFault f;
  f.until = Instant(Duration(10));
  model::AcceptFault g = f;
  g.until = Instant(Duration(20));
  CHECK(digest_of(f, Instant{}) == digest_of(g, Instant(Duration(10))));  // 10 ns left in both
}

TEST_CASE("digest completeness: the world's digest is made of every part that holds state") {
  // The parts World::Impl declares: the skipped ones are the scenario (fixed), the result (the
  // trace is history), the choosers and the recorder (they pass things on), and bookkeeping.
  std::vector<std::string> taken, skipped;
  for (auto& [name, part] : sim::World::digest_parts()) (part ? taken : skipped).push_back(name);
  CHECK(taken == std::vector<std::string>{"scheduler", "kernel", "clients", "monitors", "process"});
  CHECK(skipped == std::vector<std::string>{"scenario", "result", "seeded", "recording", "recorder", "steps",
                                             "finished", "lasso", "digest_taken", "canonical"});
  // Each part taken is seen: changing it changes the digest.
  sim::Scenario scenario = sim::parse_scenario(R"(
[[clients]]
name = "one"
requests = [{ at = "1ms", path = "/fast" }]
[[posters]]
name = "p"
at = "1s"
)", "parts.toml");
  for (const std::string& part : taken) {
    sim::World world(scenario, "base", nullptr);
    std::uint64_t before = world.digest();
    REQUIRE(world.change_part_for_tests(part));
    INFO(part);
    CHECK(world.digest() != before);
  }
}

namespace {

// A type that declares state_fields in the sources: its name as written, nested names joined
// (`Loop::Post`, `Scheduler::Thread`), and where.
struct Declaration {
  std::string name;
  std::string where;
};

// The name of the struct or class a line opens, or "" (a forward declaration opens none).
std::string opened_type(const std::string& line) {
  static const std::regex opens(R"(^\s*(?:struct|class)\s+([A-Za-z_][A-Za-z_0-9:]*)(?:\s+final)?\s*(?::[^;]*)?\{\s*$)");
  std::smatch m;
  return std::regex_match(line, m, opens) ? m[1].str() : "";
}

std::size_t indent_of(const std::string& line) { return line.find_first_not_of(' '); }

// Every `static constexpr auto state_fields =` in one file, named by the types around it.
void declarations_in(const std::filesystem::path& file, const std::string& shown, std::vector<Declaration>& out) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (line.find("state_fields =") == std::string::npos || line.find("static constexpr") == std::string::npos) continue;
    if (line.find("//") != std::string::npos && line.find("//") < line.find("static")) continue;  // a comment's example
    std::string name;
    std::size_t depth = indent_of(line);
    for (std::size_t j = i; j-- > 0 && depth > 0;) {
      const std::string type = opened_type(lines[j]);
      if (type.empty() || indent_of(lines[j]) >= depth) continue;
      name = name.empty() ? type : type + "::" + name;
      depth = indent_of(lines[j]);
    }
    out.push_back({name, shown + ":" + std::to_string(i + 1)});
  }
}

std::vector<Declaration> declarations() {
  namespace fs = std::filesystem;
  const fs::path root = LOOPSIM_SOURCE_DIR;
  std::vector<Declaration> out;
  for (const char* layer : {"base", "realloop", "model", "sim", "checker", "explore", "probe", "reports", "cli", "posix"}) {
    for (const auto& entry : fs::recursive_directory_iterator(root / layer)) {
      const fs::path& file = entry.path();
      if (file.extension() != ".hpp" && file.extension() != ".cpp") continue;
      if (file.stem().string().ends_with("_test")) continue;
      declarations_in(file, fs::relative(file, root).string(), out);
    }
  }
  return out;
}

bool checked(const std::string& declared) {
  for (const std::string& full : checked_types()) {
    if (full == declared || full.ends_with("::" + declared)) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("digest completeness: every type that declares state_fields in the sources is checked above") {
  check_kernel();
  check_loop();
  check_clients();
  check_scheduler();
  // Made only inside a World, each is checked as a part of it (the test above), its members'
  // types field by field here.
  const std::set<std::string> world_parts = {"World::Impl", "Process"};
  const std::vector<Declaration> found = declarations();
  REQUIRE(found.size() >= 20);  // the search itself works: SimKernel alone declares twelve
  std::set<std::string> names;
  for (const Declaration& d : found) {
    INFO(d.where << " declares state_fields for " << (d.name.empty() ? "(a type this test cannot name)" : d.name));
    REQUIRE_FALSE(d.name.empty());
    names.insert(d.name);
    CHECK((checked(d.name) || world_parts.count(d.name) > 0));
  }
  for (const std::string& part : world_parts) {
    INFO(part);
    CHECK(names.count(part) == 1);  // the exception is still a declaration
  }
}
