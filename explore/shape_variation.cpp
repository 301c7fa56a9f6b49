// The variation of a shape (loopsim generate --shape): what the user's file leaves to chance,
// redrawn for each run. Apart from the search (explore/shaped.cpp), so that it needs only sim/
// and toml++, and the fuzzer reaches it (fuzz/shape.cpp).
#include "explore/shape_variation.hpp"

#include <algorithm>
#include <toml++/toml.h>

#include "model/choice.hpp"
#include "scenario/scenario.hpp"
#include "scenario/toml_writer.hpp"
#include "scenario/units.hpp"

namespace loopsim::explore {

namespace {

// At most this many clients in all, as for generate's targets (well below any listen backlog).
constexpr std::int64_t clients_max = 100;
// Connections and fault times are drawn within this much of the file's own.
constexpr std::int64_t spread_ns = 300'000'000;
constexpr std::int64_t time_max = sim::duration_max.count();

// A time as the file writes it: exact to the nanosecond, as the file gave it, and never past
// what a file may hold (the workload moves later, and a time at the limit stays there).
std::string time_text(std::int64_t ns) { return sim::duration_text(Duration(std::clamp<std::int64_t>(ns, 0, time_max))); }

struct Draws {
  std::uint64_t state;
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : model::splitmix64(state) % n; }
  bool coin() { return below(2) == 0; }
};

// A key of `table` read as a duration in nanoseconds (0 when absent).
std::int64_t duration_ns(const toml::table& table, const char* key) {
  const auto* text = table.get_as<std::string>(key);
  return text == nullptr ? 0 : sim::parse_duration(text->get()).count();
}

// A window "A..B" moved by `by`, as a whole: its width kept, and within what a file may hold.
std::string moved_window(const model::Window& w, std::int64_t by) {
  const std::int64_t width = (w.hi - w.lo).count();
  const std::int64_t lo = std::clamp<std::int64_t>(since_start(w.lo).count() + by, 0, time_max - width);
  return time_text(lo) + ".." + time_text(lo + width);
}

// Redraws the `at` of each table in `list`: moved by `shift` with the workload, then anywhere
// within spread_ns / 2 either side; or drops it (with `optional`). A window ("A..B") moves by
// `shift` as a whole, as the workload does; an `until` keeps its distance, and so the window
// stays within the limit too. Each `at` (a window's start) stays before `before`: an action
// must come before the horizon, or the file does not load.
void redraw_times(toml::array* list, Draws& draws, bool optional, std::int64_t shift, std::int64_t before = time_max + 1) {
  if (list == nullptr) return;
  for (std::size_t i = list->size(); i-- > 0;) {
    toml::table* t = list->get(i)->as_table();
    if (t == nullptr) continue;
    if (optional && draws.below(3) == 0) {
      list->erase(list->begin() + std::ptrdiff_t(i));
      continue;
    }
    const auto* at = t->get_as<std::string>("at");
    if (at == nullptr) continue;
    if (at->get().find("..") != std::string::npos) {
      const model::Window w = sim::parse_window(at->get());
      const std::int64_t until = t->contains("until") ? duration_ns(*t, "until") : since_start(w.hi).count();
      const std::int64_t by = std::clamp<std::int64_t>(
          shift, -since_start(w.lo).count(),
          std::min(time_max - std::max(until, since_start(w.hi).count()), before - 1 - since_start(w.lo).count()));
      t->insert_or_assign("at", moved_window(w, by));
      if (t->contains("until")) t->insert_or_assign("until", time_text(until + by));
      continue;
    }
    const std::int64_t was = sim::parse_duration(at->get()).count();
    const std::int64_t width = t->contains("until") ? duration_ns(*t, "until") - was : 0;
    const std::int64_t now = std::clamp<std::int64_t>(was + shift + std::int64_t(draws.below(spread_ns)) - spread_ns / 2, 0,
                                                      std::min(time_max - std::max<std::int64_t>(width, 0), before - 1));
    t->insert_or_assign("at", time_text(now));
    if (t->contains("until")) t->insert_or_assign("until", time_text(now + width));
  }
}

}  // namespace

