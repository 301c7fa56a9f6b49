// loopsim merge SHARD.json...: one result from the shards of one explore or generate search
// (--shard I/N, --json): verdicts, counts, the counterexample and the worst case.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <span>
#include <sstream>

#include "cli/commands.hpp"
#include "explore/shard_document.hpp"

namespace loopsim::cli {

namespace {

using Json = nlohmann::ordered_json;

struct MergeArgs {
  std::vector<std::string> files;
  std::string out;
  bool json = false;
};

using explore::shard_bytes_max;
using explore::shard_hint;
using explore::shards_max;
using Shard = explore::ShardDocument;

sim::ScenarioError bad(const std::string& file, const std::string& what, const std::string& hint) {
  return sim::ScenarioError(file + ":1:1: " + what, hint);
}

Shard read_shard(const std::string& file) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::file_status status = fs::status(file, error);
  if (error || !fs::exists(status)) throw bad(file, "cannot read the file", "give each shard's --json output");
  // A FIFO would block, a device would never end: only a file is a shard's document.
  if (!fs::is_regular_file(status)) throw bad(file, "not a regular file", "give each shard's --json output, saved to a file");
  if (fs::file_size(file, error) > shard_bytes_max || error) {
    throw bad(file, "larger than a shard's document can be (16 MiB)", shard_hint);
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) throw bad(file, "cannot read the file", "give each shard's --json output");
  std::string bytes(shard_bytes_max + 1, '\0');
  in.read(bytes.data(), std::streamsize(bytes.size()));
  bytes.resize(std::size_t(in.gcount()));
  if (bytes.size() > shard_bytes_max) throw bad(file, "larger than a shard's document can be (16 MiB)", shard_hint);
  return explore::parse_shard_document(file, bytes);
}

// Every shard of one search, once each: the same command, shard count and search.
void check_shards(const std::vector<Shard>& shards) {
  const Shard& first = shards.front();
  std::uint64_t count = first.doc["shard"]["count"];
  std::vector<const Shard*> by_index(count, nullptr);
  for (const Shard& s : shards) {
    if (s.doc["command"] != first.doc["command"]) {
      throw bad(s.file, "an " + s.doc["command"].get<std::string>() + " result among " +
                            first.doc["command"].get<std::string>() + " results (" + first.file + ")",
                "merge the shards of one search");
    }
    if (s.doc["shard"]["count"] != first.doc["shard"]["count"]) {
      throw bad(s.file, "shard " + s.doc["shard"]["index"].dump() + "/" + s.doc["shard"]["count"].dump() +
                            " among shards of " + std::to_string(count) + " (" + first.file + ")",
                "merge the shards of one search");
    }
    bool same_scenario = s.doc["command"] != "explore" || s.doc.value("scenario", Json()) == first.doc.value("scenario", Json());
    // The same search whatever order its keys were written in.
    bool same_search = nlohmann::json(s.doc["search"]) == nlohmann::json(first.doc["search"]);
    if (!same_search || !same_scenario) {
      std::string differ;
      for (auto& [key, value] : first.doc["search"].items()) {
        if (s.doc["search"].value(key, Json()) != value) {
          differ += (differ.empty() ? "" : ", ") + key + " " + s.doc["search"].value(key, Json()).dump() + " against " + value.dump();
        }
      }
      if (differ.empty()) differ = "scenario " + s.doc.value("scenario", Json()).dump();
      throw bad(s.file, "a different search from " + first.file + "'s: " + differ,
                "every shard runs the same command with the same options, but --shard");
    }
    if (s.index >= count) throw bad(s.file, "shard " + std::to_string(s.index) + " of " + std::to_string(count), shard_hint);
    if (by_index[s.index]) {
      throw bad(s.file, "shard " + std::to_string(s.index) + " again (also " + by_index[s.index]->file + ")",
                "give each shard's document once");
    }
    by_index[s.index] = &s;
  }
  std::string missing;
  std::size_t n = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (by_index[i]) continue;
    if (n++ < 10) missing += (missing.empty() ? "" : ", ") + std::to_string(i);
  }
  if (n > 0) {
    throw bad(first.file, std::to_string(n) + " of " + std::to_string(count) + " shards missing: " + missing +
                              (n > 10 ? ", ..." : ""),
              "a shard that did not finish wrote no document: run it again with the same options");
  }
}

