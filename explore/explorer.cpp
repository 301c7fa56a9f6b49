#include "explore/explorer.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/strong_components.hpp>
#include <unordered_map>

#include "realloop/assert.hpp"

namespace loopsim::explore {

namespace {

// Follows a prefix of picks, then takes the natural alternative, and records every decision.
class PrefixChooser final : public model::Chooser {
 public:
  explicit PrefixChooser(std::vector<std::uint32_t> prefix) : prefix_(std::move(prefix)) {}
  std::uint32_t choose(model::ChoiceKind kind, std::uint32_t options) override {
    std::size_t i = made_.size();
    std::uint32_t pick = i < prefix_.size() ? std::min(prefix_[i], options - 1) : 0;
    made_.push_back(model::Choice{kind, options, pick});
    return pick;
  }
  const std::vector<model::Choice>& made() const { return made_; }
  std::size_t prefix_size() const { return prefix_.size(); }

 private:
  std::vector<std::uint32_t> prefix_;
  std::vector<model::Choice> made_;
};

// Records the decisions of another chooser.
class Recorder final : public model::Chooser {
 public:
  explicit Recorder(model::Chooser& inner) : inner_(inner) {}
  std::uint32_t choose(model::ChoiceKind kind, std::uint32_t options) override {
    std::uint32_t pick = inner_.choose(kind, options);
    made_.push_back(model::Choice{kind, options, pick});
    return pick;
  }
  const std::vector<model::Choice>& made() const { return made_; }

 private:
  model::Chooser& inner_;
  std::vector<model::Choice> made_;
};

struct Node {
  bool backlog = false;   // a connection waits in the accept queue
  bool expanded = false;  // its alternatives were branched on
  std::uint64_t execution = 0;  // the first execution that reached it
  Nanos first_time{0};          // the virtual time it was first reached at
  bool quiescent = false;       // an execution ended here with nothing left to happen
};

struct Edge {
  std::size_t from, to;
  bool accepted;  // a connection was accepted on the way
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;

class Explorer {
 public:
  Explorer(const System& system, const ExploreOptions& options) : system_(system), options_(options) {}

  ExploreResult run();

 private:
  std::size_t intern(std::uint64_t digest, bool backlog, Nanos now);
  // One execution: its decisions, and how it ended (nothing, if it was stopped early).
  Outcome execute(model::Chooser& chooser, const std::vector<model::Choice>& made,
                                   std::size_t replayed, std::optional<std::size_t> from,
                                   std::vector<std::uint64_t>& path);
  void branch(const std::vector<model::Choice>& made, std::size_t from, std::size_t to, std::size_t node);
  std::optional<std::string> out_of_bounds();
  bool out_of_time();
  void find_stranding();
  void report_progress(bool force);
  void note_worst(const Outcome& outcome, const std::vector<model::Choice>& choices);

