// The scenario reader's cross references, checked once every table has been read: names that
// refer to groups, arms and properties, a target's limits, totals, posters' times.
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

// The nodes at `key` in each table of the array of tables `tables`, arrays flattened.
std::vector<const toml::node*> nodes_at(const toml::table& root, std::string_view tables,
                                        std::string_view key) {
  std::vector<const toml::node*> out;
  const toml::array* array = root[tables].as_array();
  if (array == nullptr) return out;
  for (const toml::node& table : *array) {
    const toml::node* node = table.as_table()->get(key);
    if (node != nullptr && node->is_array())
      for (const toml::node& item : *node->as_array()) out.push_back(&item);
    else if (node != nullptr)
      out.push_back(node);
  }
  return out;
}

// Fails at the first of `refs` (strings, already checked) that is not in `names`, or that
// repeats an earlier one when `unique`.
// Sets, not scans: a file may hold 100,000 groups.
void check_names(C c, const std::vector<const toml::node*>& refs,
                 std::span<const std::string_view> names, std::string_view what, bool unique) {
  const std::set<std::string_view> known(names.begin(), names.end());
  std::set<std::string_view> seen;
  for (const toml::node* ref : refs) {
    const std::string_view name = ref->as_string()->get();
    if (unique && !seen.insert(name).second)
      c.fail(ref->source(), cat(what, " \"", name, "\" is defined twice"), "give each one a name of its own");
    if (!unique && !known.contains(name))
      c.fail(ref->source(), cat(what, " \"", name, "\""), cat("known: ", join(names)));
  }
}

void check_references(C c, const toml::table& root, const Scenario& s) {
  std::vector<std::string_view> clients, arms, properties;
  for (const ClientGroup& group : s.clients) clients.push_back(group.name);
  for (const Arm& arm : s.arms) arms.push_back(arm.name);
  for (const Expectation& e : s.expect) properties.push_back(e.property);
  check_names(c, nodes_at(root, "clients", "name"), clients, "[[clients]]", true);
  check_names(c, nodes_at(root, "arms", "name"), arms, "[[arms]]", true);
  const std::set<std::string_view> client_set(clients.begin(), clients.end());
  std::vector<std::string_view> subjects = clients;  // `of` names a client group or a poster
  std::vector<std::string_view> posters;
  for (const PosterSpec& poster : s.posters) {
    subjects.push_back(poster.name);
    posters.push_back(poster.name);
  }
  check_names(c, nodes_at(root, "posters", "name"), posters, "[[posters]]", true);
  const std::set<std::string_view> poster_set(posters.begin(), posters.end());
  // post_latency is about a poster; the other properties with `of`, about a client group.
  if (const toml::array* expect = root["expect"].as_array()) {
    for (const toml::node& table : *expect) {
      const toml::table& t = *table.as_table();
      const toml::node* of = t.get("of");
      if (of == nullptr || !of->is_string()) continue;
      bool about_posts = t["property"].value_or(std::string()) == "post_latency";
      std::span<const std::string_view> names = about_posts ? std::span<const std::string_view>(posters)
                                                            : std::span<const std::string_view>(clients);
      const std::string_view name = of->as_string()->get();
      const bool known_here = about_posts ? poster_set.contains(name) : client_set.contains(name);
      if (!known_here && (client_set.contains(name) || poster_set.contains(name))) {
        c.fail(of->source(),
               cat("expect.of: \"", of->as_string()->get(), "\" is a ", about_posts ? "client group" : "poster",
                   "; ", about_posts ? "post_latency is about a [[posters]] entry" : "this property is about a [[clients]] group"),
               cat("known: ", join(names)));
      }
    }
  }
  check_names(c, nodes_at(root, "expect", "of"), subjects,
              "no [[clients]] group or [[posters]] entry is named", false);
  check_names(c, nodes_at(root, "expect", "after"), clients, "no [[clients]] group is named",
              false);
  check_names(c, nodes_at(root, "faults", "of"), clients, "no [[clients]] group is named", false);
  check_names(c, nodes_at(root, "faults", "arms"), arms, "no [[arms]] entry is named", false);
  std::vector<const toml::node*> workers = nodes_at(root, "posters", "worker");
  for (const toml::node* node : workers) {
    if (node->value<std::int64_t>().value_or(0) >= s.workers) {
      c.fail(node->source(), cat("posters.worker: there is no worker ", *node->value<std::int64_t>(), " with loop.workers = ", s.workers),
             cat("workers are numbered from 0 to ", s.workers - 1));
    }
  }
  check_names(c, nodes_at(root, "arms", "expect_violated"), properties,
              "no [[expect]] checks the property", false);
}

