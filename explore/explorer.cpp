// The search: depth first over the decisions (with snapshots to resume from, and the limits
// that cut it), or a sample of seeds. The digest audit is explorer_audit.cpp's; liveness on the
// state graph, stranding.cpp's.
#include "explore/explorer.hpp"

#include <algorithm>

#include "base/assert.hpp"
#include "explore/explorer_internal.hpp"
#include "realloop/state.hpp"

namespace loopsim::explore {

namespace detail {

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
      // A decision that leads back to the state that asked it, nothing changed, is one question
      // asked twice: the second is a revisit, and what follows it is never searched (the run's
      // end, when its last landing offer was asked again at the horizon).
      if (key_it->second == previous && key_nodes_[previous].options > 0 && result_.audit_failure.empty())
        audit_failed(previous, "a decision leads back to the state that asked it, nothing changed: one question asked twice");
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
  LOOPSIM_ASSERT(stop.kind == Stop::Kind::end);
  LOOPSIM_ASSERT_OP(path_keys_.size(), ==, path_.size());  // a counterexample's every decision has its key
  // Only an end with nothing left to happen is a way out taken (into nothing); one at the
  // horizon leaves what comes after it unexplored.
  if (last != no_node) shape_nodes_[key_nodes_[last].shape].quiescent |= stop.quiescent;
  if (std::any_of(path_.begin(), path_.end(),
                  [](const model::Choice& c) { return c.kind == model::ChoiceKind::preempt && c.pick != 0; }))
    ++result_.preempted;
  Outcome outcome = exec_->outcome();
  exec_->abandon();
  if (!outcome.cut.empty()) hit("trace limit");
  if (!options_.maximize.empty() && outcome.died.empty()) {  // a crash is a finding even here
    if (counted_) note_worst(outcome);
    return;
  }
  if (outcome.violated.empty()) return;
  result_.verdict = ExploreResult::Verdict::violated;
  std::string detail = "violated";
  for (const std::string& name : outcome.violated) detail += " " + name;
  if (!outcome.died.empty()) detail = "the target died: " + outcome.died;
  result_.counterexample = Counterexample{path_, outcome.violated, detail, {}};
}

void Explorer::descend(std::size_t previous, std::uint32_t via, std::optional<Stop> first) {
  const std::uint64_t steps_at_start = first ? 0 : exec_->steps();
  const auto count_steps = [&] { result_.steps += exec_->steps() - steps_at_start; };
  for (;;) {
    Stop stop = first ? *std::exchange(first, std::nullopt) : exec_->advance();
    if (stop.kind == Stop::Kind::end) {
      count_steps();
      ended(stop, previous);
      return;
    }
    bool fresh = false;
    std::size_t node = intern(stop, previous, via, fresh);
    previous = node;
    via = no_pick;
    if (cut_here(stop, node, fresh, exec_->steps() - steps_at_start)) {
      count_steps();
      exec_->abandon();
      return;
    }
    if (stop.kind == Stop::Kind::step) continue;
    std::uint32_t pick = 0;
    if (random_) {
      pick = seeded_->choose(stop.choice, stop.options);
    } else if (path_.size() >= options_.depth) {
      hit("depth");
    } else if (bounded_) {
      queue_branches(stop, node);
    } else {
      push_frame(stop, node);
    }
    LOOPSIM_ASSERT_OP(pick, <, stop.options);
    path_.push_back(model::Choice{stop.choice, stop.options, pick});
    path_keys_.push_back(stop.key);
    if (bounded_) take_link();
    exec_->decide(pick);
    via = pick;
  }
}

bool Explorer::cut_here(const Stop& stop, std::size_t node, bool fresh, std::uint64_t steps) {
  if (!result_.audit_failure.empty() || stop_) return true;
  // A state reached before has the futures it had then, explored then or being explored.
  if (merge_ && !fresh && !random_) {
    if (options_.audit) audit_future(stop, node);
    ++result_.cut;
    return true;
  }
  const bool over_steps = options_.max_steps > 0 && steps >= options_.max_steps;
  const bool over_states = key_nodes_.size() >= options_.max_states;
  if (over_steps || over_states || out_of_time()) {
    hit(over_steps ? "max steps" : over_states ? "max states" : "time limit");
    stop_ = true;
    return true;
  }
  return false;
}

void Explorer::push_frame(const Stop& stop, std::size_t node) {
  // The DFS stack: one frame a decision on the current path, deepest last.
  LOOPSIM_ASSERT(frames_.empty() || frames_.back().depth < path_.size());
  LOOPSIM_ASSERT_OP(node, <, key_nodes_.size());
  LOOPSIM_ASSERT(stop.kind == Stop::Kind::decision && stop.options >= 1);  // a frame is a decision's
  Frame frame{node, stop.choice, stop.options, {}, path_.size(), nullptr, true, stop.accepted, stop.key};
  for (std::uint32_t alt = stop.options; alt-- > 1;) frame.todo.push_back(alt);
  LOOPSIM_ASSERT_OP(frame.todo.size() + 1, ==, std::size_t(stop.options));  // every alternative but the first, once
  frame.saved = keep_snapshot();
  frames_.push_back(std::move(frame));
}

std::unique_ptr<Saved> Explorer::keep_snapshot() {
  if (!options_.snapshots || saved_bytes_ >= options_.snapshot_bytes) return nullptr;
  std::unique_ptr<Saved> saved = exec_->save();
  if (saved) {
    saved_bytes_ += saved->bytes();
    result_.snapshot_bytes_peak = std::max(result_.snapshot_bytes_peak, saved_bytes_);
    ++result_.snapshots;
  }
  return saved;
}

void Explorer::decision_done(std::size_t node, bool whole, std::unique_ptr<Saved> saved) {
  if (whole) {
    shape_nodes_[key_nodes_[node].shape].explored = true;
    if (options_.audit) {
      all_successors_.resize(key_nodes_.size(), false);
      all_successors_[node] = true;
    }
  }
  if (saved) {
    LOOPSIM_ASSERT_OP(saved->bytes(), <=, saved_bytes_);
    saved_bytes_ -= saved->bytes();
    exec_->recycle(std::move(saved));
  }
}

// Replays the current path's decisions from index `from_depth` up to (not including) decision
// `to_depth`, the execution standing at decision `from_depth`'s stop. Each decision it reaches
// is checked against the path: a replay that parted from the execution it repeats says where.
void Explorer::replay_to(std::size_t from_depth, std::size_t to_depth) {
  std::uint64_t steps_at_start = exec_->steps();
  if (from_depth < to_depth) replayed_.reset();
  for (std::size_t d = from_depth; d < to_depth;) {
    exec_->decide(path_[d].pick);
    ++d;
    for (;;) {
      Stop stop = exec_->advance();
      if (stop.kind == Stop::Kind::decision) {
        if (d < path_.size()) check_on_path(stop, d, "a replay");
        replayed_ = stop;
        break;
      }
      if (stop.kind == Stop::Kind::end) throw std::logic_error("explore: a replay ended before its decision");
    }
  }
  result_.replayed_steps += exec_->steps() - steps_at_start;
  result_.steps += exec_->steps() - steps_at_start;
}

void Explorer::check_on_path(std::optional<Stop> stop, std::size_t depth, const char* how) const {
  LOOPSIM_ASSERT_OP(depth, <, path_.size());
  LOOPSIM_ASSERT_OP(path_keys_.size(), ==, path_.size());
  check_stands(stop, depth, path_[depth].kind, path_[depth].options, path_keys_[depth], how);
}

void Explorer::check_stands(std::optional<Stop> stop, std::size_t depth, model::ChoiceKind kind,
                            std::uint32_t options, std::uint64_t key, const char* how) const {
  if (!stop) stop = exec_->stands_at(options_.audit);
  if (!stop) stop = replayed_;
  if (!stop) return;  // a state that cannot be read again (checked by its replays alone)
  if (stop->kind == Stop::Kind::decision && stop->choice == kind && stop->options == options && stop->key == key)
    return;
  // As the trace's choices are written: kind:options.
  auto asked = [](model::ChoiceKind k, std::uint32_t n) {
    return std::string(model::choice_kind_name(k)) + ":" + std::to_string(n);
  };
  const std::string found = stop->kind != Stop::Kind::decision ? std::string("no decision")
                            : stop->choice != kind || stop->options != options
                                ? asked(stop->choice, stop->options)
                                : "the same question in another state (key " + std::to_string(stop->key) + ", not " +
                                      std::to_string(key) + ")";
  throw Diverged("explore: " + std::string(how) + " parted from the execution it repeats at decision " +
                         std::to_string(depth) + ": the path there asked " + asked(kind, options) + ", it found " +
                         found + " (a nondeterministic system, a snapshot that does not restore all it holds, or a digest "
                         "kept past a change of its state)");
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
    replayed_.reset();
    check_stands(std::nullopt, frames_[base].depth, frames_[base].kind, frames_[base].options, frames_[base].key,
                 "a restore");
    replay_to(frames_[base].depth, target.depth);
    return;
  }
  replay_from_start(target.depth);  // no snapshot below
}

