// What `loopsim generate --shape FILE` varies in a user's file, apart from the search that judges
// each variation (explore/shaped.hpp): it needs only sim/ and toml++.
#pragma once

#include <cstdint>
#include <string>
#include <toml++/toml.h>

#include "scenario/scenario.hpp"

namespace loopsim::explore {

// The scenario of run `run`, as TOML text: the shape with its varied parts redrawn. Its arms are
// dropped (a run is judged as the base). Throws sim::ScenarioError when the shape does not load.
std::string shaped_text(const std::string& shape, const std::string& file, std::uint64_t seed, std::uint64_t run);

// The shape as a TOML document, or a sim::ScenarioError at the place it does not parse.
toml::table shape_document(const std::string& shape, const std::string& file);

// shaped_text from the shape read once: `base` as it loads, `doc` as TOML (a copy, varied).
std::string varied(const sim::Scenario& base, toml::table doc, std::uint64_t seed, std::uint64_t run);

}  // namespace loopsim::explore
