#include "reports/timeline_rows.hpp"

#include <algorithm>
#include <functional>

namespace loopsim::reports {

namespace {

using Key = std::function<std::string(const PassSummary&)>;

// Everything a person reads off a single pass's row, except times and names.
std::string exact_shape(const PassSummary& p) {
  std::string key = std::to_string(p.timeout ? p.timeout->count() : -1) + "|" + std::to_string(p.listener_events) +
                    "|" + std::to_string(p.connection_events.size()) + "|";
  for (const DoorBatch& b : p.batches) {
    key += std::string(door_name(b.door)) + ":" + std::to_string(b.accepted) + ":" +
           batch_stop_name(b.stop) + (b.owed ? ":owed," : ",");
  }
  key += "|" + std::to_string(p.accept_errors.size()) + "|" + std::to_string(p.accept_owed) +
         std::to_string(p.handoff_owed) + "|" + std::to_string(p.served.size()) + "|" +
         std::to_string(p.finished) + (p.exited ? "|exit" + std::to_string(*p.exited) : "");
  return key;
}

// The kind of pass: what it did, not how much.
std::string coarse_shape(const PassSummary& p) {
  if (p.events() == 0 && p.batches.empty() && p.served.empty()) {
    return p.exited ? "exited" : p.finished ? "idle" : "idle-unfinished";
  }
  std::string key = p.timeout == Duration(0) ? "nb" : "b";
  key += p.events() > 0 ? "|ev" : "|";
  key += p.accepted() > 0 ? "|acc" : "|";
  for (const DoorBatch& b : p.batches) key += std::string("|") + batch_stop_name(b.stop);
  key += p.accept_owed || p.handoff_owed ? "|owed" : "|";
  key += p.served.empty() ? "|" : "|served";
  key += p.accept_errors.empty() ? "" : "|err";
  return key;
}

bool pinned_pass(const sim::Trace& trace, const PassSummary& p, const LongRequestRule& rule) {
  return std::any_of(p.served.begin(), p.served.end(), [&](const ServedRequest& r) {
    return rule.is_long(r) || small_group(trace, r.client);
  });
}

void absorb(Row& into, Row&& from, const PassView& view) {
  into.alike = into.alike && from.alike &&
               exact_shape(view.passes[into.passes.front()]) == exact_shape(view.passes[from.passes.front()]);
  into.pinned = into.pinned || from.pinned;
  into.passes.insert(into.passes.end(), from.passes.begin(), from.passes.end());
}

// Folds each run of at least `min_run` neighbouring unpinned rows with the same key.
void fold_runs(std::vector<Row>& rows, const PassView& view, const Key& key, std::size_t min_run) {
  std::vector<Row> out;
  std::size_t i = 0;
  while (i < rows.size()) {
    std::size_t j = i + 1;
    if (!rows[i].pinned) {
      std::string k = key(view.passes[rows[i].passes.front()]);
      while (j < rows.size() && !rows[j].pinned && key(view.passes[rows[j].passes.front()]) == k) ++j;
    }
    if (j - i < min_run) j = i + 1;
    Row row = std::move(rows[i]);
    for (std::size_t m = i + 1; m < j; ++m) absorb(row, std::move(rows[m]), view);
    out.push_back(std::move(row));
    i = j;
  }
  rows = std::move(out);
}

// Merges neighbouring pairs, round after round, until the rows fit the budget or nothing
// mergeable is left. Each round halves the mergeable rows, so this ends in O(log n) rounds.
void merge_pairs(std::vector<Row>& rows, const PassView& view, std::size_t budget, bool keep_pins) {
  bool merged = true;
  while (rows.size() > budget && merged) {
    merged = false;
    std::vector<Row> out;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      bool can = i + 1 < rows.size() && !(keep_pins && (rows[i].pinned || rows[i + 1].pinned));
      out.push_back(std::move(rows[i]));
      if (!can) continue;
      absorb(out.back(), std::move(rows[i + 1]), view);
      ++i;
      merged = true;
    }
    rows = std::move(out);
  }
}

std::vector<Row> fold_worker(const sim::Trace& trace, const PassView& view, int worker,
                             std::size_t budget, const FoldOptions& options) {
  const LongRequestRule rule = long_request_rule(view);
  std::vector<Row> rows;
  for (std::size_t p = 0; p < view.passes.size(); ++p) {
    if (view.passes[p].worker != worker) continue;
    rows.push_back(Row{worker, {p}, true, pinned_pass(trace, view.passes[p], rule)});
  }
  fold_runs(rows, view, exact_shape, std::max<std::size_t>(options.min_run, 2));
  if (rows.size() > budget) fold_runs(rows, view, coarse_shape, 2);
  merge_pairs(rows, view, budget, true);
  merge_pairs(rows, view, budget, false);
  return rows;
}

}  // namespace

std::vector<Row> fold_rows(const sim::Trace& trace, const PassView& view, const FoldOptions& options) {
  std::vector<Row> rows;
  if (view.workers == 0) return rows;
  std::size_t budget = std::max<std::size_t>(1, options.max_rows / std::size_t(view.workers));
  for (int w = 0; w < view.workers; ++w) {
    std::vector<Row> worker_rows = fold_worker(trace, view, w, budget, options);
    for (Row& row : worker_rows) rows.push_back(std::move(row));
  }
  return rows;
}