void Explorer::replay_from_start(std::size_t to_depth) {
  // From the snapshot of the first stop where there is one: a new execution would not take the
  // snapshots of this one.
  bool at_decision = false;
  replayed_.reset();
  if (root_) {
    exec_->restore(*root_);
    ++result_.restores;
    at_decision = root_kind_ == Stop::Kind::decision;
  } else {
    exec_->abandon();
    exec_ = system_.start();
  }
  const std::uint64_t steps_at_start = exec_->steps();
  while (!at_decision) {
    Stop stop = exec_->advance();
    if (stop.kind == Stop::Kind::end) throw std::logic_error("explore: a replay ended before its decision");
    at_decision = stop.kind == Stop::Kind::decision;
    if (at_decision && !path_.empty()) check_on_path(stop, 0, "a replay");
    if (at_decision) replayed_ = stop;
  }
  result_.replayed_steps += exec_->steps() - steps_at_start;
  result_.steps += exec_->steps() - steps_at_start;
  replay_to(0, to_depth);
}

void Explorer::take_link() {
  // A link a decision: 2^32 of them would take 96 GiB, which no search here has. Past that the
  // search stops, and says so.
  if (links_.size() >= std::size_t(no_link) - 1) {
    hit("max decisions");
    stop_ = true;
    return;
  }
  links_.push_back(Link{link_, std::uint32_t(path_.size() - 1), path_.back(), path_keys_.back()});
  link_ = std::uint32_t(links_.size() - 1);
  deviations_ += path_.back().pick != 0;
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
      const std::size_t depth = frame.depth;
      decision_done(frame.node, frame.whole, std::move(frame.saved));
      frames_.pop_back();
      // The frames below stand at shallower decisions of the same path.
      LOOPSIM_ASSERT(frames_.empty() || frames_.back().depth < depth);
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
    LOOPSIM_ASSERT_OP(at.depth, <=, path_.size());  // the path reached this frame's decision
    path_.resize(at.depth);
    path_keys_.resize(at.depth);
    path_.push_back(model::Choice{at.kind, at.options, pick});
    path_keys_.push_back(at.key);
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
    path_keys_.clear();
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
        path_keys_.push_back(first.key);
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
  try {
    if (random_) {
      sample();
    } else if (bounded_) {
      by_deviations();
    } else {
      dfs();
    }
  } catch (const Diverged& e) {
    result_.diverged = e.what();
  }
  // The graph shows every way out of a state only when nothing was cut and no alternative went
  // to another shard: only then is a bottom component one.
  bool whole = result_.bounds.empty() && options_.shards == 1 && !random_;
  if (result_.verdict != ExploreResult::Verdict::violated && options_.maximize.empty() && whole &&
      result_.audit_failure.empty() && result_.diverged.empty()) {
    find_stranding();
  }
  if (exec_) exec_->abandon();
  frames_.clear();
  waiting_.clear();
  root_.reset();
  if (result_.verdict != ExploreResult::Verdict::violated && !result_.bounds.empty()) {
    result_.verdict = ExploreResult::Verdict::bound_reached;
  }
  if (!result_.bounds.empty()) result_.bound = result_.bounds.front();
  result_.states = key_nodes_.size();
  report_progress(true);
  return result_;
}

}  // namespace detail

const char* verdict_name(ExploreResult::Verdict verdict) {
  switch (verdict) {
    case ExploreResult::Verdict::violated: return "violated";
    case ExploreResult::Verdict::none_found: return "none_found";
    case ExploreResult::Verdict::bound_reached: return "bound_reached";
  }
  return "?";
}

ExploreResult search(const System& system, const ExploreOptions& options) {
  detail::Explorer explorer(system, options);
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
