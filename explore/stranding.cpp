// Liveness on the state graph the search built: a backlog that waits forever in a cycle, or a
// dead end, of states that accept nothing.
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/strong_components.hpp>

#include "base/assert.hpp"
#include "explore/explorer_internal.hpp"
#include "realloop/state.hpp"

namespace loopsim::explore::detail {

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
}  // namespace loopsim::explore::detail