// A target is its own loop: the loop's knobs, posters and actions belong to the built-in one.
void check_target(C c, const toml::table& root) {
  constexpr std::string_view hint =
      "a target program is its own loop: only [kernel], [[clients]], [[faults]], [[actions]], [[expect]] and [[arms]] apply";
  if (const toml::table* loop = root["loop"].as_table()) {
    auto entries = in_document_order(*loop);
    const toml::source_region& at = entries.empty() ? loop->source() : entries.front().second->source();
    const std::string key = entries.empty() ? std::string("[loop]") : cat("loop.", entries.front().first->str());
    c.fail(at, cat(key, " is a knob of the built-in loop, and the scenario runs a [target]"), hint);
  }
  if (const toml::node* node = root.get("posters"))
    c.fail(node->source(), "[[posters]] cannot reach into a target program yet", hint);
  const toml::array* actions = root["actions"].as_array();
  for (std::size_t i = 0; actions != nullptr && i < actions->size(); ++i) {
    if (const toml::table* action = actions->get(i)->as_table(); action != nullptr && action->contains("reload"))
      c.fail(action->get("reload")->source(),
             "actions.reload configures the built-in loop; a target's SIGHUP is its own to handle",
             "leave reload out: the program gets the SIGHUP and does what it does with it");
  }
}

// The built-in loop takes the signals loopsim live takes: SIGTERM and SIGINT, and SIGHUP with a
// `reload` table, [loop]'s keys that may change live, read on top of the scenario's [loop].
void check_builtin_signals(C c, const toml::table& root, Scenario& s) {
  const toml::array* actions = root["actions"].as_array();
  for (std::size_t i = 0; actions != nullptr && i < s.actions.size() && i < actions->size(); ++i) {
    ActionSpec& a = s.actions[i];
    const toml::table& table = *actions->get(i)->as_table();
    if (const toml::node* reload = table.get("reload")) {
      if (a.kind != ActionSpec::Kind::signal || a.signal != 1)
        c.fail(reload->source(), "actions.reload goes with kind = \"signal\", signal = \"SIGHUP\"",
               R"(kind = "signal", signal = "SIGHUP", reload = { head_timeout = "200ms" })");
      const toml::table& keys = *reload->as_table();
      for (const auto& [key, value] : in_document_order(keys)) {  // each key alone: may it change live?
        toml::table one;
        one.insert(*key, *value);
        Scenario changed = s;
        read_fields(c, one, loop_section, changed);
        LoopConfig kept = s.loop;
        take_reloadable(kept, changed.loop);
        if (kept != changed.loop)
          c.fail(key->source(), cat("loop.", key->str(), " cannot change live: a reload leaves it as it was"),
                 "a reload changes the timeouts, max_request_head, max_input, max_output, accept_batch, drain_chunk "
                 "and yield_batch");
      }
      Scenario changed = s;
      read_fields(c, keys, loop_section, changed);
      a.reload = changed.loop;
      continue;
    }
    if (a.kind != ActionSpec::Kind::signal || a.signal == 15 || a.signal == 2) continue;
    c.fail(table.get("signal")->source(),
           "the built-in loop takes SIGTERM and SIGINT, as loopsim live does, and SIGHUP with a reload table; other "
           "signals reach a [target]",
           R"(signal = "SIGTERM")");
  }
}