// Counts summed over the shards; a sum past 2^64 is bad input, not a wrapped number.
std::uint64_t sum(const std::vector<Shard>& shards, const char* key) {
  std::uint64_t total = 0;
  for (const Shard& s : shards) {
    std::uint64_t v = s.doc.contains(key) ? s.doc[key].get<std::uint64_t>() : 0;
    if (__builtin_add_overflow(total, v, &total)) {
      throw bad(s.file, std::string("\"") + key + "\" summed over the shards passes 2^64", shard_hint);
    }
  }
  return total;
}

std::int64_t longest(const std::vector<Shard>& shards, const char* key) {
  std::int64_t most = 0;
  for (const Shard& s : shards) most = std::max(most, s.doc.value(key, std::int64_t(0)));
  return most;
}

// The verdict of the whole: the worst any shard reached, in the order `order` (first: worst).
std::string merged_verdict(const std::vector<Shard>& shards, const std::vector<std::string>& order) {
  for (const std::string& verdict : order) {
    for (const Shard& s : shards)
      if (s.doc["verdict"] == verdict) return verdict;
  }
  return order.back();
}

// Copies a file a shard wrote into --out, and says where it now is. Only a regular file inside
// the folder of the shard's document (or below it) is copied: a document names what its own
// search wrote, never /etc/passwd, and never through a symbolic link.
std::string carry(const MergeArgs& args, const std::string& path, const Shard& shard) {
  if (args.out.empty() || path.empty()) return path;
  namespace fs = std::filesystem;
  std::error_code e1, e2, e3;
  fs::path parent = fs::path(shard.file).parent_path();
  fs::path folder = fs::weakly_canonical(fs::current_path() / (parent.empty() ? fs::path(".") : parent), e1);
  fs::path target = fs::weakly_canonical(fs::current_path() / fs::path(path), e2);
  fs::file_status link = fs::symlink_status(path, e3);
  auto inside = [&] {
    if (folder.empty() || target.empty()) return false;
    auto f = folder.begin(), t = target.begin();
    for (; f != folder.end(); ++f, ++t) {
      if (f->empty()) break;  // a trailing separator
      if (t == target.end() || *f != *t) return false;
    }
    return true;
  };
  if (e1 || e2 || e3 || fs::is_symlink(link) || !fs::is_regular_file(link) || !inside()) {
    throw bad(shard.file, "it names " + path + ", which is not a file its search wrote (outside " + folder.string() +
                              ", a link, or not a regular file); merge copies nothing from elsewhere",
              "run merge on the documents the shards wrote, beside their --out folders");
  }
  fs::path to = fs::path(args.out) / fs::path(path).filename();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw bad("--out", "cannot copy " + path + " to " + to.string() + ": it cannot be read",
                     "run merge where the shards' --out folders can be read");
  // Written as every output is: never through a link planted in --out, never over an input.
  std::vector<std::string> inputs = args.files;
  inputs.push_back(path);
  write_output_file("--out", to.string(), [&](std::ostream& out) {
    if (in.peek() != std::ifstream::traits_type::eof()) out << in.rdbuf();  // an empty one would fail `out`
  }, inputs);
  return to.string();
}

void carry_sibling(const MergeArgs& args, const std::string& path, const std::string& from, const std::string& to,
                   const Shard& shard) {
  if (args.out.empty() || path.size() < from.size() || path.compare(path.size() - from.size(), from.size(), from) != 0) return;
  std::string sibling = path.substr(0, path.size() - from.size()) + to;
  if (std::filesystem::exists(sibling)) carry(args, sibling, shard);
}

