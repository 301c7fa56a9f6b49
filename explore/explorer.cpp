#include "explore/explorer.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/strong_components.hpp>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "base/assert.hpp"
#include "realloop/state.hpp"

namespace loopsim::explore {

namespace {

constexpr std::uint32_t no_pick = std::numeric_limits<std::uint32_t>::max();
constexpr std::size_t no_node = std::numeric_limits<std::size_t>::max();

// A state as the search merges on it (a key), and how the search first came to it: enough to
// rebuild the decisions of a path to it.
struct KeyNode {
  std::size_t parent = no_node;
  std::uint32_t via = no_pick;  // the pick taken at the parent, when the parent was a decision
  model::ChoiceKind kind = model::ChoiceKind::order;  // this node's decision, if it is one
  std::uint32_t options = 0;
  std::size_t shape = 0;
};

// A state of the graph (a shape: times relative to now, no horizon).
struct ShapeNode {
  bool backlog = false;
  bool quiescent = false;   // an execution ended here with nothing left to happen
  bool explored = false;    // every way out of it was taken (by some visit)
  bool beyond = false;      // seen with something past the horizon: what follows is unknown
  std::size_t first_key = 0;
};

class Explorer {
 public:
  Explorer(const System& system, const ExploreOptions& options)
      : system_(system), options_(options), random_(options.strategy == ExploreOptions::Strategy::random) {}

  ExploreResult run();

 private:
  struct Frame {
    std::size_t node;   // the decision's key node
    model::ChoiceKind kind;
    std::uint32_t options;
    std::vector<std::uint32_t> todo;  // alternatives left; the next is at the back
    std::size_t depth;                // its index among the execution's decisions
    std::unique_ptr<Saved> saved;     // null: resumed from a snapshot below, or replayed
    bool whole = true;                // every alternative is this search's (not dealt to shards)
    std::uint64_t accepted = 0;       // connections accepted by then
  };

  void dfs();
  void sample();
  // Runs the execution from where it stands to its end, or to a state reached before.
  void descend(std::size_t previous, std::uint32_t via);
  // Brings the execution to frame `f`'s decision, ready to be decided.
  void resume_at(std::size_t f);
  void replay_to(std::size_t from_depth, std::size_t to_depth);
  std::size_t intern(const Stop& stop, std::size_t previous, std::uint32_t via, bool& fresh);
  void ended(const Stop& stop, std::size_t last);
  void deal_to_shard();
  void hit(const std::string& bound);
  bool out_of_time();
  bool stopped() const { return stop_ || result_.verdict == ExploreResult::Verdict::violated; }
  void report_progress(bool force);
  void note_worst(const Outcome& outcome);
  void find_stranding();
  std::vector<model::Choice> path_to(std::size_t key_node) const;
  // The digest audit: a state whose shape or key was seen before must be the one seen then.
  void audit(const Stop& stop, std::size_t shape, bool new_shape, std::size_t key, bool new_key);
  void audit_failed(std::size_t first_key, const std::string& what);
  // The audit of a state met again (key node `node`, the execution standing at `stop`): the
  // execution goes on its natural way for a few stops, which must be the ones the first visit
  // went through. A digest that leaves out something that matters shows here, whatever the
  // digest's walk reads.
  void audit_future(const Stop& stop, std::size_t node);

  const System& system_;
  const ExploreOptions& options_;
  bool random_;
  bool merge_ = true;
  ExploreResult result_;
  std::unique_ptr<Execution> exec_;
  std::optional<model::SeededChooser> seeded_;  // the random strategy's picks

  std::unordered_map<std::uint64_t, std::size_t> keys_;    // key -> node (looked up, never iterated)
  std::vector<KeyNode> key_nodes_;
  std::unordered_map<std::uint64_t, std::size_t> shapes_;  // shape -> node (looked up, never iterated)
  std::vector<ShapeNode> shape_nodes_;
  struct Edge {
    std::size_t from, to;
    std::uint32_t via;  // the pick taken at from (no_pick where it asks nothing)
    bool accepted;
  };
  std::vector<Edge> edges_;
  std::unordered_set<std::uint64_t> edge_seen_;  // (from, to, accepted, via), looked up, never iterated

