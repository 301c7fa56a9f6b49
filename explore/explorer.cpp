#include "explore/explorer.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/strong_components.hpp>
#include <unordered_map>

#include "explore/runner.hpp"
#include "base/assert.hpp"

namespace loopsim::explore {

namespace {

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
  // A prefix of decisions to take (the last one an alternative), the state its last decision is
  // taken in (none for the first execution), and the nearest snapshot before it: taken before
  // decision base_at (none: from time 0).
  struct Branch {
    std::vector<model::Choice> prefix;
    std::optional<std::size_t> from;
    std::shared_ptr<Snapshot> base;
    std::size_t base_at = 0;
  };
  // The snapshots along the running execution's path, by the decision they precede.
  struct Base {
    std::size_t at;
    std::shared_ptr<Snapshot> snapshot;
  };

  std::size_t intern(std::uint64_t digest, bool backlog, Nanos now);
  // One execution from `start`: its decisions go to `made`, and how it ended is returned
  // (nothing, if it was stopped early).
  Outcome execute(Branch start, std::vector<model::Choice>& made);
  // The decisions of a report's step, made in state `node`; branched on from index `lower`.
  void take(const Report& report, std::vector<model::Choice>& made, std::size_t node, bool fresh,
            std::size_t lower);
  void branch(const std::vector<model::Choice>& made, std::size_t from, std::size_t to, std::size_t node);
  std::uint32_t snapshots_allowed() const;
  std::optional<std::string> out_of_bounds();
  bool out_of_time();
  void find_stranding();
  void report_progress(bool force);
  void note_worst(const Outcome& outcome, const std::vector<model::Choice>& choices);

  const System& system_;
  const ExploreOptions& options_;
  // Declared before the branches, whose snapshots it must outlive.
  std::unique_ptr<Runners> runners_;
  ExploreResult result_;
  std::unordered_map<std::uint64_t, std::size_t> index_;  // digest -> node (never iterated)
  std::vector<std::uint64_t> digests_;
  std::vector<Node> nodes_;
  std::vector<Edge> edges_;
  std::vector<Branch> stack_;
  std::vector<std::vector<model::Choice>> runs_;  // each execution's decisions
  std::vector<Base> bases_;                       // the running execution's
  bool random_ = false;
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
    // The nearest snapshot before decision p on this path.
    auto base = std::find_if(bases_.rbegin(), bases_.rend(), [p](const Base& b) { return b.at <= p; });
    for (std::uint32_t alt = made[p].options; alt-- > 0;) {
      if (alt == made[p].pick) continue;
      std::vector<model::Choice> prefix(made.begin(), made.begin() + static_cast<std::ptrdiff_t>(p) + 1);
      prefix.back().pick = alt;
      if (base == bases_.rend()) {
        stack_.push_back(Branch{std::move(prefix), node, nullptr, 0});
      } else {
        stack_.push_back(Branch{std::move(prefix), node, base->snapshot, base->at});
      }
    }
  }
}

// How many snapshots an execution may take, as long as it runs.
std::uint32_t Explorer::snapshots_allowed() const { return runners_->room(); }

void Explorer::take(const Report& report, std::vector<model::Choice>& made, std::size_t node, bool fresh,
                    std::size_t lower) {
  LOOPSIM_ASSERT_OP(report.first, <=, made.size());
  made.resize(report.first);
  made.insert(made.end(), report.decisions.begin(), report.decisions.end());
  for (std::size_t i = 0; i < report.snapshots.size(); ++i) {
    if (report.snapshots[i]) bases_.push_back(Base{report.first + i, report.snapshots[i]});
  }
  // Branch on this step's decisions if the state is new here (or pruning is off), past the
  // prefix this execution was started with.
  if (!random_ && (fresh || !options_.prune) && made.size() > lower) {
    nodes_[node].expanded = true;
    branch(made, lower, made.size(), node);
  }
}