namespace {

void add_served(RowStats& s, const sim::Trace& trace, const PassView& view, const ServedRequest& r,
                const LongRequestRule& rule) {
  bool is_long = rule.is_long(r);
  bool small = small_group(trace, r.client);
  s.long_served += is_long;
  s.small_served += small;
  s.guessed += r.path.empty();
  std::optional<Duration> wait;
  if (r.span < view.requests.size()) wait = r.end - view.requests[r.span].sent;
  if (!is_long && !small) return s.served.add(trace, r.client, wait);
  std::string key = (r.client == sim::no_client ? "?" : trace.client_name(r.client)) + " " + r.path;
  // The blocker shows how long it held the loop; a small group's answer, when it came.
  s.served.add_named(trace, r.client, key, is_long ? r.begin : r.end, r.end, wait);
}

void add_pass(RowStats& s, const sim::Trace& trace, const PassView& view, const PassSummary& p,
              const LongRequestRule& rule) {
  s.timeout_min = std::min(s.timeout_min, p.timeout);
  s.timeout_max = std::max(s.timeout_max, p.timeout);
  s.listener_events += p.listener_events;
  s.connection_events += int(p.connection_events.size());
  for (const std::string& name : p.connection_events) {
    if (s.connection_names.size() < 4) s.connection_names.push_back(name);
  }
  for (const DoorBatch& b : p.batches) {
    s.accepted[b.door] += b.accepted;
    ++s.stops[b.stop];
    s.owed_batches += b.owed;
  }
  for (const std::string& e : p.accept_errors) ++s.accept_errors[e];
  s.owed_passes += p.accept_owed || p.handoff_owed;
  s.blocked_while_owed += p.owed_before && p.timeout != Duration(0);
  for (sim::ClientIndex c : p.accepted_clients) s.accepted_by.add(trace, c);
  for (std::size_t r : p.arrivals) s.arrivals.add(trace, view.requests[r].client);
  for (const ServedRequest& r : p.served) add_served(s, trace, view, r, rule);
  s.read_bytes += p.read_bytes;
  s.reads += p.reads;
  s.wrote_bytes += p.wrote_bytes;
  s.writes += p.writes;
  s.short_writes += p.short_writes;
  s.answers += p.answers;
  s.off_natural += p.off_natural;
}

}  // namespace

void ClientTally::add(const sim::Trace& trace, sim::ClientIndex client, std::optional<Duration> wait) {
  if (!small_group(trace, client)) {
    ++total;
    return count_in_group(trace, client, wait);
  }
  add_named(trace, client, trace.client_name(client), std::nullopt, std::nullopt, wait);
}

void ClientTally::add_named(const sim::Trace& trace, sim::ClientIndex client, const std::string& key,
                            std::optional<Instant> from, std::optional<Instant> to, std::optional<Duration> wait) {
  ++total;
  auto it = std::find_if(named.begin(), named.end(), [&](const Named& n) { return n.key == key; });
  if (it == named.end() && named.size() >= max_named) return count_in_group(trace, client, wait);
  if (it == named.end()) it = named.insert(named.end(), Named{key, 0, from, to});
  ++it->count;
  if (!it->from || !from || !it->to || !to) {
    it->from.reset();
    it->to.reset();
    return;
  }
  it->from = std::min(*it->from, *from);
  it->to = std::max(*it->to, *to);
}

void ClientTally::count_in_group(const sim::Trace& trace, sim::ClientIndex client, std::optional<Duration> wait) {
  bool known = client >= 0 && std::size_t(client) < trace.clients.size();
  Group& group = groups[known ? trace.group_of(client) : "?"];
  ++group.count;
  if (!wait) return;
  group.wait_min = std::min(group.wait_min, *wait);
  group.wait_max = std::max(group.wait_max, *wait);
}

std::string ClientTally::text() const {
  std::string out;
  for (const Named& n : named) {
    out += (out.empty() ? "" : ", ") + n.key + (n.count > 1 ? " ×" + std::to_string(n.count) : "");
    if (!n.from || !n.to) continue;
    out += n.count == 1 && n.from == n.to ? " at " + show_time(*n.from) : " (" + show_range(*n.from, *n.to) + ")";
  }
  for (const auto& [name, g] : groups) {
    out += (out.empty() ? "" : ", ") + name + " ×" + std::to_string(g.count);
    if (g.wait_min <= g.wait_max) out += " (waited " + show_range(g.wait_min, g.wait_max) + ")";
  }
  return out;
}

RowStats row_stats(const sim::Trace& trace, const PassView& view, const Row& row,
                   const LongRequestRule& rule) {
  RowStats s;
  const PassSummary& first = view.passes[row.passes.front()];
  const PassSummary& last = view.passes[row.passes.back()];
  s.passes = row.passes.size();
  s.pass_first = first.pass;
  s.pass_last = last.pass;
  s.begin = first.begin;
  s.woke = first.woke;
  s.end = last.end;
  s.timeout_min = s.timeout_max = first.timeout;
  s.unfinished = !last.finished && !last.exited;
  s.exited = last.exited;
  s.accept_owed = last.accept_owed;
  s.handoff_owed = last.handoff_owed;
  for (std::size_t p : row.passes) add_pass(s, trace, view, view.passes[p], rule);
  return s;
}

}  // namespace loopsim::reports