  std::vector<Frame> frames_;
  std::vector<model::Choice> path_;  // the running execution's decisions
  // The audit's records: each shape's transcript, and what each key stands for beyond it.
  struct AuditKey {
    std::size_t shape;
    Nanos now;
    Stop::Kind kind;
    model::ChoiceKind choice;
    std::uint32_t options;
  };
  std::vector<std::vector<std::int64_t>> audit_shapes_;
  std::vector<AuditKey> audit_keys_;
  // Key node -> the key nodes reached from it so far, and whether that is every one (a step
  // has one way on; a decision's are all taken once its frame is done).
  std::vector<std::vector<std::size_t>> successors_;
  std::vector<bool> all_successors_;
  static constexpr int audit_lookahead = 16;
  std::uint64_t saved_bytes_ = 0;
  std::uint64_t accepted_before_ = 0;
  bool stop_ = false;
  bool counted_ = true;  // this execution counts (a shard's first does only in shard 0)
  std::int64_t started_ns_ = 0;
  std::int64_t last_progress_ns_ = 0;
};

void Explorer::hit(const std::string& bound) {
  if (std::find(result_.bounds.begin(), result_.bounds.end(), bound) == result_.bounds.end()) {
    result_.bounds.push_back(bound);
  }
}

bool Explorer::out_of_time() {
  return options_.time_limit_ns > 0 && options_.wall_ns && options_.wall_ns() - started_ns_ >= options_.time_limit_ns;
}

void Explorer::report_progress(bool force) {
  if (!options_.progress || !options_.wall_ns) return;
  std::int64_t now = options_.wall_ns();
  if (!force && now - last_progress_ns_ < 200'000'000) return;
  last_progress_ns_ = now;
  options_.progress(ExploreProgress{result_.executions, key_nodes_.size(), result_.transitions, frames_.size()});
}

std::size_t Explorer::intern(const Stop& stop, std::size_t previous, std::uint32_t via, bool& fresh) {
  LOOPSIM_ASSERT(previous == no_node || previous < key_nodes_.size());
  // In the graph a decision is a state of its own, apart from the step's end it is taken at:
  // the step and the decision are one world state, not a cycle.
  std::uint64_t graph_id = stop.shape;
  if (stop.kind == Stop::Kind::decision) {
    graph_id = state::fold(state::fold(state::fold(stop.shape, 0xdec1), std::uint64_t(stop.choice)), stop.options);
  }
  auto [shape_it, new_shape] = shapes_.try_emplace(graph_id, shape_nodes_.size());
  if (new_shape) shape_nodes_.push_back(ShapeNode{stop.backlog, false, false, false, key_nodes_.size()});
  std::size_t shape = shape_it->second;
  LOOPSIM_ASSERT_OP(shape, <, shape_nodes_.size());
  shape_nodes_[shape].beyond = shape_nodes_[shape].beyond || stop.beyond;
  auto [key_it, new_key] = keys_.try_emplace(stop.key, key_nodes_.size());
  fresh = new_key;
  if (new_key) key_nodes_.push_back(KeyNode{previous, via, stop.choice, stop.options, shape});
  if (options_.audit) {
    audit(stop, shape, new_shape, key_it->second, new_key);
    // The ways on from `previous`: what a later visit of it may reach (audit_future).
    if (successors_.size() < key_nodes_.size()) successors_.resize(key_nodes_.size());
    if (previous != no_node) {
      std::vector<std::size_t>& out = successors_[previous];
      if (std::find(out.begin(), out.end(), key_it->second) == out.end()) out.push_back(key_it->second);
    }
  }
  if (previous != no_node) {
    std::size_t from = key_nodes_[previous].shape;
    bool accepted = stop.accepted > accepted_before_;
    // A state that asks nothing has one way out, taken now; a decision's are its frame's.
    if (key_nodes_[previous].options == 0) shape_nodes_[from].explored = true;
    std::uint64_t edge = state::fold(state::fold(state::fold(from, shape), accepted), via);
    if (edge_seen_.insert(edge).second) edges_.push_back(Edge{from, shape, via, accepted});
  }
  accepted_before_ = stop.accepted;
  ++result_.transitions;
  return key_it->second;
}

void Explorer::note_worst(const Outcome& outcome) {
  for (const checker::Verdict& v : outcome.verdicts) {
    if (v.property != options_.maximize || (!options_.maximize_of.empty() && v.of != options_.maximize_of)) continue;
    ++result_.judged;
    if (!result_.worst || v.measured > result_.worst->measured) {
      result_.worst = Worst{v.measured, v, path_, result_.executions};
    }
    return;
  }
}

void Explorer::ended(const Stop& stop, std::size_t last) {
  // Only an end with nothing left to happen is a way out taken (into nothing); one at the
  // horizon leaves what comes after it unexplored.
  if (last != no_node) shape_nodes_[key_nodes_[last].shape].quiescent |= stop.quiescent;
  if (std::any_of(path_.begin(), path_.end(),
                  [](const model::Choice& c) { return c.kind == model::ChoiceKind::preempt && c.pick != 0; }))
    ++result_.preempted;
  Outcome outcome = exec_->outcome();
  exec_->abandon();
  if (!outcome.cut.empty()) hit("trace limit");
  if (!options_.maximize.empty()) {
    if (counted_) note_worst(outcome);
    return;
  }
  if (outcome.violated.empty()) return;
  result_.verdict = ExploreResult::Verdict::violated;
  std::string detail = "violated";
  for (const std::string& name : outcome.violated) detail += " " + name;
  result_.counterexample = Counterexample{path_, outcome.violated, detail, {}};
}

void Explorer::descend(std::size_t previous, std::uint32_t via) {
  std::uint64_t steps_at_start = exec_->steps();
  for (;;) {
    Stop stop = exec_->advance();
    if (stop.kind == Stop::Kind::end) {
      result_.steps += exec_->steps() - steps_at_start;
      ended(stop, previous);
      return;
    }
    bool fresh = false;
    std::size_t node = intern(stop, previous, via, fresh);
    previous = node;
    via = no_pick;
    if (!result_.audit_failure.empty()) {
      result_.steps += exec_->steps() - steps_at_start;
      exec_->abandon();
      return;
    }
    // A state reached before has the futures it had then, explored then or being explored.
    if (merge_ && !fresh && !random_) {
      if (options_.audit) audit_future(stop, node);
      ++result_.cut;
      result_.steps += exec_->steps() - steps_at_start;
      exec_->abandon();
      return;
    }
    bool over_steps = options_.max_steps > 0 && exec_->steps() - steps_at_start >= options_.max_steps;
    if (over_steps || out_of_time() || key_nodes_.size() >= options_.max_states) {
      hit(over_steps ? "max steps" : key_nodes_.size() >= options_.max_states ? "max states" : "time limit");
      stop_ = true;
      result_.steps += exec_->steps() - steps_at_start;
      exec_->abandon();
      return;
    }
    if (stop.kind == Stop::Kind::step) continue;
    std::uint32_t pick = 0;
    if (random_) {
      pick = seeded_->choose(stop.choice, stop.options);
    } else if (path_.size() >= options_.depth) {
      hit("depth");
    } else {
      // The DFS stack: one frame a decision on the current path, deepest last.
      LOOPSIM_ASSERT(frames_.empty() || frames_.back().depth < path_.size());
      LOOPSIM_ASSERT_OP(node, <, key_nodes_.size());
      Frame frame{node, stop.choice, stop.options, {}, path_.size(), nullptr, true, stop.accepted};
      for (std::uint32_t alt = stop.options; alt-- > 1;) frame.todo.push_back(alt);
      if (options_.snapshots && saved_bytes_ < options_.snapshot_bytes) {
        frame.saved = exec_->save();
        if (frame.saved) {
          saved_bytes_ += frame.saved->bytes();
          result_.snapshot_bytes_peak = std::max(result_.snapshot_bytes_peak, saved_bytes_);
          ++result_.snapshots;
        }
      }
      frames_.push_back(std::move(frame));
    }
    LOOPSIM_ASSERT_OP(pick, <, stop.options);
    path_.push_back(model::Choice{stop.choice, stop.options, pick});
    exec_->decide(pick);
    via = pick;
  }
}

// Replays the current path's decisions from index `from_depth` up to (not including) decision
// `to_depth`, the execution standing at decision `from_depth`'s stop.
void Explorer::replay_to(std::size_t from_depth, std::size_t to_depth) {
  std::uint64_t steps_at_start = exec_->steps();
  for (std::size_t d = from_depth; d < to_depth;) {
    exec_->decide(path_[d].pick);
    ++d;
    for (;;) {
      Stop stop = exec_->advance();
      if (stop.kind == Stop::Kind::decision) break;
      if (stop.kind == Stop::Kind::end) throw std::logic_error("explore: a replay ended before its decision");
    }
  }
  result_.replayed_steps += exec_->steps() - steps_at_start;
  result_.steps += exec_->steps() - steps_at_start;
}

void Explorer::resume_at(std::size_t f) {
  LOOPSIM_ASSERT_OP(f, <, frames_.size());
  Frame& target = frames_[f];
  std::size_t base = f + 1;
  for (std::size_t g = f + 1; g-- > 0;) {
    if (frames_[g].saved) {
      base = g;
      break;
    }
  }
  if (base <= f) {
    // A snapshot is taken at its frame's decision: at or above the one resumed.
    LOOPSIM_ASSERT_OP(frames_[base].depth, <=, target.depth);
    exec_->restore(*frames_[base].saved);
    ++result_.restores;
    replay_to(frames_[base].depth, target.depth);
    return;
  }
  // No snapshot below: from time 0.
  exec_->abandon();
  exec_ = system_.start();
  std::uint64_t steps_at_start = 0;
  for (;;) {
    Stop stop = exec_->advance();
    if (stop.kind == Stop::Kind::decision) break;
    if (stop.kind == Stop::Kind::end) throw std::logic_error("explore: a replay ended before its decision");
  }
  result_.replayed_steps += exec_->steps() - steps_at_start;
  result_.steps += exec_->steps() - steps_at_start;
  replay_to(0, target.depth);
}

// Sharding: the alternatives the first execution left, in order from its start, dealt round
// robin; each shard keeps its own.
void Explorer::deal_to_shard() {
  std::uint64_t index = 0;
  for (Frame& frame : frames_) {
    std::vector<std::uint32_t> mine;
    for (std::size_t i = frame.todo.size(); i-- > 0;) {
      if (index++ % options_.shards == options_.shard) mine.insert(mine.begin(), frame.todo[i]);
    }
    frame.whole = mine.size() == frame.todo.size();
    frame.todo = std::move(mine);
  }
}

void Explorer::dfs() {
  exec_ = system_.start();
  counted_ = options_.shard == 0;
  descend(no_node, no_pick);
  counted_ = true;
  // Every shard runs the first execution, to learn the alternatives it deals out; only shard 0
  // counts it, so that the shards' counts add up to the unsharded search's.
  if (options_.shard == 0) {
    ++result_.executions;
  } else {
    result_.steps = 0;
  }
  if (options_.shards > 1) deal_to_shard();
  while (!frames_.empty() && !stopped()) {
    report_progress(false);
    Frame& frame = frames_.back();
    if (frame.todo.empty()) {
      if (frame.whole) shape_nodes_[key_nodes_[frame.node].shape].explored = true;
      if (frame.whole && options_.audit) {
        all_successors_.resize(key_nodes_.size(), false);
        all_successors_[frame.node] = true;
      }
      if (frame.saved) {
        LOOPSIM_ASSERT_OP(frame.saved->bytes(), <=, saved_bytes_);
        saved_bytes_ -= frame.saved->bytes();
        exec_->recycle(std::move(frame.saved));
      }
      frames_.pop_back();
      continue;
    }
    if (result_.executions >= options_.max_executions) {
      hit("max executions");
      break;
    }
    if (out_of_time()) {
      hit("time limit");
      break;
    }
    std::uint32_t pick = frame.todo.back();
    LOOPSIM_ASSERT(pick >= 1 && pick < frame.options);  // 0 is the pick the first visit took
    frame.todo.pop_back();
    resume_at(frames_.size() - 1);
    const Frame& at = frames_.back();
    path_.resize(at.depth);
    path_.push_back(model::Choice{at.kind, at.options, pick});
    accepted_before_ = at.accepted;
    exec_->decide(pick);
    descend(at.node, pick);
    ++result_.executions;
  }
  if (!frames_.empty() && !stopped()) stop_ = true;
}

void Explorer::sample() {
  std::uint64_t all = options_.seed_last >= options_.seed_first ? options_.seed_last - options_.seed_first + 1 : 0;
  std::unique_ptr<Saved> root;
  for (std::uint64_t i = options_.shard; i < all && !stopped(); i += options_.shards) {
    if (result_.executions >= options_.max_executions) {
      hit("max executions");
      break;
    }
    if (out_of_time()) {
      hit("time limit");
      break;
    }
    seeded_.emplace(options_.seed_first + i);
    path_.clear();
    accepted_before_ = 0;
    if (root) {
      exec_->restore(*root);
      ++result_.restores;
      descend(no_node, no_pick);
    } else {
      if (exec_) exec_->abandon();
      exec_ = system_.start();
      Stop first = exec_->advance();  // the start, before any step: saved once, restored for every seed
      bool fresh = false;
      std::size_t node = intern(first, no_node, no_pick, fresh);
      if (options_.snapshots && first.kind == Stop::Kind::step) root = exec_->save();
      if (first.kind == Stop::Kind::end) {
        ended(first, node);
      } else if (first.kind == Stop::Kind::decision) {
        std::uint32_t pick = seeded_->choose(first.choice, first.options);
        LOOPSIM_ASSERT_OP(pick, <, first.options);
        path_.push_back(model::Choice{first.choice, first.options, pick});
        exec_->decide(pick);
        descend(node, pick);
      } else {
        descend(node, no_pick);
      }
    }
    ++result_.executions;
    report_progress(false);
  }
  // A sample, however large, has not seen every schedule.
  hit("seeds");
}

// Liveness: a bottom strongly connected component (a cycle, or a dead end) of the state graph in
// which every state has a backlog and no transition accepts: once there, the backlog is never
// taken. Only a component whose every state was explored counts: one that a bound or the
// horizon cut short may have ways out nobody took.
void Explorer::find_stranding() {
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
  if (shape_nodes_.empty()) return;
  // A shape is relative to its instant, so one that holds nothing past the horizon has, for
  // each pick, one successor up to the horizon's clamp. The step into a clamped state is then
  // the horizon's view of a step seen unclamped at an earlier instant: it is that step, not a
  // way out of its own.
  std::unordered_set<std::uint64_t> unclamped;  // (from, via) with an unclamped successor, looked up only
  for (const Edge& e : edges_) {
    if (!shape_nodes_[e.to].beyond) unclamped.insert(state::fold(e.from, e.via));
  }
  std::vector<Edge> edges;
  for (const Edge& e : edges_) {
    bool echo = shape_nodes_[e.to].beyond && !shape_nodes_[e.from].beyond &&
                unclamped.count(state::fold(e.from, e.via)) != 0;
    if (!echo) edges.push_back(e);
  }
  Graph graph(shape_nodes_.size());
  for (const Edge& e : edges) boost::add_edge(e.from, e.to, graph);
  std::vector<std::size_t> component(shape_nodes_.size());
  std::size_t count = boost::strong_components(graph, &component[0]);
  std::vector<bool> leaves(count, false), accepts(count, false), clear(count, false), partial(count, false);
  std::vector<bool> cyclic(count, false), dead_end(count, false);
  for (const Edge& e : edges) {
    if (component[e.from] != component[e.to]) leaves[component[e.from]] = true;
    if (component[e.from] == component[e.to]) {
      cyclic[component[e.from]] = true;
      if (e.accepted) accepts[component[e.from]] = true;
    }
  }
  for (std::size_t n = 0; n < shape_nodes_.size(); ++n) {
    const ShapeNode& node = shape_nodes_[n];
    if (!node.backlog) clear[component[n]] = true;
    if (node.quiescent) dead_end[component[n]] = true;
    if ((!node.explored && !node.quiescent) || node.beyond) partial[component[n]] = true;
  }
  for (std::size_t n = 0; n < shape_nodes_.size(); ++n) {
    std::size_t c = component[n];
    if (leaves[c] || accepts[c] || clear[c] || partial[c] || !(cyclic[c] || dead_end[c])) continue;
    Counterexample cex;
    cex.choices = path_to(shape_nodes_[n].first_key);
    cex.violated = {"liveness"};
    cex.detail = "a backlog waits in a cycle (or dead end) of states in which nothing is accepted";
    result_.counterexample = std::move(cex);
    result_.verdict = ExploreResult::Verdict::violated;
    return;
  }
}

void Explorer::audit(const Stop& stop, std::size_t shape, bool new_shape, std::size_t key, bool new_key) {
  if (stopped()) return;
  std::optional<state::Transcript> written = exec_->transcript();
  if (!written) {
    ++result_.audit_unwritten;
    return;
  }
  // A decision's node is its state and what it asks: both are written down.
  if (stop.kind == Stop::Kind::decision) {
    written->enter("decision");
    written->add(std::int64_t(stop.choice));
    written->add(stop.options);
    written->leave();
  }
  if (new_shape) {
    audit_shapes_.resize(shape + 1);
    audit_shapes_[shape] = written->take_values();
  } else {
    ++result_.audit_compared;
    std::string difference = state::first_difference(audit_shapes_[shape], *written);
    if (!difference.empty()) {
      audit_failed(shape_nodes_[shape].first_key, "two states of one shape differ at " + difference);
      return;
    }
  }
  AuditKey now{shape, stop.now, stop.kind, stop.choice, stop.options};
  if (new_key) {
    audit_keys_.resize(key + 1);
    audit_keys_[key] = now;
    return;
  }
  ++result_.audit_compared;
  const AuditKey& then = audit_keys_[key];
  if (then.shape != shape) {
    audit_failed(key, "two states of one key have different shapes");
  } else if (then.now != stop.now) {
    audit_failed(key, "two states of one key stand at different times (" + std::to_string(then.now.count()) +
                          " ns, then " + std::to_string(stop.now.count()) + " ns): different times left to the horizon");
  } else if (then.kind != stop.kind || then.choice != stop.choice || then.options != stop.options) {
    audit_failed(key, "two states of one key ask different things");
  }
}

void Explorer::audit_future(const Stop& stop, std::size_t node) {
  if (!result_.audit_failure.empty()) return;
  // The execution goes on its natural way (pick 0 at each decision). Equal states need not
  // number their alternatives alike (interchangeable clients in another order), so each stop
  // must be one the first visit reached from the matching node by some way, and is wrong only
  // where every way from there is known.
  bool decision = stop.kind == Stop::Kind::decision;
  std::size_t expect = node;
  for (int step = 0; step < audit_lookahead; ++step) {
    if (expect >= successors_.size() || successors_[expect].empty()) return;  // nothing known past it
    bool every = !decision || (expect < all_successors_.size() && all_successors_[expect]);
    if (decision) exec_->decide(0);
    Stop now = exec_->advance();
    std::string at = "; " + std::to_string(step + 1) + " stop(s) on";
    if (now.kind == Stop::Kind::end) {
      if (every) audit_failed(node, "two states with one digest part ways: the first went on, the second ended" + at);
      return;
    }
    auto found = keys_.find(now.key);
    const std::vector<std::size_t>& known = successors_[expect];
    if (found != keys_.end() && std::find(known.begin(), known.end(), found->second) != known.end()) {
      ++result_.audit_compared;
      decision = now.kind == Stop::Kind::decision;
      expect = found->second;
      continue;
    }
    if (!every) return;  // perhaps by a way not taken yet
    std::string difference = "in something the digest does not read";
    std::size_t shape = key_nodes_[known.front()].shape;
    if (std::optional<state::Transcript> written = exec_->transcript();
        written && shape < audit_shapes_.size() && !audit_shapes_[shape].empty()) {
      if (now.kind == Stop::Kind::decision) {
        written->enter("decision");
        written->add(std::int64_t(now.choice));
        written->add(now.options);
        written->leave();
      }
      std::string field = state::first_difference(audit_shapes_[shape], *written);
      if (!field.empty()) difference = "at " + field;
    }
    audit_failed(node, "two states with one digest part ways: their futures differ " + difference + at);
    return;
  }
}

void Explorer::audit_failed(std::size_t first_key, const std::string& what) {
  auto text = [](const std::vector<model::Choice>& choices) {
    std::string out = "[";
    for (const model::Choice& c : choices) out += (out.size() > 1 ? ", " : "") + model::choice_text(c);
    return out + "]";
  };
  result_.audit_failure = what + "; the first was reached by the choices " + text(path_to(first_key)) +
                          ", the second by " + text(path_);
  stop_ = true;
}

std::vector<model::Choice> Explorer::path_to(std::size_t key_node) const {
  LOOPSIM_ASSERT_OP(key_node, <, key_nodes_.size());
  std::vector<model::Choice> out;
  for (std::size_t n = key_node; key_nodes_[n].parent != no_node; n = key_nodes_[n].parent) {
    const KeyNode& node = key_nodes_[n];
    if (node.via == no_pick) continue;
    const KeyNode& parent = key_nodes_[node.parent];
    out.push_back(model::Choice{parent.kind, parent.options, node.via});
  }
  std::reverse(out.begin(), out.end());
  return out;
}

ExploreResult Explorer::run() {
  started_ns_ = options_.wall_ns ? options_.wall_ns() : 0;
  System::Merging merging = system_.merging();
  merge_ = options_.prune && merging.on && options_.maximize.empty();
  result_.merged = merge_;
  if (!merging.on) {
    result_.merging_note = merging.why_not;
  } else if (!options_.maximize.empty()) {
    result_.merging_note = "--maximize measures history that a state does not hold: no two executions are merged";
  } else if (!options_.prune) {
    result_.merging_note = "--no-prune: no two executions are merged";
  }
  if (random_) {
    sample();
  } else {
    dfs();
  }
  // The graph shows every way out of a state only when nothing was cut and no alternative went
  // to another shard: only then is a bottom component one.
  bool whole = result_.bounds.empty() && options_.shards == 1 && !random_;
  if (result_.verdict != ExploreResult::Verdict::violated && options_.maximize.empty() && whole &&
      result_.audit_failure.empty()) {
    find_stranding();
  }
  if (exec_) exec_->abandon();
  frames_.clear();
  if (result_.verdict != ExploreResult::Verdict::violated && !result_.bounds.empty()) {
    result_.verdict = ExploreResult::Verdict::bound_reached;
  }
  if (!result_.bounds.empty()) result_.bound = result_.bounds.front();
  result_.states = key_nodes_.size();
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
  ExploreResult result = explorer.run();
  if (result.counterexample && result.counterexample->path.empty()) {
    result.counterexample->path = path_of(system, result.counterexample->choices);
  }
  return result;
}

ExploreResult search(const sim::Scenario& scenario, const checker::Costs& costs, const ExploreOptions& options) {
  return search(*world_system(scenario, costs, options.symmetry, options.snapshots, options.servers), options);
}

}  // namespace loopsim::explore