Outcome Explorer::execute(Branch start, std::vector<model::Choice>& made) {
  Report r;
  std::unique_ptr<Runner> runner =
      random_ ? seeded_runner(system_, options_.seed_first + options_.shard + result_.executions * options_.shards, r)
              : runners_->begin(start.prefix, start.base, start.base_at, snapshots_allowed(), r);
  bases_.clear();
  if (start.base) bases_.push_back(Base{start.base_at, std::move(start.base)});
  made = start.prefix;
  result_.steps += r.steps;
  result_.replayed_steps += r.replayed;
  // The first report of an execution that leaves its parent's path is the state after the step
  // that took its prefix's last decision, in state `from`; whatever that step decided after it
  // is branched on as the parent would have (it branched on the step, so the state was fresh).
  std::optional<std::size_t> previous = start.from;
  if (start.from) take(r, made, *start.from, true, start.prefix.size());
  bool cut = options_.cut && options_.prune && options_.maximize.empty() && system_.judged_by_state();
  for (;;) {
    std::size_t node = intern(r.digest, r.backlog, r.now);
    if (previous) edges_.push_back(Edge{*previous, node, r.accepted > r.accepted_before});
    previous = node;
    // Past the prefix, at a state an earlier execution reached at this same instant: from
    // here on this execution is that one, and so is its verdict.
    const Node& n = nodes_[node];
    if (cut && start.from && n.execution < result_.executions && n.first_time == r.now) {
      ++result_.cut;
      return {};
    }
    // One execution can be long (a flood, a spin): the limits are checked inside it too.
    if (r.steps % 1024 == 1023 && out_of_time()) {
      cut_ = "time limit";
      return {};
    }
    if (options_.max_steps > 0 && r.steps >= options_.max_steps) {
      cut_ = "max steps";
      return {};
    }
    bool fresh = !nodes_[node].expanded;
    r = runner->step(!random_ && (fresh || !options_.prune) ? snapshots_allowed() : 0);
    ++result_.steps;
    if (!r.stepped) break;
    take(r, made, node, fresh, r.first);
  }
  if (r.quiescent && previous) nodes_[*previous].quiescent = true;
  return runner->finish();
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
  if (nodes_.empty()) return;  // a limit met before the first state
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
  random_ = options_.strategy == ExploreOptions::Strategy::random;
  if (!random_) {
    ForkingOptions forking;
    forking.depth = options_.depth;
    forking.limit = options_.snapshots;
    forking.steps = options_.snapshot_steps;
    runners_ = options_.snapshots > 0 && system_.forkable() ? forking_runners(system_, forking) : replaying_runners(system_);
  }
  // A random search's shard takes every shards-th seed, from the shard-th.
  std::uint64_t all_seeds = random_ && options_.seed_last >= options_.seed_first
                                ? options_.seed_last - options_.seed_first + 1 : 0;
  std::uint64_t seeds = all_seeds > options_.shard ? (all_seeds - options_.shard + options_.shards - 1) / options_.shards : 0;
  bool root = !random_;
  for (;;) {
    if (random_ ? result_.executions >= seeds : !root && stack_.empty()) break;
    if (auto bound = out_of_bounds()) {
      result_.verdict = ExploreResult::Verdict::bound_reached;
      result_.bound = *bound;
      break;
    }
    Outcome outcome;
    runs_.push_back({});
    // Every DFS shard runs the first execution, to learn the alternatives it deals out; only
    // shard 0 counts it, so that the shards' counts add up to the unsharded search's.
    bool counted = true;
    if (random_ || root) {
      counted = random_ || options_.shard == 0;
      root = false;
      std::size_t stack_before = stack_.size();
      std::uint64_t steps_before = result_.steps, replayed_before = result_.replayed_steps;
      outcome = execute(Branch{}, runs_.back());
      if (!counted) {
        result_.steps = steps_before;
        result_.replayed_steps = replayed_before;
      }
      // Sharding: the root's alternatives are dealt round robin; each shard keeps its own.
      if (!random_ && options_.shards > 1) {
        std::vector<Branch> mine;
        for (std::size_t i = stack_before; i < stack_.size(); ++i) {
          if ((i - stack_before) % options_.shards == options_.shard) mine.push_back(std::move(stack_[i]));
        }
        stack_.resize(stack_before);
        for (auto& p : mine) stack_.push_back(std::move(p));
      }
    } else {
      Branch next = std::move(stack_.back());
      stack_.pop_back();
      outcome = execute(std::move(next), runs_.back());
    }
    if (counted) ++result_.executions;
    report_progress(false);
    if (cut_) {
      result_.verdict = ExploreResult::Verdict::bound_reached;
      result_.bound = *cut_;
      break;
    }
    if (!options_.maximize.empty()) {
      if (counted) note_worst(outcome, runs_.back());
      continue;  // every execution is measured; none ends the search
    }
    const std::vector<std::string>& violated = outcome.violated;
    if (!violated.empty()) {
      result_.verdict = ExploreResult::Verdict::violated;
      // The path from the start (the execution did not digest the prefix it replayed).
      std::string detail = "violated";
      for (const std::string& name : violated) detail += " " + name;
      result_.counterexample = Counterexample{runs_.back(), violated, detail, path_of(system_, runs_.back())};
      break;
    }
  }
  if (result_.verdict != ExploreResult::Verdict::violated && options_.maximize.empty()) find_stranding();
  if (result_.verdict == ExploreResult::Verdict::none_found && depth_cut_) {
    result_.verdict = ExploreResult::Verdict::bound_reached;
    result_.bound = "depth";
  }
  // A random search samples: however many seeds it ran, it has not seen every schedule.
  if (result_.verdict == ExploreResult::Verdict::none_found && random_) {
    result_.verdict = ExploreResult::Verdict::bound_reached;
    result_.bound = "seeds";
  }
  result_.states = nodes_.size();
  result_.transitions = edges_.size();
  result_.snapshots = runners_ ? runners_->taken() : 0;
  bases_.clear();
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