// Ceilings on the whole file, not one key: the clients of all groups together, and the requests
// they send. Past them a run could not fit its trace (trace_events_max), so the file is refused
// at the group that crosses the line.
void check_totals(C c, const toml::table& root, const Scenario& s) {
  const toml::array* groups = root["clients"].as_array();
  std::int64_t clients = 0, requests = 0;
  for (std::size_t i = 0; groups != nullptr && i < s.clients.size() && i < groups->size(); ++i) {
    const ClientGroup& g = s.clients[i];
    const toml::table& table = *groups->get(i)->as_table();
    clients += g.count;
    requests += std::int64_t(g.count) * std::int64_t(g.closed_requests > 0 ? g.closed_requests : std::int64_t(g.requests.size()));
    const toml::node* count = table.get("count");
    // The last member connects at connect_at + (count - 1) / rate: it must be a time too.
    const __int128 last_ns = g.rate_milli > 0 ? __int128(since_start(g.connect_at.hi).count()) +
                                                    __int128(g.count - 1) * 1'000'000'000'000 / g.rate_milli
                                              : 0;
    if (last_ns > duration_max.count()) {
      const toml::node* rate = table.get("rate");
      c.fail(rate != nullptr ? rate->source() : table.source(),
             cat("at rate ", rate != nullptr ? toml_text(*rate) : std::string("?"), ", [[clients]] \"", g.name,
                 "\"'s last connection would start after 1,000,000 s"),
             "raise the rate or lower the count: every time in a scenario is at most 1,000,000 s");
    }
    if (clients > total_clients_max) {
      c.fail(count != nullptr ? count->source() : table.source(),
             cat("[[clients]] \"", g.name, "\" takes the scenario past ", total_clients_max, " clients in all"),
             "a scenario holds at most 1,000,000 clients over all its groups");
    }
    if (requests > total_requests_max) {
      const toml::node* list = table.get("requests");
      c.fail(list != nullptr ? list->source() : table.source(),
             cat("[[clients]] \"", g.name, "\" takes the scenario past ", total_requests_max, " requests in all"),
             "a scenario sends at most 5,000,000 requests (count x requests, over all groups)");
    }
  }
}

// A poster's last post comes at at + every x (count - 1): it must be a time too.
void check_poster_times(C c, const toml::table& root, const Scenario& s) {
  const toml::array* posters = root["posters"].as_array();
  for (std::size_t i = 0; posters != nullptr && i < s.posters.size() && i < posters->size(); ++i) {
    const PosterSpec& p = s.posters[i];
    const double last_ns = double(since_start(p.at.hi).count()) + double(p.every.count()) * double(p.count - 1);
    if (last_ns <= double(duration_max.count())) continue;
    const toml::table& table = *posters->get(i)->as_table();
    const toml::node* every = table.get("every");
    c.fail(every != nullptr ? every->source() : table.source(),
           cat("[[posters]] \"", p.name, "\"'s last post would come after 1,000,000 s"),
           "lower every or count: every time in a scenario is at most 1,000,000 s");
  }
}

// An action the run ends before is refused, not left never to happen: a run stops at its
// horizon, and what falls due there or later does not happen.
void check_action_times(C c, const toml::table& root, const Scenario& s) {
  const toml::array* actions = root["actions"].as_array();
  for (std::size_t i = 0; actions != nullptr && i < s.actions.size() && i < actions->size(); ++i) {
    const ActionSpec& a = s.actions[i];
    if (a.at.lo < s.horizon) continue;
    const toml::table& table = *actions->get(i)->as_table();
    const toml::node* at = table.get("at");
    c.fail(at != nullptr ? at->source() : table.source(),
           cat("actions.at: ", instant_text(a.at.lo), " is not before the horizon (", instant_text(s.horizon),
               "): the run ends first, and the action would never happen"),
           "an action happens before the horizon: move it earlier, or the horizon later");
  }
}

}  // namespace loopsim::sim::reading
