#include "explore/shaped.hpp"

#include <algorithm>
#include <sstream>
#include <toml++/toml.h>

#include "model/choice.hpp"
#include "scenario/scenario.hpp"
#include "scenario/toml_writer.hpp"

namespace loopsim::explore {

namespace {

int clients_in(const std::string& text) {
  toml::table doc = toml::parse(text);
  int n = 0;
  if (const toml::array* groups = doc.get_as<toml::array>("clients")) {
    for (const toml::node& g : *groups) n += int(g.as_table()->get_as<std::int64_t>("count") ? **g.as_table()->get_as<std::int64_t>("count") : 1);
  }
  return n;
}

// One smaller version of a failing scenario: a group with half its clients, or a group or a
// fault left out (actions stay: a drain judged needs its stop).
struct Edit {
  enum class Kind : std::uint8_t { halve_group, drop_group, drop_fault };
  Kind kind;
  std::size_t index;
};

// The edits worth trying on `doc`, in the order they are tried. Only the edits are listed; each
// candidate is made when it is tried (a shape of thousands of groups has thousands of
// candidates, each as long as the shape: all at once took a gigabyte).
std::vector<Edit> smaller_edits(const toml::table& doc) {
  std::vector<Edit> out;
  if (const toml::array* groups = doc.get_as<toml::array>("clients")) {
    for (std::size_t g = 0; g < groups->size(); ++g) {
      const auto* count = groups->get(g)->as_table()->get_as<std::int64_t>("count");
      if (count != nullptr && **count > 1) out.push_back({Edit::Kind::halve_group, g});
      if (groups->size() > 1) out.push_back({Edit::Kind::drop_group, g});
    }
  }
  if (const toml::array* faults = doc.get_as<toml::array>("faults")) {
    for (std::size_t i = 0; i < faults->size(); ++i) out.push_back({Edit::Kind::drop_fault, i});
  }
  return out;
}

// The candidate: `doc` (a copy) with `edit` made, as text.
std::string applied(toml::table doc, Edit edit) {
  switch (edit.kind) {
    case Edit::Kind::halve_group: {
      toml::table& group = *doc.get_as<toml::array>("clients")->get(edit.index)->as_table();
      group.insert_or_assign("count", **group.get_as<std::int64_t>("count") / 2);
      break;
    }
    case Edit::Kind::drop_group: {
      toml::array& groups = *doc.get_as<toml::array>("clients");
      groups.erase(groups.begin() + std::ptrdiff_t(edit.index));
      break;
    }
    case Edit::Kind::drop_fault: {
      toml::array& faults = *doc.get_as<toml::array>("faults");
      faults.erase(faults.begin() + std::ptrdiff_t(edit.index));
      if (faults.empty()) doc.erase("faults");
      break;
    }
  }
  return sim::toml_text(doc) + '\n';
}

bool same_failure(const Judged& a, const Judged& b) { return b.failed() && a.violated == b.violated; }

// One varied run. An error (a target's that `loopsim run` reports with exit 2) is first looked
// for in the file as written, so that one of its own is reported as run reports it, at the
// user's line and column; only an error of the variation alone is reported as the run's.
Judged judged_run(const std::string& text, const std::string& shape, const std::string& file, std::uint64_t run,
                  const StepBudget& budget) {
  try {
    return judge_text(text, file, budget);
  } catch (const sim::ScenarioError& varied) {
    judge_text(shape, file, budget);
    throw sim::ScenarioError(varied.what(), varied.hint + " (run " + std::to_string(run) +
                                                 " varied the file; as written, it runs without this error)");
  }
}

}  // namespace

namespace {

// What a varied run judged of the shape's [[expect]] entries, a property once a run: each, but
// shutdown_clean where the variation left no stop in the run (its signals and shutdowns drawn
// away).
void count_judged(const sim::Scenario& shape, const sim::Scenario& ran, std::map<std::string, Coverage>& coverage) {
  std::map<std::string, bool> kept;  // property -> judged in this run
  for (const sim::Expectation& e : shape.expect) {
    bool& judged = kept[e.property];
    judged = judged || std::any_of(ran.expect.begin(), ran.expect.end(),
                                   [&](const sim::Expectation& r) { return r.property == e.property && r.of == e.of; });
  }
  for (const auto& [property, judged] : kept) {
    Coverage& c = coverage[property];
    if (judged) {
      ++c.judged;
    } else {
      ++c.left_out;
      ++c.why["no stop left in the run (its signals and shutdowns varied away)"];
    }
  }
}

}  // namespace

GenerateResult generate_shaped(const std::string& shape, const std::string& file, const GenerateOptions& options) {
  GenerateResult result;
  const std::string name = file;
  const std::int64_t started = options.wall_ns ? options.wall_ns() : 0;
  auto elapsed_past = [&] { return options.time_limit_ns > 0 && options.wall_ns && options.wall_ns() - started >= options.time_limit_ns; };
  StepBudget budget = options.budget;
  budget.out_of_time = elapsed_past;
  // Read once, not once a run: a shape of 20,000 actions takes half a second to load.
  const sim::Scenario base = sim::parse_scenario(shape, file);  // the shape must load as it is
  const toml::table doc = shape_document(shape, file);
  for (std::uint64_t run = 0; run < options.runs; ++run) {
    if (run % options.shards != options.shard) continue;
    if (elapsed_past()) {
      result.out_of_time = true;
      result.verdict = GenerateResult::Verdict::limit;
      return result;
    }
    const std::string text = varied(base, doc, options.seed, run);
    Judged j = judged_run(text, shape, name, run, budget);
    if (j.verdict == Judged::Verdict::out_of_time) {
      result.out_of_time = true;
      result.verdict = GenerateResult::Verdict::limit;
      return result;
    }
    ++result.runs;
    count_judged(base, sim::parse_scenario(text, name), result.coverage);
    if (options.progress) options.progress(GenerateProgress{run + 1, options.runs, 0, false});
    if (!j.failed()) continue;
    result.verdict = GenerateResult::Verdict::found;
    result.failing_run = run;
    result.original = text;
    result.clients_before = clients_in(text);
    std::string best = text;
    Judged best_judged = j;
    for (bool shrunk = true; shrunk && !result.shrink_cut;) {
      shrunk = false;
      const toml::table best_doc = toml::parse(best);
      for (const Edit& edit : smaller_edits(best_doc)) {
        if (result.shrink_tries >= options.max_shrinks || elapsed_past()) {
          result.shrink_cut = true;
          break;
        }
        ++result.shrink_tries;
        if (options.progress) options.progress(GenerateProgress{run + 1, options.runs, result.shrink_tries, true});
        const std::string candidate = applied(best_doc, edit);
        Judged c;
        try {
          c = judge_text(candidate, name, budget);
        } catch (const sim::ScenarioError&) {
          continue;  // a group an expectation names was left out: not a smaller failure
        }
        if (c.verdict == Judged::Verdict::out_of_time) {
          result.shrink_cut = true;
          break;
        }
        if (!same_failure(j, c)) continue;
        best = candidate;
        best_judged = c;
        ++result.shrink_steps;
        shrunk = true;
        break;
      }
    }
    result.shrunk = best;
    result.judged = best_judged;
    result.clients_after = clients_in(best);
    return result;
  }
  return result;
}

}  // namespace loopsim::explore
