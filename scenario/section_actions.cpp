// The scenario reader's [[posters]] and [[actions]] sections: posts from other threads, and
// signals and shutdowns at their instants.
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

const Field<PosterSpec> poster_fields[] = {
    {"name", [](C c, N n, K k, auto& p) { p.name = read_name(c, n, k); }},
    {"at", [](C c, N n, K k, auto& p) { p.at = read_window(c, n, k); }},
    {"cost", [](C c, N n, K k, auto& p) { p.cost = read_duration(c, n, k); }},
    {"count", [](C c, N n, K k, auto& p) { p.count = int(read_integer(c, n, k, 1, clients_max)); }},
    {"every", [](C c, N n, K k, auto& p) { p.every = read_duration(c, n, k); }},
    {"worker", [](C c, N n, K k, auto& p) { p.worker = int(read_integer(c, n, k, 0, workers_max - 1)); }},
};
const Section<PosterSpec> poster_section{"posters", "[[posters]]", poster_fields, "name"};

constexpr std::string_view action_kind_names[] = {"shutdown", "signal"};
constexpr std::string_view signal_names[] = {"SIGTERM", "SIGINT", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGQUIT"};  // action_signals

void finish_action(const Context& c, const toml::table& table, ActionSpec& a) {
  const bool signal = a.kind == ActionSpec::Kind::signal;
  if (signal != table.contains("signal"))
    c.fail(table.contains("signal") ? table.get("signal")->source() : table.source(),
           "actions.signal goes with kind = \"signal\", and only with it", R"(kind = "signal", signal = "SIGTERM")");
}
const Field<ActionSpec> action_fields[] = {
    {"kind",
     [](C c, N n, K k, auto& a) { a.kind = ActionSpec::Kind(read_choice(c, n, k, action_kind_names)); }},
    {"at", [](C c, N n, K k, auto& a) { a.at = read_window(c, n, k); }},
    {"signal", [](C c, N n, K k, auto& a) { a.signal = action_signals[read_choice(c, n, k, signal_names)].first; }},
    // Read in check_builtin_signals, on top of the scenario's [loop], once that is read.
    {"reload", [](C c, N n, K k, auto& a) {
       as_table(c, n, k);
       a.reload = LoopConfig{};
     }},
};
const Section<ActionSpec> action_section{"actions", "[[actions]]", action_fields, "kind", finish_action};

}  // namespace loopsim::sim::reading
