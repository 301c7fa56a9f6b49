#include "reports/passes.hpp"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <type_traits>

#include "trace/trace_reader.hpp"

namespace loopsim::reports {

namespace {

using namespace std::chrono_literals;

// Walks the trace once, keeping what is open: each worker's pass, each descriptor's client,
// each client's requests not yet served or answered.
class PassBuilder {
 public:
  explicit PassBuilder(const sim::Trace& trace) : trace_(trace) {}

  PassView build() {
    for (std::size_t i = 0; i < trace_.events.size(); ++i) {
      index_ = i;
      std::visit([this](const auto& e) { on(e); }, trace_.events[i]);
    }
    view_.run_end = run_end_;
    for (std::size_t p : current_) close_unfinished(p);
    locate_sends();
    return std::move(view_);
  }

 private:
  PassSummary* pass_of(int worker) {
    if (worker < 0 || std::size_t(worker) >= current_.size()) return nullptr;
    std::size_t p = current_[std::size_t(worker)];
    return p == no_pass ? nullptr : &view_.passes[p];
  }

  void on(const sim::ev::PassBegin& e) {
    if (e.worker < 0) return;
    if (std::size_t(e.worker) >= current_.size()) current_.resize(std::size_t(e.worker) + 1, no_pass);
    view_.workers = std::max(view_.workers, e.worker + 1);
    PassSummary pass;
    pass.worker = e.worker;
    pass.pass = e.pass;
    pass.begin = pass.woke = pass.end = e.t;
    pass.timeout = e.timeout;
    pass.first_event = index_;
    pass.owed_before = owed_after_.size() > std::size_t(e.worker) && owed_after_[std::size_t(e.worker)];
    current_[std::size_t(e.worker)] = view_.passes.size();
    latest_ = view_.passes.size();
    view_.passes.push_back(std::move(pass));
  }
  void on(const sim::ev::Events& e) {
    PassSummary* pass = pass_of(e.worker);
    if (!pass) return;
    pass->woke = e.t;
    for (int fd : e.fds) {
      if (fd == trace_.listener_fd) {
        ++pass->listener_events;
        continue;
      }
      auto it = fd_client_.find(fd);
      bool known = it != fd_client_.end() && it->second != sim::no_client;
      pass->connection_events.push_back(known ? trace_.client_name(it->second)
                                              : "fd " + std::to_string(fd));
    }
  }
  void on(const sim::ev::Accept& e) {
    if (e.result >= 0) fd_client_[e.result] = e.client;
    PassSummary* pass = pass_of(e.worker);
    if (pass && e.result >= 0) pass->accepted_clients.push_back(e.client);
    if (pass && e.result < 0 && e.result != -EAGAIN) pass->accept_errors.push_back(sim::errno_name(-e.result));
  }
  void on(const sim::ev::BatchEnd& e) {
    if (PassSummary* pass = pass_of(e.worker)) pass->batches.push_back({e.door, e.accepted, e.stop, e.owed});
  }
  void on(const sim::ev::RequestBegin& e) { begun_[e.fd] = {e.t, sim::shown_bytes(e.path)}; }
  void on(const sim::ev::RequestEnd& e) {
    ServedRequest served{e.client, "", e.t, e.t};
    if (auto it = begun_.find(e.fd); it != begun_.end()) {
      served.begin = it->second.first;
      served.path = it->second.second;
      begun_.erase(it);
    }
    PassSummary* pass = pass_of(e.worker);
    auto& queue = unserved_[e.client];
    if (!queue.empty()) {
      served.span = queue.front();
      queue.pop_front();
      RequestSpan& span = view_.requests[served.span];
      span.worker = e.worker;
      span.served_begin = served.begin;
      span.served_end = served.end;
      if (pass) span.served_pass = std::size_t(pass - view_.passes.data());
    }
    if (pass) pass->served.push_back(std::move(served));
  }
  void on(const sim::ev::Close& e) { fd_client_.erase(e.fd); }
  void on(const sim::ev::PassEnd& e) {
    PassSummary* pass = pass_of(e.worker);
    if (!pass) return;
    pass->end = e.t;
    pass->finished = true;
    pass->accept_owed = e.accept_owed;
    pass->handoff_owed = e.handoff_owed;
    current_[std::size_t(e.worker)] = no_pass;
    if (owed_after_.size() <= std::size_t(e.worker)) owed_after_.resize(std::size_t(e.worker) + 1, false);
    owed_after_[std::size_t(e.worker)] = e.accept_owed || e.handoff_owed;
  }
  void on(const sim::ev::Send& e) {
    unserved_[e.client].push_back(view_.requests.size());
    unanswered_[e.client].push_back(view_.requests.size());
    send_index_.push_back(index_);
    RequestSpan span;
    span.client = e.client;
    span.path = sim::shown_bytes(e.path);
    span.sent = e.t;
    view_.requests.push_back(std::move(span));
  }
  void on(const sim::ev::Answer& e) {
    if (PassSummary* pass = latest()) ++pass->answers;
    auto& queue = unanswered_[e.client];
    if (queue.empty()) return;
    view_.requests[queue.front()].answered = e.t;
    queue.pop_front();
  }
  void on(const sim::ev::RunEnd& e) { run_end_ = e.t; }
  // Bytes, answers and choices belong to the pass last begun: with one worker, the one running.
  PassSummary* latest() { return latest_ == no_pass ? nullptr : &view_.passes[latest_]; }
  void on(const sim::ev::Read& e) {
    run_end_ = std::max(run_end_, e.t);
    if (PassSummary* pass = latest()) {
      ++pass->reads;
      pass->read_bytes += std::max<std::int64_t>(e.result, 0);
    }
  }
  void on(const sim::ev::Wrote& e) {
    run_end_ = std::max(run_end_, e.t);
    if (PassSummary* pass = latest()) {
      ++pass->writes;
      pass->wrote_bytes += std::max<std::int64_t>(e.result, 0);
      pass->short_writes += e.result >= 0 && e.result < e.size;
    }
  }
  void on(const sim::ev::Left& e) {
    run_end_ = std::max(run_end_, e.t);
    view_.unread += e.unread;
    view_.unsent += e.unsent;
    ++view_.connections_left;
  }
  void on(const sim::ev::Choice& e) {
    run_end_ = std::max(run_end_, e.t);
    if (e.pick == 0) return;
    ++view_.off_natural;
    if (PassSummary* pass = latest()) ++pass->off_natural;
  }
  // A target that exits ends the pass it was in: it will not wait again.
  void on(const sim::ev::ProcessExit& e) {
    run_end_ = std::max(run_end_, e.t);
    for (std::size_t& p : current_) {
      if (p == no_pass) continue;
      PassSummary& pass = view_.passes[p];
      pass.end = std::max(pass.begin, e.t);
      if (pass.woke == pass.begin) pass.woke = pass.end;
      pass.exited = e.status;
      p = no_pass;
    }
  }
  template <class Other>
  void on(const Other& e) {
    run_end_ = std::max(run_end_, e.t);
  }