// shaped_text from the shape read once: `base` as it loads, `doc` as TOML (a copy, varied).
std::string varied(const sim::Scenario& base, toml::table doc, std::uint64_t seed, std::uint64_t run) {
  Draws draws{seed ^ (0x9e3779b97f4a7c15ull * (run + 1))};
  doc.insert_or_assign("seed", std::int64_t(draws.below(1'000'000) + 1));
  doc.erase("arms");
  doc.erase("choices");
  // The program runs where the shape's does, wherever the drawn file is written and replayed.
  if (base.target) {
    if (toml::table* target = doc.get_as<toml::table>("target")) target->insert_or_assign("dir", base.target->folder);
  }
  std::int64_t left = clients_max;
  // Requests in all stay within what a file may send: each group keeps room for one client.
  const auto requests_of = [](const sim::ClientGroup& g) {
    return std::max<std::int64_t>(1, g.closed_requests > 0 ? g.closed_requests : std::int64_t(g.requests.size()));
  };
  std::int64_t spare_requests = sim::total_requests_max;
  for (const sim::ClientGroup& g : base.clients) spare_requests -= requests_of(g);
  // The workload moves as a whole, later by up to spread_ns: the groups keep their times to one
  // another (an expectation may measure one group after another), and never come earlier than
  // the file says (a program may take time to start: redis spends 563 us of failing calls
  // before it listens, and the file's times leave it that room).
  const std::int64_t shift = std::int64_t(draws.below(spread_ns));
  if (toml::array* groups = doc.get_as<toml::array>("clients")) {
    for (std::size_t g = 0; g < groups->size() && g < base.clients.size(); ++g) {
      toml::table& t = *groups->get(g)->as_table();
      const sim::ClientGroup& was = base.clients[g];
      std::int64_t count =
          std::min<std::int64_t>(std::max<std::int64_t>(left, 1), 1 + std::int64_t(draws.below(std::uint64_t(2 * was.count))));
      count = std::min(count, 1 + std::max<std::int64_t>(spare_requests, 0) / requests_of(was));
      const std::int64_t connect_was = since_start(was.connect_at.lo).count();
      const bool fixed = was.connect_at.lo == was.connect_at.hi;
      std::int64_t rate = 0;  // a second; 0: as the file says
      if (was.rate_milli > 0 || draws.below(4) == 0) rate = std::int64_t(50 + draws.below(950));
      // The last member connects (count - 1) / rate after the first: within a file's times too.
      const std::int64_t first_latest = fixed ? std::min(connect_was + shift, time_max) : since_start(was.connect_at.hi).count();
      // Rounded up: the file's own check is exact.
      const std::int64_t per_ns = rate > 0                ? (1'000'000'000 + rate - 1) / rate
                                  : was.rate_milli > 0 ? (1'000'000'000'000 + was.rate_milli - 1) / was.rate_milli
                                                       : 0;
      const std::int64_t room = time_max - (fixed ? connect_was : since_start(was.connect_at.hi).count());
      if (per_ns > 0) count = std::min(count, 1 + std::max<std::int64_t>(room, 0) / per_ns);
      count = std::max<std::int64_t>(count, 1);
      left -= count;
      spare_requests -= (count - 1) * requests_of(was);
      t.insert_or_assign("count", count);
      if (rate > 0) t.insert_or_assign("rate", rate);
      // The group moves as a whole: its requests keep their times after the connection.
      const std::int64_t connect = per_ns > 0 && fixed ? std::min(first_latest, time_max - (count - 1) * per_ns) : first_latest;
      if (fixed) t.insert_or_assign("connect_at", time_text(connect));
      if (toml::array* requests = t.get_as<toml::array>("requests")) {
        for (std::size_t r = 0; r < requests->size() && r < was.requests.size(); ++r) {
          const sim::RequestSpec& spec = was.requests[r];
          // A window moves with the connection it follows (a window's own connection stays).
          if (spec.at.lo != spec.at.hi) {
            if (fixed) requests->get(r)->as_table()->insert_or_assign("at", moved_window(spec.at, connect - connect_was));
            continue;
          }
          requests->get(r)->as_table()->insert_or_assign(
              "at", time_text(connect + std::max<std::int64_t>(0, since_start(spec.at.lo).count() - connect_was)));
        }
      }
    }
  }
  // A fault that names arms is theirs: the base, which a run is, never injects it.
  if (toml::array* faults = doc.get_as<toml::array>("faults")) {
    for (std::size_t i = faults->size(); i-- > 0;) {
      if (faults->get(i)->as_table()->contains("arms")) faults->erase(faults->begin() + std::ptrdiff_t(i));
    }
  }
  redraw_times(doc.get_as<toml::array>("faults"), draws, true, shift);
  redraw_times(doc.get_as<toml::array>("actions"), draws, true, shift, since_start(base.horizon).count());
  // Without a stop (a shutdown, SIGTERM, SIGINT, SIGQUIT) there is no drain to judge.
  bool stops = false;
  if (const toml::array* actions = doc.get_as<toml::array>("actions")) {
    for (const toml::node& a : *actions) {
      const toml::table& t = *a.as_table();
      const std::string kind = t["kind"].value_or(std::string());
      const std::string signal = t["signal"].value_or(std::string());
      stops = stops || kind == "shutdown" || signal == "SIGTERM" || signal == "SIGINT" || signal == "SIGQUIT";
    }
  }
  if (toml::array* expect = doc.get_as<toml::array>("expect"); expect != nullptr && !stops) {
    for (std::size_t i = expect->size(); i-- > 0;) {
      if (expect->get(i)->as_table()->get_as<std::string>("property") != nullptr &&
          **expect->get(i)->as_table()->get_as<std::string>("property") == "shutdown_clean")
        expect->erase(expect->begin() + std::ptrdiff_t(i));
    }
  }
  for (const char* list : {"faults", "actions", "expect"}) {
    if (const toml::array* items = doc.get_as<toml::array>(list); items != nullptr && items->empty()) doc.erase(list);
  }
  return sim::toml_text(doc) + '\n';
}

std::string shaped_text(const std::string& shape, const std::string& file, std::uint64_t seed, std::uint64_t run) {
  const sim::Scenario base = sim::parse_scenario(shape, file);  // the shape must load as it is
  return varied(base, shape_document(shape, file), seed, run);
}

toml::table shape_document(const std::string& shape, const std::string& file) {
  try {
    return toml::parse(shape, file);
  } catch (const toml::parse_error& e) {
    const auto& at = e.source().begin;
    throw sim::ScenarioError(file + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) + ": " +
                                 std::string(e.description()),
                             "--shape takes a scenario file");
  }
}

}  // namespace loopsim::explore
