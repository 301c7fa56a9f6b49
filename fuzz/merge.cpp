// Fuzzes loopsim merge's shard reader (explore/shard_document.hpp): a document as merge reads
// it from a shard's --json file, then every field merge goes on to read, with the type the
// reader promised.
//
// Input: the bytes of one shard document.
//
// A finding: a crash, a sanitizer report, any exception but sim::ScenarioError (nlohmann's
// type_error and out_of_range used to abort merge), an error message of more than one line, or
// a document taken whose fields do not have the types merge reads them as.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "explore/shard_document.hpp"
#include "fuzz/finding.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace loopsim;
  const std::string text(fuzz::text_of(data, size));
  explore::ShardDocument shard;
  try {
    shard = explore::parse_shard_document("shard.json", text);
  } catch (const sim::ScenarioError& e) {
    if (!fuzz::one_line(e.what())) fuzz::finding("an error message of more than one line");
    return 0;
  }
  // What merge reads of a document it took (cli/merge_command.cpp), as it reads it.
  const auto& d = shard.doc;
  const std::string command = d["command"].get<std::string>();
  const std::uint64_t count = d["shard"]["count"].get<std::uint64_t>();
  if (count == 0 || count > explore::shards_max || shard.index >= count) fuzz::finding("a shard count or index out of range");
  (void)d["verdict"].get<std::string>();
  const bool explore = command == "explore";
  const auto counts = explore ? std::vector<const char*>{"executions", "cut", "steps", "replayed_steps", "snapshots", "states",
                                                         "transitions", "judged", "wall_ns", "choices", "choices_not_natural"}
                              : std::vector<const char*>{"runs", "wall_ns", "failing_run"};
  const auto texts = explore ? std::vector<const char*>{"bound", "counterexample", "worst_replay", "shrunk"}
                             : std::vector<const char*>{"scenario", "original", "trace", "detail"};
  for (const char* key : counts) {
    if (d.contains(key)) (void)d[key].get<std::uint64_t>();
  }
  for (const char* key : texts) {
    if (d.contains(key)) (void)d[key].get<std::string>();
  }
  if (d.contains("violated")) {
    for (const auto& v : d["violated"]) (void)v.get<std::string>();
  }
  if (command == "generate" && d["verdict"] == "found") (void)d["failing_run"].get<std::uint64_t>();
  return 0;
}