Json merge_explore(const std::vector<Shard>& shards, const MergeArgs& args) {
  Json doc;
  const Json& first = shards.front().doc;
  doc["scenario"] = first.value("scenario", Json());
  doc["verdict"] = merged_verdict(shards, {"violated", "bound_reached", "none_found"});
  std::set<std::string> bounds;
  for (const Shard& s : shards)
    if (s.doc.contains("bound")) bounds.insert(s.doc["bound"].get<std::string>());
  if (!bounds.empty()) {
    std::string all;
    for (const std::string& b : bounds) all += (all.empty() ? "" : ", ") + b;
    doc["bound"] = all;
  }
  // Every DFS shard runs the first execution; only shard 0 counts it (explore/explorer.cpp).
  for (const char* key : {"executions", "cut", "steps", "replayed_steps", "snapshots"}) doc[key] = sum(shards, key);
  // By deviations: a level is finished only where every shard finished it. A shard that
  // searched everything (its completed level is its highest) holds no level back.
  if (first.contains("deviations_completed")) {
    std::int64_t completed = INT64_MAX;
    std::uint64_t most = 0;
    for (const Shard& s : shards) {
      const std::int64_t done = s.doc.value("deviations_completed", std::int64_t(-1));
      const std::uint64_t max = s.doc.value("deviations_max", std::uint64_t(0));
      most = std::max(most, max);
      if (done < std::int64_t(max)) completed = std::min(completed, done);
    }
    doc["deviations_completed"] = completed == INT64_MAX ? std::int64_t(most) : completed;
    doc["deviations_max"] = most;
  }
  // Shards share no visited set: a state two shards reach is counted by both.
  doc["states_summed"] = sum(shards, "states");
  doc["transitions_summed"] = sum(shards, "transitions");
  if (first.contains("maximize")) {
    doc["maximize"] = first["maximize"];
    const Shard* worst = nullptr;
    for (const Shard& s : shards) {
      if (!s.doc.contains("worst") || s.doc["worst"].is_null()) continue;
      if (!worst || s.doc["worst"].get<std::int64_t>() > worst->doc["worst"].get<std::int64_t>()) worst = &s;
    }
    doc["judged"] = sum(shards, "judged");
    if (worst) {
      doc["worst"] = worst->doc["worst"];
      doc["worst_text"] = worst->doc.value("worst_text", Json());
      doc["worst_shard"] = worst->index;
      doc["worst_execution"] = worst->doc.value("worst_execution", Json());
      doc["worst_replay"] = carry(args, worst->doc.value("worst_replay", std::string()), *worst);
    } else {
      doc["worst"] = nullptr;
    }
  }
  const Shard* found = nullptr;  // the lowest shard that found one
  std::set<std::string> violated;
  for (const Shard& s : shards) {
    if (!s.doc.contains("counterexample")) continue;
    if (!found) found = &s;
    for (const auto& v : s.doc.value("violated", Json::array())) violated.insert(v.get<std::string>());
  }
  if (found) {
    std::string path = found->doc["counterexample"];
    doc["counterexample"] = carry(args, path, *found);
    carry_sibling(args, path, ".toml", ".dot", *found);
    doc["counterexample_shard"] = found->index;
    doc["violated"] = violated;
    for (const char* key : {"choices", "choices_not_natural", "shrunk"})
      if (found->doc.contains(key)) doc[key] = found->doc[key];
  }
  return doc;
}

Json merge_generate(const std::vector<Shard>& shards, const MergeArgs& args) {
  Json doc;
  const Json& first = shards.front().doc;
  doc["seed"] = first.value("seed", Json());
  doc["verdict"] = merged_verdict(shards, {"found", "limit", "none_found"});
  doc["runs"] = sum(shards, "runs");
  doc["runs_requested"] = first.value("runs_requested", Json());
  // The first failing run is the unsharded search's failure: every run before it is in some
  // shard, and each shard stops at its own first.
  const Shard* found = nullptr;
  for (const Shard& s : shards) {
    if (s.doc["verdict"] != "found") continue;
    if (!found || s.doc["failing_run"].get<std::uint64_t>() < found->doc["failing_run"].get<std::uint64_t>()) found = &s;
  }
  if (found) {
    doc["failing_shard"] = found->index;
    for (const char* key : {"failing_run", "livelock", "violated", "detail", "clients_before", "clients_after",
                            "shrink_steps", "shrink_tries", "shrink_cut"}) {
      if (found->doc.contains(key)) doc[key] = found->doc[key];
    }
    for (const char* key : {"scenario", "original", "trace"}) {
      if (found->doc.contains(key)) doc[key] = carry(args, found->doc[key].get<std::string>(), *found);
    }
    doc["replay"] = "loopsim run " + doc["scenario"].get<std::string>();
  }
  return doc;
}

