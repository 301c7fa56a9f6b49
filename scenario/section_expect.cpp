// The scenario reader's [[expect]] and [[arms]] sections: what a run must show, and the
// variants of the scenario that must show something else.
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

const Field<Expectation> expect_fields[] = {
    {"property",
     [](C c, N n, K k, auto& e) {
       e.property = property_names[read_choice(c, n, k, property_names)];
     }},
    {"of", [](C c, N n, K k, auto& e) { e.of = read_name(c, n, k); }},
    {"after", [](C c, N n, K k, auto& e) { e.after = read_name(c, n, k); }},
    {"max", [](C c, N n, K k, auto& e) { e.max = read_bound(c, n, k); }},
    {"min", [](C c, N n, K k, auto& e) { e.min = read_bound(c, n, k); }},
};
// Bounds in the unit their property measures, reported at the key that has the wrong one.
void finish_expectation(const Context& c, const toml::table& table, Expectation& e) {
  e.line = int(table.source().begin.line);
  const PropertyKind* kind = property_kind(e.property);  // read_choice took a known name
  bool counts = kind->measures == Measures::count;
  bool times = kind->measures == Measures::time;
  for (const char* key : {"max", "min"}) {
    const std::optional<Bound>& bound = key[1] == 'a' ? e.max : e.min;
    if (!bound) continue;
    bool is_count = bound->unit == Bound::Unit::count;
    if (counts && !is_count) {
      c.fail(table.get(key)->source(), cat("expect.", key, ": ", e.property, " counts, so its bound is a whole number, not \"", bound->text, "\""),
             cat("write it without quotes: ", key, " = 100"));
    }
    if (times && is_count) {
      c.fail(table.get(key)->source(), cat("expect.", key, ": ", e.property, " measures time, so ", bound->text, " needs a unit"),
             cat("for example ", key, " = \"500ms\" or ", key, " = \"3 requests\""));
    }
  }
  if (e.min && e.max && e.min->unit == e.max->unit && e.min->value > e.max->value) {
    c.fail(table.get("min")->source(), cat("min (", e.min->text, ") is greater than max (", e.max->text, ")"),
           "no run can hold between them");
  }
}
const Section<Expectation> expect_section{"expect", "[[expect]]", expect_fields, "property", finish_expectation};

const Field<Arm> arm_fields[] = {
    {"name", [](C c, N n, K k, auto& a) { a.name = read_arm_name(c, n, k); }},
    {"set", [](C c, N n, K k, auto& a) { a.set = read_set(c, n, k); }},
    {"expect_violated", [](C c, N n, K k, auto& a) { a.expect_violated = read_names(c, n, k); }},
};
const Section<Arm> arm_section{"arms", "[[arms]]", arm_fields, "name"};

}  // namespace loopsim::sim::reading
