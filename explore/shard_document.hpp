// A shard's --json document (loopsim explore or generate --shard I/N) as loopsim merge reads
// it: bounded, parsed, and every field it uses type-checked, with the one error form. Apart from
// the command so that a fuzzer reads documents as merge does (fuzz/merge.cpp).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "scenario/scenario.hpp"

namespace loopsim::explore {

// A shard's document is a few kilobytes; anything near this is not one.
inline constexpr std::uintmax_t shard_bytes_max = std::uintmax_t(16) << 20;
// More shards than any search is dealt to (each is a process of its own).
inline constexpr std::uint64_t shards_max = 1'000'000;

inline constexpr const char* shard_hint =
    "give the --json documents of loopsim explore --shard I/N or loopsim generate --shard I/N";

struct ShardDocument {
  std::string file;
  nlohmann::ordered_json doc;
  std::uint64_t index = 0;
};

// `text` read from `file` (named in messages as FILE:LINE:COLUMN). Throws sim::ScenarioError
// for anything but a shard's document whose fields merge reads have the types they must.
ShardDocument parse_shard_document(const std::string& file, const std::string& text);

}  // namespace loopsim::explore
