#include "explore/generate.hpp"

#include <algorithm>
#include <cerrno>
#include <limits>
#include <memory>
#include <sstream>
#include <toml++/toml.h>

#include "checker/loop_properties.hpp"
#include "checker/suite.hpp"
#include "realloop/loop.hpp"
#include "base/assert.hpp"
#include "sim/world.hpp"

namespace loopsim::explore {

// ---------------------------------------------------------------------------------------------
// The search.

const char* verdict_name(GenerateResult::Verdict verdict) {
  switch (verdict) {
    case GenerateResult::Verdict::none_found: return "none_found";
    case GenerateResult::Verdict::found: return "found";
    case GenerateResult::Verdict::limit: return "limit";
  }
  return "?";
}

std::string generated_name(std::uint64_t seed, std::uint64_t run) {
  return "generated-s" + std::to_string(seed) + "-r" + std::to_string(run);
}

namespace {

class Search {
 public:
  explicit Search(const GenerateOptions& options) : options_(options), budget_(options.budget) {
    if (options_.wall_ns) started_ns_ = options_.wall_ns();
    budget_.out_of_time = [this] { return out_of_time(); };
  }

  GenerateResult run() {
    // Validates --set once, so that a bad one is reported as the user wrote it.
    sim::parse_scenario("[[clients]]\nname = \"c\"\n", "--set", options_.overrides);
    rc::Random random(options_.seed);
    auto gen = description_gen();
    for (std::uint64_t i = 0; i < options_.runs; ++i) {
      if (out_of_time()) {
        result_.verdict = GenerateResult::Verdict::limit;
        result_.out_of_time = true;
        return result_;
      }
      rc::Shrinkable<Description> drawn = gen(random.split(), rc::kNominalSize);
      if (i % options_.shards != options_.shard) continue;
      std::string name = generated_name(options_.seed, i);
      std::string text = scenario_text(drawn.value(), name, options_.overrides);
      Judged judged = judge_text(text, name, budget_);
      if (judged.verdict == Judged::Verdict::out_of_time) {
        result_.verdict = GenerateResult::Verdict::limit;
        result_.out_of_time = true;
        return result_;
      }
      ++result_.runs;
      count_oracle(sim::parse_scenario(text, name));
      if (judged.verdict == Judged::Verdict::bound) {
        ++result_.cut_runs;
        if (result_.first_cut.empty()) result_.first_cut = name + ": " + judged.detail;
      }
      report(false);
      if (!judged.failed()) continue;
      result_.verdict = GenerateResult::Verdict::found;
      result_.failing_run = i;
      result_.original = text;
      result_.clients_before = clients_of(drawn.value());
      shrink(std::move(drawn), name, std::move(judged));
      return result_;
    }
    if (result_.cut_runs > 0) result_.verdict = GenerateResult::Verdict::limit;
    return result_;
  }

 private:
  // RapidCheck's shrinking: take the first shrink that still fails the same way (one of the
  // properties first violated, or a livelock again), and start again from it, until none does.
  void shrink(rc::Shrinkable<Description> best, const std::string& name, Judged judged) {
    std::vector<std::string> first = judged.violated;
    auto same = [&first](const Judged& j) {
      return std::any_of(j.violated.begin(), j.violated.end(), [&](const std::string& p) {
        return std::find(first.begin(), first.end(), p) != first.end();
      });
    };
    std::string best_text = result_.original;
    for (bool shrunk = true; shrunk && !result_.shrink_cut;) {
      shrunk = false;
      rc::Seq<rc::Shrinkable<Description>> candidates = best.shrinks();
      while (rc::Maybe<rc::Shrinkable<Description>> candidate = candidates.next()) {
        if (result_.shrink_tries >= options_.max_shrinks || out_of_time()) {
          result_.shrink_cut = true;
          break;
        }
        ++result_.shrink_tries;
        report(true);
        std::string text = scenario_text(candidate->value(), name, options_.overrides);
        Judged j = judge_text(text, name, budget_);
        if (j.verdict == Judged::Verdict::out_of_time) {
          result_.shrink_cut = true;
          break;
        }
        if (!same(j)) continue;
        best = std::move(*candidate);
        best_text = std::move(text);
        judged = std::move(j);
        ++result_.shrink_steps;
        shrunk = true;
        break;
      }
    }
    result_.shrunk = best_text;
    result_.judged = std::move(judged);
    result_.clients_after = clients_of(best.value());
  }

  // What this run's oracle judged and left out, added to the search's counts.
  void count_oracle(const sim::Scenario& scenario) {
    Oracle o = oracle_of(scenario);
    for (const Oracle::Judged& j : o.judged) ++result_.coverage[j.property].judged;
    for (const Oracle::LeftOut& l : o.left_out) {
      Coverage& c = result_.coverage[l.property];
      ++c.left_out;
      ++c.why[l.why];
    }
  }

  bool out_of_time() const {
    return options_.time_limit_ns > 0 && options_.wall_ns &&
           options_.wall_ns() - started_ns_ >= options_.time_limit_ns;
  }

  void report(bool shrinking) {
    if (!options_.progress) return;
    const std::uint64_t n = options_.shards, share = options_.runs > options_.shard ? (options_.runs - options_.shard + n - 1) / n : 0;
    options_.progress(GenerateProgress{result_.runs, share, result_.shrink_tries, shrinking});
  }

  const GenerateOptions& options_;
  StepBudget budget_;  // options_.budget, with the time limit
  std::int64_t started_ns_ = 0;
  GenerateResult result_;
};

}  // namespace

GenerateResult generate(const GenerateOptions& options) { return Search(options).run(); }

}  // namespace loopsim::explore
