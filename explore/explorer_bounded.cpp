// The search by deviations (iterative deviation bounding, as CHESS bounds preemptions and delays):
// the natural execution first, then every execution that takes one non-natural choice, then
// every one that takes two, and so on. A defect that needs k non-natural choices is found before
// any execution with more than k runs, and a search cut short by a bound has still searched
// every execution with fewer than its last level's deviations.
//
// Each decision's other alternatives wait as branches in the level of the executions they
// start (the decision's own deviations plus one). Levels are searched in order, the last branch
// queued first within one (depth first inside a level). Every execution of level k adds
// branches to level k + 1 only, so a level once emptied stays empty: its bound is complete.
// States are merged as depth first merges them: a state reached again is cut, its futures
// queued from its first visit, which came at no more deviations than this one.
#include <algorithm>

#include "base/assert.hpp"
#include "explore/explorer_internal.hpp"

namespace loopsim::explore::detail {

void Explorer::queue_branches(const Stop& stop, std::size_t node) {
  const std::uint32_t level = deviations_ + 1;
  LOOPSIM_ASSERT(stop.kind == Stop::Kind::decision && stop.options >= 1);
  if (levels_.size() <= level) levels_.resize(level + 1);
  Waiting& waiting = waiting_[std::uint64_t(link_)];
  LOOPSIM_ASSERT_OP(waiting.left, ==, 0u);  // a path's next decision is queued once
  waiting.left = stop.options - 1;
  waiting.node = node;
  waiting.saved = keep_snapshot();
  // The last queued goes first: pick 1 of this decision, then 2, ...
  for (std::uint32_t alt = stop.options; alt-- > 1;) {
    levels_[level].push_back(Branch{link_, alt, stop.choice, stop.options, node, stop.accepted, stop.key});
  }
}

void Explorer::branch_done(std::uint32_t link) {
  auto it = waiting_.find(std::uint64_t(link));
  LOOPSIM_ASSERT(it != waiting_.end());
  Waiting& waiting = it->second;
  LOOPSIM_ASSERT_OP(waiting.left, >, 0u);
  if (--waiting.left > 0) return;
  decision_done(waiting.node, waiting.whole, std::move(waiting.saved));
  waiting_.erase(it);
}

void Explorer::resume_link(std::uint32_t link) {
  path_.clear();
  path_keys_.clear();
  for (std::uint32_t l = link; l != no_link; l = links_[l].parent) {
    path_.push_back(links_[l].choice);
    path_keys_.push_back(links_[l].key);
  }
  std::reverse(path_.begin(), path_.end());
  std::reverse(path_keys_.begin(), path_keys_.end());
  const std::size_t target = path_.size();
  // A link is its decision: the path to it is as long as its depth says.
  LOOPSIM_ASSERT(link == no_link || std::size_t(links_[link].depth) + 1 == target);
  // The nearest snapshot: the decision's own, or one taken at a decision above it.
  for (std::uint32_t key = link;; key = links_[key].parent) {
    auto it = waiting_.find(std::uint64_t(key));
    if (it != waiting_.end() && it->second.saved) {
      exec_->restore(*it->second.saved);
      ++result_.restores;
      replayed_.reset();
      const std::size_t from = key == no_link ? 0 : std::size_t(links_[key].depth) + 1;
      // The branch's own decision is checked by the caller, against the branch.
      if (from < target) check_on_path(std::nullopt, from, "a restore");
      replay_to(from, target);
      return;
    }
    if (key == no_link) break;
  }
  replay_from_start(target);
}

void Explorer::by_deviations() {
  exec_ = system_.start();
  counted_ = options_.shard == 0;
  Stop first = exec_->advance();
  if (options_.snapshots && first.kind != Stop::Kind::end) {
    root_ = exec_->save();
    root_kind_ = first.kind;
    if (root_) ++result_.snapshots;
  }
  descend(no_node, no_pick, first);
  counted_ = true;
  if (options_.shard == 0) {
    ++result_.executions;
  } else {
    result_.steps = 0;
  }
  // Sharding: the first execution's branches, in order from its start, dealt round robin.
  if (options_.shards > 1 && levels_.size() > 1) {
    std::vector<Branch> mine;
    std::uint64_t index = 0;
    for (const Branch& b : levels_[1]) {
      if (index++ % options_.shards == options_.shard) {
        mine.push_back(b);
        continue;
      }
      auto it = waiting_.find(std::uint64_t(b.at));
      LOOPSIM_ASSERT(it != waiting_.end() && it->second.left > 0);  // every branch dealt waits on its decision
      it->second.whole = false;
      if (--it->second.left == 0) {
        if (it->second.saved) {
          saved_bytes_ -= it->second.saved->bytes();
          exec_->recycle(std::move(it->second.saved));
        }
        waiting_.erase(it);
      }
    }
    levels_[1] = std::move(mine);
  }
  std::size_t level = 0;
  while (!stopped()) {
    while (level < levels_.size() && levels_[level].empty()) {
      result_.deviations_completed = std::int64_t(level);
      ++level;
    }
    if (level >= levels_.size()) {
      // Nothing waits: every execution was searched, however many deviations it took.
      result_.deviations_completed = std::int64_t(result_.deviations_max);
      break;
    }
    report_progress(false);
    if (result_.executions >= options_.max_executions) {
      hit("max executions");
      break;
    }
    if (out_of_time()) {
      hit("time limit");
      break;
    }
    const Branch branch = levels_[level].back();
    levels_[level].pop_back();
    LOOPSIM_ASSERT(level >= 1 && branch.pick >= 1 && branch.pick < branch.options);  // a branch deviates once more
    resume_link(branch.at);
    check_stands(std::nullopt, path_.size(), branch.kind, branch.options, branch.key, "a resumed branch");
    path_.push_back(model::Choice{branch.kind, branch.options, branch.pick});
    path_keys_.push_back(branch.key);
    link_ = branch.at;
    deviations_ = std::uint32_t(level) - 1;
    take_link();
    result_.deviations_max = std::max<std::uint64_t>(result_.deviations_max, level);
    accepted_before_ = branch.accepted;
    exec_->decide(branch.pick);
    descend(branch.node, branch.pick);
    ++result_.executions;
    branch_done(branch.at);
  }
  if (!stopped() && level < levels_.size()) stop_ = true;
}

}  // namespace loopsim::explore::detail
