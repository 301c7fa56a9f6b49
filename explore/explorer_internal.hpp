// The explorer's state, shared by the files of its concerns: explorer.cpp (the depth-first and
// sampled searches, with their limits and snapshots), explorer_bounded.cpp (the search by
// deviations: every execution with 0, then 1, then 2 non-natural choices), explorer_audit.cpp
// (the digest audit) and stranding.cpp (liveness on the state graph). Only those include it.
#pragma once

#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "explore/explorer.hpp"

namespace loopsim::explore::detail {

constexpr std::uint32_t no_pick = std::numeric_limits<std::uint32_t>::max();

// Thrown where a resumed execution does not stand where its path says (Explorer::check_stands),
// caught by Explorer::run: ExploreResult::diverged.
class Diverged final : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};
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
      : system_(system),
        options_(options),
        random_(options.strategy == ExploreOptions::Strategy::random),
        bounded_(options.strategy == ExploreOptions::Strategy::deviations) {}

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
    std::uint64_t key = 0;            // the decision's state key
  };

  void dfs();
  void sample();
  // The search by deviations (explorer_bounded.cpp): each decision's other alternatives wait
  // as branches, by how many non-natural choices their executions take, fewest first.
  void by_deviations();
  void queue_branches(const Stop& stop, std::size_t node);
  // Brings a new execution to the decision of the path ending at `link`, ready to be decided.
  void resume_link(std::uint32_t link);
  // A link's pending branch is done: its snapshot goes once its last is, and its state is
  // explored once every alternative was this search's.
  void branch_done(std::uint32_t link);
  // The decision just taken (path_'s last) becomes the running execution's last link.
  void take_link();
  // Runs the execution from where it stands to its end, or to a state reached before.
  // `first`: the stop the execution already stands at, taken before (none: it advances first).
  void descend(std::size_t previous, std::uint32_t via, std::optional<Stop> first = std::nullopt);
  // Whether the descent stops at the state just reached (`node`, `fresh` if never seen): the
  // audit failed, the state was reached before (its futures are known), or a limit was hit.
  bool cut_here(const Stop& stop, std::size_t node, bool fresh, std::uint64_t steps);
  // A frame for the decision at `node`: its alternatives after the first, and a snapshot while
  // the budget lasts.
  void push_frame(const Stop& stop, std::size_t node);
  // A snapshot of the execution where it stands, within --snapshot-mib (null past it, or where
  // the execution cannot be saved), counted in the result.
  std::unique_ptr<Saved> keep_snapshot();
  // Every alternative of the decision at `node` was taken: with all of them searched (`whole`)
  // its shape is explored; its snapshot, if it kept one, is given back.
  void decision_done(std::size_t node, bool whole, std::unique_ptr<Saved> saved);
  // Brings the execution to frame `f`'s decision, ready to be decided.
  void resume_at(std::size_t f);
  void replay_to(std::size_t from_depth, std::size_t to_depth);
  // A resumed execution must stand where its path says (kind, options and key of the decision
  // at `depth`), or the search would take another branch than the one it means, in silence.
  // `stop`: where a replay stopped; none: after a restore, read afresh (Execution::stands_at).
  void check_stands(std::optional<Stop> stop, std::size_t depth, model::ChoiceKind kind, std::uint32_t options,
                    std::uint64_t key, const char* how) const;
  void check_on_path(std::optional<Stop> stop, std::size_t depth, const char* how) const;
  // A new execution from time 0, replayed up to path_'s decision `to_depth`.
  void replay_from_start(std::size_t to_depth);
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
  std::vector<std::uint64_t> path_keys_;  // each decision's state key, beside path_
  std::optional<Stop> replayed_;          // the decision stop the last replay reached

  // The search by deviations. Every decision taken is a link to the one before it (a tree of
  // the paths taken, which a branch's path is read back from); a branch is a decision's other
  // alternative, waiting in the level of its execution's count of non-natural choices.
  struct Link {
    std::uint32_t parent;  // no_link: the first decision
    std::uint32_t depth;   // this decision's index in its execution
    model::Choice choice;
    std::uint64_t key;  // the state key the decision was asked in
  };
  static constexpr std::uint32_t no_link = std::numeric_limits<std::uint32_t>::max();
  struct Branch {
    std::uint32_t at;  // the link of the decision before the branch's (no_link: none)
    std::uint32_t pick;
    model::ChoiceKind kind;
    std::uint32_t options;
    std::size_t node;  // the decision's key node
    std::uint64_t accepted;
    std::uint64_t key;  // the decision's state key
  };
  // The branches of one decision still waiting, and a snapshot of its state while they do.
  struct Waiting {
    std::uint32_t left = 0;
    bool whole = true;  // every alternative is this search's (not dealt to shards)
    std::size_t node = 0;
    std::unique_ptr<Saved> saved;
  };
  bool bounded_;
  std::vector<Link> links_;
  std::uint32_t link_ = no_link;            // the running execution's last decision
  std::uint32_t deviations_ = 0;            // its non-natural choices so far
  std::vector<std::vector<Branch>> levels_;  // branches by their executions' deviations
  // Keyed by (decision link + 1): a number, never a pointer; looked up, never iterated.
  std::unordered_map<std::uint64_t, Waiting> waiting_;
  // The execution at its first stop, which every replay from the start restores (none: each
  // starts a new execution, whose snapshots the waiting ones are not).
  std::unique_ptr<Saved> root_;
  Stop::Kind root_kind_ = Stop::Kind::step;
  // The audit's records: each shape's transcript, and what each key stands for beyond it.
  struct AuditKey {
    std::size_t shape;
    Instant now;
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

}  // namespace loopsim::explore::detail
