// The digest audit: a state whose digest was seen before must be the state seen then, in what
// its digest's walk wrote down and in the futures it leads to.
#include <optional>
#include <stdexcept>
#include <sstream>

#include "base/assert.hpp"
#include "explore/explorer_internal.hpp"
#include "realloop/state.hpp"

namespace loopsim::explore::detail {

void Explorer::audit(const Stop& stop, std::size_t shape, bool new_shape, std::size_t key, bool new_key) {
  if (stopped()) return;
  std::optional<state::Transcript> written;
  try {
    written = exec_->transcript();
  } catch (const std::logic_error& e) {
    // The digest this stop is keyed by is not its state's (World::horizon_transcript).
    audit_failed(key, std::string("a stop's key is not its state's: ") + e.what());
    return;
  }
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
    audit_failed(key, "two states of one key stand at different times (" + std::to_string(since_start(then.now).count()) +
                          " ns, then " + std::to_string(since_start(stop.now).count()) + " ns): different times left to the horizon");
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
    std::optional<state::Transcript> written;
    try {
      written = exec_->transcript();
    } catch (const std::logic_error& e) {
      difference = std::string("(and a stop's key is not its state's: ") + e.what() + ")";
    }
    if (written && shape < audit_shapes_.size() && !audit_shapes_[shape].empty()) {
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

}  // namespace loopsim::explore::detail
