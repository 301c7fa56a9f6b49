// The scenario reader's [[faults]] section: accept errors, descriptor limits and resets, at
// their instants or windows, with their budgets and slack.
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

constexpr std::string_view errno_names[] = {"EMFILE", "ENFILE", "ENOBUFS", "ECONNABORTED"};
constexpr int errno_values[] = {EMFILE, ENFILE, ENOBUFS, ECONNABORTED};

const Field<FaultSpec> fault_fields[] = {
    {"kind",
     [](C c, N n, K k, auto& f) {
       f.kind = FaultSpec::Kind(read_choice(c, n, k, fault_kind_names));
     }},
    {"at", [](C c, N n, K k, auto& f) { f.at = read_window(c, n, k); }},
    {"until", [](C c, N n, K k, auto& f) { f.until = read_instant(c, n, k, true); }},
    {"nth", [](C c, N n, K k, auto& f) { f.nth = std::uint64_t(read_integer(c, n, k, 1, INT64_MAX)); }},
    {"errno", [](C c, N n, K k, auto& f) { f.error = errno_values[read_choice(c, n, k, errno_names)]; }},
    {"value", [](C c, N n, K k, auto& f) { f.value = int(read_integer(c, n, k, 0)); }},
    {"count", [](C c, N n, K k, auto& f) { f.count = int(read_integer(c, n, k, 0)); }},
    {"of", [](C c, N n, K k, auto& f) { f.of = read_name(c, n, k); }},
    {"arms", [](C c, N n, K k, auto& f) { f.arms = read_names(c, n, k); }},
};

// Each kind of fault needs its own keys, and only those.
void check_fault(const Context& c, const toml::table& table, FaultSpec& f) {
  f.line = int(table.source().begin.line);
  const std::string_view kind = fault_kind_names[std::size_t(f.kind)];
  auto need = [&](std::string_view key, std::string_view example) {
    if (!table.contains(key)) c.fail(table.source(), cat(kind, " faults need ", key), cat("add ", example));
  };
  auto refuse = [&](std::string_view key) {
    if (const toml::node* n = table.get(key))
      c.fail(n->source(), cat(key, " means nothing to ", kind, " faults"), cat("remove ", key));
  };
  switch (f.kind) {
    case FaultSpec::Kind::accept_error:
      need("errno", R"(errno = "EMFILE")");
      for (auto key : {"value", "of"}) refuse(key);
      if (table.contains("nth") && table.contains("at"))
        c.fail(table.get("at")->source(), "an accept_error fault takes nth or at, not both",
               "nth picks one accept call; at and until a window of them: keep one");
      if (table.contains("nth") && table.contains("count"))
        c.fail(table.get("count")->source(), "count bounds the failures in an at/until window; nth picks one call",
               "remove count, or use at and until instead of nth");
      if (table.contains("until") && !table.contains("at"))
        c.fail(table.get("until")->source(), "until closes a window that at opens, and there is no at",
               table.contains("nth") ? "nth picks one accept call and needs no until: remove until"
                                     : R"(add at = "1s" before until)");
      if (!table.contains("nth") && !table.contains("at"))
        c.fail(table.source(), "an accept_error fault needs either nth or at (with until)",
               R"(e.g. nth = 3, or at = "1s" and until = "2s")");
      if (table.contains("at")) need("until", R"(until = "2s")");
      if (table.contains("at") && f.until <= f.at.hi)
        c.fail(table.get("until")->source(), f.at.fixed() ? "until must come after at" : "until must come after the end of at's window",
               "make the window non-empty");
      break;
    case FaultSpec::Kind::rlimit:
      need("at", R"(at = "1s")");
      need("value", "value = 64");
      for (auto key : {"until", "nth", "errno", "count", "of"}) refuse(key);
      break;
    case FaultSpec::Kind::reset:
      need("at", R"(at = "1s")");
      need("of", R"(of = "burst")");
      for (auto key : {"until", "nth", "errno", "value"}) refuse(key);
      break;
  }
}
const Section<FaultSpec> fault_section{"faults", "[[faults]]", fault_fields, "kind", check_fault};

}  // namespace loopsim::sim::reading