  void close_unfinished(std::size_t p) {
    if (p == no_pass) return;
    PassSummary& pass = view_.passes[p];
    pass.end = std::max(pass.begin, run_end_);
    if (pass.woke == pass.begin) pass.woke = pass.end;
  }

  // The serving worker's pass in progress when the request was sent: the last of its passes
  // that began before the send in trace order.
  void locate_sends() {
    std::vector<std::vector<std::size_t>> by_worker(std::size_t(view_.workers));
    for (std::size_t p = 0; p < view_.passes.size(); ++p) {
      by_worker[std::size_t(view_.passes[p].worker)].push_back(p);
    }
    for (std::size_t r = 0; r < view_.requests.size(); ++r) {
      RequestSpan& span = view_.requests[r];
      if (span.worker < 0 || span.worker >= view_.workers) continue;
      const auto& passes = by_worker[std::size_t(span.worker)];
      auto after = std::upper_bound(passes.begin(), passes.end(), send_index_[r],
                                    [this](std::size_t event, std::size_t p) {
                                      return event < view_.passes[p].first_event;
                                    });
      if (after == passes.begin()) continue;
      span.sent_pass = *(after - 1);
      view_.passes[span.sent_pass].arrivals.push_back(r);
    }
  }

  const sim::Trace& trace_;
  PassView view_;
  std::size_t index_ = 0;
  Instant run_end_{};
  std::vector<std::size_t> current_;  // each worker's open pass
  std::size_t latest_ = no_pass;      // the pass begun last, any worker's
  std::vector<bool> owed_after_;      // each worker's last pass_end: was a door owed
  std::map<int, sim::ClientIndex> fd_client_;
  std::map<int, std::pair<Instant, std::string>> begun_;  // fd -> request_begin
  std::map<sim::ClientIndex, std::deque<std::size_t>> unserved_, unanswered_;
  std::vector<std::size_t> send_index_;
};

}  // namespace

int PassSummary::accepted() const {
  int total = 0;
  for (const DoorBatch& b : batches) total += b.accepted;
  return total;
}

PassView view_passes(const sim::Trace& trace) { return PassBuilder(trace).build(); }

LongRequestRule long_request_rule(const PassView& view) {
  std::vector<Duration> costs;
  for (const PassSummary& pass : view.passes) {
    for (const ServedRequest& r : pass.served) costs.push_back(r.end - r.begin);
  }
  if (costs.empty()) return {Duration::max()};
  auto middle = costs.begin() + std::ptrdiff_t(costs.size() / 2);
  std::nth_element(costs.begin(), middle, costs.end());
  return {std::max(*middle * 4, Duration(1ms))};
}

bool small_group(const sim::Trace& trace, sim::ClientIndex client) {
  if (client < 0 || std::size_t(client) >= trace.clients.size()) return false;
  auto group = std::size_t(trace.clients[std::size_t(client)].group);
  return group < trace.group_sizes.size() && trace.group_sizes[group] <= small_group_max;
}

std::string show_time(Duration t) {
  char buffer[32];
  std::int64_t ns = t.count();
  if (ns % 1000000 == 0) {
    std::snprintf(buffer, sizeof buffer, "%lld ms", static_cast<long long>(ns / 1000000));
  } else if (ns >= 1000000 || ns <= -1000000) {
    std::snprintf(buffer, sizeof buffer, "%.1f ms", double(ns) / 1e6);
  } else if (ns % 1000 == 0) {
    std::snprintf(buffer, sizeof buffer, "%lld us", static_cast<long long>(ns / 1000));
  } else {
    std::snprintf(buffer, sizeof buffer, "%lld ns", static_cast<long long>(ns));
  }
  return buffer;
}

std::string show_range(Duration from, Duration to) {
  if (from == to) return show_time(from);
  std::string a = show_time(from), b = show_time(to);
  // "610–1810 ms" rather than "610 ms–1810 ms" when both are in milliseconds.
  if (a.ends_with(" ms") && b.ends_with(" ms")) a.resize(a.size() - 3);
  return a + "–" + b;
}

std::string show_timeout(std::optional<Duration> timeout) {
  if (!timeout) return "forever";
  if (timeout == Duration(0)) return "0 (non-blocking)";
  if (timeout->count() % 1000000000 == 0) return std::to_string(timeout->count() / 1000000000) + " s";
  return show_time(*timeout);
}

}  // namespace loopsim::reports
