#include "explore/shard_document.hpp"

#include <algorithm>
#include <span>

namespace loopsim::explore {

namespace {

using Json = nlohmann::ordered_json;

sim::ScenarioError bad(const std::string& file, const std::string& what, const std::string& hint) {
  return sim::ScenarioError(file + ":1:1: " + what, hint);
}

// The fields a merge reads, with the type each must have where a document has it.
enum class Kind { count, integer, text, texts, object, count_or_null };
struct FieldType {
  const char* key;
  Kind kind;
};
constexpr FieldType explore_fields[] = {
    {"executions", Kind::count}, {"cut", Kind::count}, {"steps", Kind::count}, {"replayed_steps", Kind::count},
    {"snapshots", Kind::count}, {"states", Kind::count}, {"transitions", Kind::count}, {"judged", Kind::count},
    {"wall_ns", Kind::count}, {"bound", Kind::text}, {"counterexample", Kind::text}, {"violated", Kind::texts},
    {"worst", Kind::count_or_null}, {"worst_replay", Kind::text}, {"choices", Kind::count},
    {"choices_not_natural", Kind::count}, {"shrunk", Kind::text}, {"search", Kind::object},
    {"deviations_completed", Kind::integer}, {"deviations_max", Kind::count}};
constexpr FieldType generate_fields[] = {
    {"runs", Kind::count}, {"wall_ns", Kind::count}, {"failing_run", Kind::count}, {"scenario", Kind::text},
    {"original", Kind::text}, {"trace", Kind::text}, {"violated", Kind::texts}, {"detail", Kind::text},
    {"search", Kind::object}};

bool has_kind(const Json& v, Kind kind) {
  switch (kind) {
    case Kind::count: return v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0);
    case Kind::integer: return v.is_number_integer();
    case Kind::text: return v.is_string();
    case Kind::texts: return v.is_array() && std::all_of(v.begin(), v.end(), [](const Json& e) { return e.is_string(); });
    case Kind::object: return v.is_object();
    case Kind::count_or_null: return v.is_null() || v.is_number_integer();
  }
  return false;
}

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::count: return "a whole number";
    case Kind::integer: return "an integer";
    case Kind::text: return "a string";
    case Kind::texts: return "an array of strings";
    case Kind::object: return "an object";
    case Kind::count_or_null: return "an integer or null";
  }
  return "?";
}

}  // namespace

ShardDocument parse_shard_document(const std::string& file, const std::string& text) {
  ShardDocument shard{file, {}, 0};
  try {
    shard.doc = Json::parse(text);
  } catch (const Json::out_of_range&) {
    throw bad(file, "not a shard's result: a number too large for a 64-bit value", shard_hint);
  } catch (const Json::parse_error& e) {
    // The line and column of the byte the parser stopped at.
    const std::string& s = text;
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i + 1 < e.byte && i < s.size(); ++i) {
      if (s[i] == '\n') ++line, column = 1;
      else ++column;
    }
    throw sim::ScenarioError(file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": not JSON", shard_hint);
  }
  const Json& d = shard.doc;
  auto is_count = [](const Json& v) { return v.is_number_unsigned(); };
  if (!d.is_object() || !d.contains("command") || !d["command"].is_string() || !d.contains("shard") ||
      !d["shard"].is_object() || !is_count(d["shard"].value("index", Json())) ||
      !is_count(d["shard"].value("count", Json())) || !d.contains("search") || !d.contains("verdict") ||
      !d["verdict"].is_string()) {
    throw bad(file, "not a shard's result: it lacks \"command\", \"shard\", \"search\" or \"verdict\"", shard_hint);
  }
  std::string command = d["command"];
  if (command != "explore" && command != "generate") {
    throw bad(file, "\"command\" is \"" + command + "\"; merge takes explore and generate results", shard_hint);
  }
  const Json& count = d["shard"]["count"];
  if (!count.is_number_unsigned() || count.get<std::uint64_t>() == 0 || count.get<std::uint64_t>() > shards_max) {
    throw bad(file, "\"shard\".\"count\" is " + count.dump() + ": a search has 1 to " + std::to_string(shards_max) + " shards",
              shard_hint);
  }
  for (const FieldType& f : command == "explore" ? std::span<const FieldType>(explore_fields) : std::span<const FieldType>(generate_fields)) {
    if (d.contains(f.key) && !has_kind(d[f.key], f.kind)) {
      throw bad(file, std::string("\"") + f.key + "\" is " + d[f.key].dump().substr(0, 60) + ", not " + kind_name(f.kind),
                shard_hint);
    }
  }
  if (command == "generate" && d["verdict"] == "found" && !d.contains("failing_run")) {
    throw bad(file, "a failure with no \"failing_run\"", shard_hint);
  }
  shard.index = d["shard"]["index"];
  if (shard.index >= count.get<std::uint64_t>()) {
    throw bad(file, "shard " + std::to_string(shard.index) + " of " + count.dump(), shard_hint);
  }
  return shard;
}


}  // namespace loopsim::explore