int merge(const MergeArgs& args) {
  if (!args.out.empty()) make_output_folder("--out", args.out);
  std::vector<Shard> shards;
  for (const std::string& file : args.files) shards.push_back(read_shard(file));
  check_shards(shards);
  std::sort(shards.begin(), shards.end(), [](const Shard& a, const Shard& b) { return a.index < b.index; });
  bool explore = shards.front().doc["command"] == "explore";
  Json doc = explore ? merge_explore(shards, args) : merge_generate(shards, args);
  doc["shards"] = shards.size();
  doc["wall_ns"] = longest(shards, "wall_ns");  // the slowest shard's: they ran side by side
  doc["wall_ns_summed"] = sum(shards, "wall_ns");
  doc["command"] = shards.front().doc["command"];
  doc["search"] = shards.front().doc["search"];
  std::string verdict = doc["verdict"];
  if (args.json) {
    std::cout << doc.dump(2) << '\n';
  } else {
    std::cout << "merge of " << shards.size() << " " << doc["command"].get<std::string>() << " shards\n";
    for (auto& [key, value] : doc.items()) {
      if (key != "command" && key != "search") std::cout << "  " << key << ": " << value.dump() << '\n';
    }
    if (doc.contains("counterexample")) std::cout << "replay: loopsim run " << doc["counterexample"].get<std::string>() << '\n';
    if (doc.contains("replay")) std::cout << "replay: " << doc["replay"].get<std::string>() << '\n';
    if (doc.contains("worst_replay") && !doc["worst_replay"].get<std::string>().empty())
      std::cout << "worst case: loopsim run " << doc["worst_replay"].get<std::string>() << '\n';
  }
  if (verdict == "violated" || verdict == "found") return exit_violated;
  if (verdict == "bound_reached" || verdict == "limit") return exit_bound_reached;
  return exit_held;
}

}  // namespace

void add_merge(CLI::App& app, int& status) {
  auto args = std::make_shared<MergeArgs>();
  auto* cmd = app.add_subcommand("merge", "Combine the --json results of a search's shards (explore or generate --shard I/N)");
  cmd->add_option("files", args->files, "Each shard's --json document, once each, all N of them")->required()->check(non_empty);
  cmd->add_option("--out", args->out, "Copy the counterexample or worst case the merge names into this folder");
  cmd->add_flag("--json", args->json, "Print one JSON document");
  cmd->footer(
      "The shards must be one search: the same command and options, --shard 0/N to N-1/N, each\n"
      "once. The merged verdict is the worst any shard reached. Counts add up; the first DFS\n"
      "execution, which every shard runs to deal out its alternatives, is counted once. States and\n"
      "transitions are summed (states_summed): shards share no visited set, so a state two shards\n"
      "reach counts twice. The counterexample is the lowest shard's; generate's failure is the\n"
      "lowest failing run, which is the one the unsharded search stops at. With --maximize the\n"
      "worst case is the largest any shard measured.\n\n"
      "Exit status:\n"
      "  0  no shard found anything, and every shard's search was exhaustive\n"
      "  1  a shard found a violation (explore) or a failure (generate)\n"
      "  2  bad input: a file that is not a shard's result, a mix of searches, a shard missing or twice\n"
      "  3  nothing found, but some shard's search was cut short: this proves nothing");
  cmd->callback([args, &status] {
    try {
      status = merge(*args);
    } catch (const sim::ScenarioError& e) {
      status = report_error(e);
    } catch (const nlohmann::json::exception& e) {  // a field read_shard does not check: still bad input
      status = report_error(sim::ScenarioError(std::string("merge:1:1: a shard's document has a field of the wrong shape: ") + e.what(),
                                               shard_hint));
    }
  });
}

}  // namespace loopsim::cli