  const System& system_;
  const ExploreOptions& options_;
  ExploreResult result_;
  std::unordered_map<std::uint64_t, std::size_t> index_;  // digest -> node (never iterated)
  std::vector<std::uint64_t> digests_;
  std::vector<Node> nodes_;
  std::vector<Edge> edges_;
  // A prefix of picks to replay, and the state its last pick is taken in.
  struct Branch {
    std::vector<std::uint32_t> prefix;
    std::size_t from;
  };
  std::vector<Branch> stack_;
  std::vector<std::vector<model::Choice>> runs_;  // each execution's decisions
  std::uint64_t root_alternatives_ = 0;
  bool depth_cut_ = false;
  std::int64_t started_ns_ = 0;
  std::int64_t last_progress_ns_ = 0;
  std::optional<std::string> cut_;  // a limit met inside an execution
};

std::size_t Explorer::intern(std::uint64_t digest, bool backlog, Nanos now) {
  auto [it, inserted] = index_.try_emplace(digest, nodes_.size());
  if (inserted) {
    digests_.push_back(digest);
    nodes_.push_back(Node{backlog, false, result_.executions, now});
  }
  return it->second;
}

// Alternatives for decisions [from, to) of this execution: each a prefix that takes another
// pick there. Pushed last-first, so the first decision's alternatives run first.
void Explorer::branch(const std::vector<model::Choice>& made, std::size_t from, std::size_t to,
                      std::size_t node) {
  for (std::size_t p = to; p-- > from;) {
    if (p >= options_.depth) {
      depth_cut_ = true;
      continue;
    }
    for (std::uint32_t alt = made[p].options; alt-- > 0;) {
      if (alt == made[p].pick) continue;
      std::vector<std::uint32_t> prefix;
      prefix.reserve(p + 1);
      for (std::size_t i = 0; i < p; ++i) prefix.push_back(made[i].pick);
      prefix.push_back(alt);
      stack_.push_back(Branch{std::move(prefix), node});
    }
  }
}

Outcome Explorer::execute(model::Chooser& chooser,
                                           const std::vector<model::Choice>& made,
                                           std::size_t replayed, std::optional<std::size_t> from,
                                           std::vector<std::uint64_t>& path) {
  std::unique_ptr<Execution> execution = system_.start(chooser);
  // While the execution replays its prefix it retraces its parent's states, which are in the
  // graph already: they are not digested again. `from` is the state the prefix's last decision
  // was taken in, where this execution leaves its parent's path.
  std::optional<std::size_t> previous = from;
  std::uint64_t accepted_before = 0;
  bool cut = options_.cut && options_.prune && options_.maximize.empty() && system_.judged_by_state();
  for (std::uint64_t steps = 0;; ++steps) {
    bool replaying = made.size() < replayed;
    std::uint64_t accepted = execution->accepted();
    std::size_t node = from.value_or(0);
    if (!replaying) {
      std::uint64_t digest = execution->digest();
      Nanos now = execution->now();
      node = intern(digest, execution->backlog(), now);
      path.push_back(digest);
      if (previous) edges_.push_back(Edge{*previous, node, accepted > accepted_before});
      previous = node;
      // Past the prefix, at a state an earlier execution reached at this same instant: from
      // here on this execution is that one, and so is its verdict.
      const Node& n = nodes_[node];
      if (cut && replayed > 0 && n.execution < result_.executions && n.first_time == now) {
        ++result_.cut;
        return {};
      }
    }
    accepted_before = accepted;
    // One execution can be long (a flood, a spin): the limits are checked inside it too.
    if (steps % 1024 == 1023 && out_of_time()) {
      cut_ = "time limit";
      return {};
    }
    if (options_.max_steps > 0 && steps >= options_.max_steps) {
      cut_ = "max steps";
      return {};
    }
    std::size_t before = made.size();
    bool fresh = !nodes_[node].expanded;
    if (!execution->step()) break;
    // Branch on this step's decisions if the state is new here (or pruning is off), and past
    // the prefix this execution replays.
    if ((fresh || !options_.prune) && made.size() > std::max(before, replayed)) {
      nodes_[node].expanded = true;
      branch(made, std::max(before, replayed), made.size(), node);
    }
  }
  if (execution->quiescent() && previous) nodes_[*previous].quiescent = true;
  return execution->finish();
}

void Explorer::note_worst(const Outcome& outcome, const std::vector<model::Choice>& choices) {
  for (const checker::Verdict& v : outcome.verdicts) {
    if (v.property != options_.maximize || (!options_.maximize_of.empty() && v.of != options_.maximize_of)) continue;
    ++result_.judged;
    if (!result_.worst || v.measured > result_.worst->measured) {
      result_.worst = Worst{v.measured, v, choices, result_.executions};
    }
    return;
  }
}

std::optional<std::string> Explorer::out_of_bounds() {
  if (result_.executions >= options_.max_executions) return "max executions";
  if (nodes_.size() >= options_.max_states) return "max states";
  if (out_of_time()) return "time limit";
  return std::nullopt;
}

bool Explorer::out_of_time() {
  return options_.time_limit_ns > 0 && options_.wall_ns &&
         options_.wall_ns() - started_ns_ >= options_.time_limit_ns;
}

void Explorer::report_progress(bool force) {
  if (!options_.progress || !options_.wall_ns) return;
  std::int64_t now = options_.wall_ns();
  if (!force && now - last_progress_ns_ < 200'000'000) return;
  last_progress_ns_ = now;
  options_.progress(ExploreProgress{result_.executions, nodes_.size(), edges_.size(), stack_.size()});
}

// Liveness: a bottom strongly connected component (a cycle, or a dead end) in which every state
// has a backlog and no transition accepts: once there, the backlog is never taken.
void Explorer::find_stranding() {
  Graph graph(nodes_.size());
  for (const Edge& e : edges_) boost::add_edge(e.from, e.to, graph);
  std::vector<std::size_t> component(nodes_.size());
  std::size_t count = boost::strong_components(graph, &component[0]);
  std::vector<bool> leaves(count, false), accepts(count, false), clear(count, false);
  std::vector<bool> cyclic(count, false), dead_end(count, false);
  for (const Edge& e : edges_) {
    if (component[e.from] != component[e.to]) leaves[component[e.from]] = true;
    if (component[e.from] == component[e.to]) {
      cyclic[component[e.from]] = true;
      if (e.accepted) accepts[component[e.from]] = true;
    }
  }
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    if (!nodes_[n].backlog) clear[component[n]] = true;
    if (nodes_[n].quiescent) dead_end[component[n]] = true;
  }
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    std::size_t c = component[n];
    // A state with no way out is a failure only where the world stood still; one where an
    // execution was stopped (the horizon, a limit) has successors nobody ran.
    if (leaves[c] || accepts[c] || clear[c] || !(cyclic[c] || dead_end[c])) continue;
    Counterexample cex;
    cex.choices = runs_.at(nodes_[n].execution);
    cex.violated = {"liveness"};
    cex.detail = "a backlog waits in a cycle (or dead end) of states in which nothing is accepted";
    result_.counterexample = std::move(cex);
    result_.verdict = ExploreResult::Verdict::violated;
    return;
  }
}

ExploreResult Explorer::run() {
  started_ns_ = options_.wall_ns ? options_.wall_ns() : 0;
  std::uint64_t seed = options_.seed_first;
  bool random = options_.strategy == ExploreOptions::Strategy::random;
  std::optional<Branch> root;
  if (!random) root = Branch{};
  for (;;) {
    if (random ? seed > options_.seed_last : !root && stack_.empty()) break;
    if (auto bound = out_of_bounds()) {
      result_.verdict = ExploreResult::Verdict::bound_reached;
      result_.bound = *bound;
      break;
    }
    std::vector<std::uint64_t> path;
    Outcome outcome;
    if (random) {
      model::SeededChooser seeded(seed++);
      Recorder chooser(seeded);
      runs_.push_back({});
      outcome = execute(chooser, chooser.made(), 0, std::nullopt, path);
      runs_.back() = chooser.made();
    } else {
      std::vector<std::uint32_t> prefix;
      std::optional<std::size_t> from;
      if (root) {
        root.reset();
      } else {
        from = stack_.back().from;
        prefix = std::move(stack_.back().prefix);
        stack_.pop_back();
      }
      PrefixChooser chooser(prefix);
      runs_.push_back({});
      std::size_t stack_before = stack_.size();
      outcome = execute(chooser, chooser.made(), prefix.size(), from, path);
      runs_.back() = chooser.made();
      // Sharding: the root's alternatives are dealt round robin; each shard keeps its own.
      if (result_.executions == 0 && options_.shards > 1) {
        std::vector<Branch> mine;
        for (std::size_t i = stack_before; i < stack_.size(); ++i) {
          if ((i - stack_before) % options_.shards == options_.shard) mine.push_back(std::move(stack_[i]));
        }
        stack_.resize(stack_before);
        for (auto& p : mine) stack_.push_back(std::move(p));
      }
    }
    ++result_.executions;
    report_progress(false);
    if (cut_) {
      result_.verdict = ExploreResult::Verdict::bound_reached;
      result_.bound = *cut_;
      break;
    }
    if (!options_.maximize.empty()) {
      note_worst(outcome, runs_.back());
      continue;  // every execution is measured; none ends the search
    }
    const std::vector<std::string>& violated = outcome.violated;
    if (!violated.empty()) {
      result_.verdict = ExploreResult::Verdict::violated;
      // The path from the start (the execution did not digest the prefix it replayed).
      result_.counterexample = Counterexample{runs_.back(), violated, "", path_of(system_, runs_.back())};
      break;
    }
  }
  if (result_.verdict != ExploreResult::Verdict::violated && options_.maximize.empty()) find_stranding();
  if (result_.verdict == ExploreResult::Verdict::none_found && depth_cut_) {
    result_.verdict = ExploreResult::Verdict::bound_reached;
    result_.bound = "depth";
  }
  // A random search samples: however many seeds it ran, it has not seen every schedule.
  if (result_.verdict == ExploreResult::Verdict::none_found && random) {
    result_.verdict = ExploreResult::Verdict::bound_reached;
    result_.bound = "seeds";
  }
  result_.states = nodes_.size();
  result_.transitions = edges_.size();
  report_progress(true);
  return result_;
}

}  // namespace

const char* verdict_name(ExploreResult::Verdict verdict) {
  switch (verdict) {
    case ExploreResult::Verdict::violated: return "violated";
    case ExploreResult::Verdict::none_found: return "none_found";
    case ExploreResult::Verdict::bound_reached: return "bound_reached";
  }
  return "?";
}

ExploreResult search(const System& system, const ExploreOptions& options) {
  Explorer explorer(system, options);
  return explorer.run();
}

ExploreResult search(const sim::Scenario& scenario, const checker::Costs& costs,
                     const ExploreOptions& options) {
  return search(*world_system(scenario, costs, options.symmetry), options);
}

}  // namespace loopsim::explore
