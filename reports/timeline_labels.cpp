#include "reports/timeline_labels.hpp"

#include <algorithm>
#include <map>

#include "reports/xml.hpp"

namespace loopsim::reports::timeline_detail {

namespace {

constexpr std::size_t max_request_lines = 14;
constexpr std::size_t max_folds_named = 6;

std::string passes_range(std::uint64_t first, std::uint64_t last) {
  return first == last ? std::to_string(first) : std::to_string(first) + "–" + std::to_string(last);
}

// One full-width line of a row; `accent` colours the cell.
std::string line(const std::string& text, const char* accent = nullptr, bool bold = false) {
  std::string cell = "<TR><TD COLSPAN=\"2\" ALIGN=\"LEFT\" BALIGN=\"LEFT\"";
  if (accent) cell += std::string(" BGCOLOR=\"") + accent + "\"";
  cell += ">";
  std::string body = xml_escape(text);
  if (bold) body = "<B>" + body + "</B>";
  return cell + body + "</TD></TR>";
}

std::string header(const RowStats& s) {
  std::string what = s.passes == 1 ? "pass " + std::to_string(s.pass_first)
                                   : "×" + std::to_string(s.passes) + " passes (" +
                                         passes_range(s.pass_first, s.pass_last) + ")";
  // Fixed widths make every row as wide as the others: one straight column.
  return "<TR><TD ALIGN=\"LEFT\" WIDTH=\"330\"><B>" + xml_escape(what) +
         "</B></TD><TD ALIGN=\"RIGHT\" WIDTH=\"140\"><B>" +
         xml_escape(show_range(s.begin, s.end)) + "</B></TD></TR>";
}

std::string wait_text(const RowStats& s) {
  std::string timeout = s.timeout_min == s.timeout_max
                            ? show_timeout(s.timeout_min)
                            : show_timeout(s.timeout_min) + " to " + show_timeout(s.timeout_max);
  std::string text = (s.passes == 1 ? "wait " : "waits ") + timeout;
  if (s.exited) {
    return text + (s.passes == 1 ? "" : " (the last") + ", then the process exited with status " +
           std::to_string(*s.exited) + " at " + show_time(s.end) + (s.passes == 1 ? "" : ")");
  }
  if (s.passes == 1 && s.unfinished) return text + ", still waiting at the end of the run";
  if (s.passes == 1 && s.listener_events + s.connection_events > 0) {
    return text + ", woke at " + show_time(s.woke);
  }
  if (s.listener_events + s.connection_events == 0 && s.timeout_min > Duration(0)) {
    return text + (s.passes == 1 ? ", timed out" : ", each timed out") +
           (s.unfinished ? " (the last still waiting at the end)" : "");
  }
  return text;
}

std::string events_text(const RowStats& s) {
  int total = s.listener_events + s.connection_events;
  if (total == 0) return "no events";
  std::string text = "events " + std::to_string(total) + ": ";
  if (s.passes > 1 || s.connection_events > int(s.connection_names.size())) {
    return text + "listener " + std::to_string(s.listener_events) + ", connections " +
           std::to_string(s.connection_events);
  }
  std::vector<std::string> names;
  if (s.listener_events > 0) names.push_back(s.listener_events == 1 ? "listener" : "listener ×" + std::to_string(s.listener_events));
  names.insert(names.end(), s.connection_names.begin(), s.connection_names.end());
  for (std::size_t i = 0; i < names.size(); ++i) text += (i ? ", " : "") + names[i];
  return text;
}

std::string accepts_text(const RowStats& s, Door door, int accepted) {
  std::string text = "accepted " + std::to_string(accepted) + " on " + door_name(door);
  if (s.passes > 1 && accepted % int(s.passes) == 0 && s.stops.size() == 1) {
    text = "accepted " + std::to_string(accepted / int(s.passes)) + " each on " + door_name(door);
  }
  if (s.accepted.size() == 1 && s.accepted_by.total > 0) text += " (" + s.accepted_by.text() + ")";
  std::string stops;
  for (const auto& [stop, n] : s.stops) {
    stops += (stops.empty() ? "" : ", ") + std::string(batch_stop_name(stop));
    if (n > 1) stops += " ×" + std::to_string(n);
  }
  text += ", stopped by " + stops;
  if (s.owed_batches > 0) text += s.passes == 1 ? " → owed" : " → owed ×" + std::to_string(s.owed_batches);
  return text;
}


// The kernel's side: "read 85 B in 2 reads, wrote 1000070 B in 16 writes (3 short)".
std::string bytes_text(const RowStats& s) {
  std::string text = "read " + std::to_string(s.read_bytes) + " B in " + std::to_string(s.reads) +
                     (s.reads == 1 ? " read" : " reads") + ", wrote " + std::to_string(s.wrote_bytes) + " B in " +
                     std::to_string(s.writes) + (s.writes == 1 ? " write" : " writes");
  if (s.short_writes > 0) text += " (" + std::to_string(s.short_writes) + " short)";
  return text;
}

std::string owed_text(const RowStats& s) {
  std::vector<std::string> doors;
  if (s.accept_owed) doors.push_back("listener");
  if (s.handoff_owed) doors.push_back("handoff");
  std::string after = doors.empty() ? "nothing" : doors.front() + (doors.size() > 1 ? ", " + doors.back() : "");
  if (s.passes == 1) return "owed after: " + after;
  return "left a door owed: " + std::to_string(s.owed_passes) + " of " + std::to_string(s.passes) +
         " passes (after the last: " + after + ")";
}

// A row's box; dashed when its last pass was still waiting at the end of the run.
std::string table(const Palette& p, const RowStats& s, const std::string& rows) {
  return std::string("<TABLE BORDER=\"1\" CELLBORDER=\"0\" CELLSPACING=\"0\" CELLPADDING=\"3\"") +
         " BGCOLOR=\"" + p.fill + "\" COLOR=\"" + p.border + "\"" + (s.unfinished ? " STYLE=\"dashed\"" : "") +
         ">" + rows + "</TABLE>";
}

}  // namespace

Mark mark_of(const RowStats& s) {
  if (s.long_served > 0) return Mark::blocker;
  if (s.small_served > 0) return Mark::small_answer;
  if (s.owed_batches > 0 || s.owed_passes > 0) return Mark::owed;
  if (!s.accept_errors.empty()) return Mark::descriptor_error;
  if (s.idle()) return Mark::idle;
  return Mark::plain;
}

Palette palette_of(Mark mark) {
  switch (mark) {
    case Mark::blocker: return {"#fff0f0", "#ffb3b3", "#c62828"};
    case Mark::small_answer: return {"#eef6ff", "#a8d1ff", "#1565c0"};
    case Mark::owed: return {"#fff7e8", "#ffd699", "#ef6c00"};
    case Mark::descriptor_error: return {"#f6efff", "#d9c2f7", "#6a1b9a"};
    case Mark::idle: return {"#f4f4f4", "#e4e4e4", "#9e9e9e"};
    case Mark::plain: break;
  }
  return {"#ffffff", "#eeeeee", "#555555"};
}

std::string row_label(const RowStats& s) {
  const Palette owed = palette_of(Mark::owed);
  const Palette blocker = palette_of(Mark::blocker);
  const Palette small = palette_of(Mark::small_answer);
  const Palette error = palette_of(Mark::descriptor_error);
  Mark mark = mark_of(s);
  std::string wait = wait_text(s);
  if (s.blocked_while_owed > 0) wait += s.passes == 1 ? " although a door was owed" : " although doors were owed";
  std::string rows = header(s) + line(wait, s.blocked_while_owed > 0 ? blocker.accent : nullptr);
  if (mark == Mark::idle) {
    rows += line("idle: no events, nothing accepted or served");
    return table(palette_of(mark), s, rows);
  }
  rows += line(events_text(s));
  for (const auto& [door, accepted] : s.accepted) {
    rows += line(accepts_text(s, door, accepted), s.owed_batches > 0 ? owed.accent : nullptr);
  }
  for (const auto& [name, n] : s.accept_errors) {
    rows += line("accept failed: " + name + (n > 1 ? " ×" + std::to_string(n) : ""), error.accent);
  }
  if (s.arrivals.total > 0) rows += line("requests sent meanwhile: " + s.arrivals.text());
  if (s.served.total > 0) {
    const char* accent = s.long_served > 0 ? blocker.accent : s.small_served > 0 ? small.accent : nullptr;
    // A target's spans are the seam's guess, not requests: named as such, so that they never
    // contradict the answers the clients counted.
    const std::string what = s.guessed == s.served.total ? "read-then-write spans (the seam's guess, not a count of answers) "
                                                         : "served ";
    rows += line(what + std::to_string(s.served.total) + ": " + s.served.text(), accent, accent != nullptr);
  }
  if (s.reads + s.writes > 0) rows += line(bytes_text(s), s.short_writes > 0 ? small.accent : nullptr);
  if (s.answers > 0) rows += line("answers the clients received: " + std::to_string(s.answers));
  if (s.off_natural > 0) {
    rows += line("choices off the natural path: " + std::to_string(s.off_natural), blocker.accent, true);
  }
  if (s.owed_passes > 0 || s.accept_owed || s.handoff_owed) rows += line(owed_text(s), owed.accent);
  return table(palette_of(mark), s, rows);
}

namespace {

// "4–8 (×5), 10–27 (×18)": the rows of more than one pass that are (or are not) alike.
std::string folds_text(const PassView& view, const std::vector<Row>& rows, bool alike) {
  std::string text;
  std::size_t folds = 0;
  for (const Row& row : rows) {
    if (row.passes.size() < 2 || row.alike != alike || ++folds > max_folds_named) continue;
    const auto& a = view.passes[row.passes.front()];
    const auto& b = view.passes[row.passes.back()];
    std::string worker = view.workers > 1 ? "worker " + std::to_string(row.worker) + " " : "";
    text += (text.empty() ? "" : ", ") + worker + passes_range(a.pass, b.pass) + " (×" +
            std::to_string(row.passes.size()) + ")";
  }
  if (folds > max_folds_named) text += ", … " + std::to_string(folds - max_folds_named) + " more";
  return text;
}

}  // namespace

std::string title_label(const sim::Trace& trace, const PassView& view, const std::vector<Row>& rows) {
  std::string about = std::to_string(view.passes.size()) + " passes on " + std::to_string(view.workers) +
                      (view.workers == 1 ? " worker" : " workers") + ", drawn as " +
                      std::to_string(rows.size()) + " rows";
  std::string text = "<TABLE BORDER=\"0\" CELLPADDING=\"2\"><TR><TD ALIGN=\"LEFT\"><FONT POINT-SIZE=\"16\"><B>" +
                     xml_escape(trace.scenario + " · " + trace.arm) + "</B></FONT></TD></TR>" +
                     line("seed " + std::to_string(trace.seed) + ", accept batch " +
                          std::to_string(trace.accept_batch) + ", run to " + show_time(view.run_end)) +
                     line(about);
  if (view.connections_left > 0) {
    text += line("left at the end: " + std::to_string(view.unread) + " B sent and never read, " +
                 std::to_string(view.unsent) + " B written and never taken, on " +
                 std::to_string(view.connections_left) + (view.connections_left == 1 ? " connection" : " connections"));
  }
  if (view.off_natural > 0) {
    text += line(std::to_string(view.off_natural) + (view.off_natural == 1 ? " choice" : " choices") +
                 " took another than the natural option (rows marked)");
  }
  if (std::string alike = folds_text(view, rows, true); !alike.empty()) {
    text += line("folded runs of alike passes: " + alike);
  }
  if (std::string merged = folds_text(view, rows, false); !merged.empty()) {
    text += line("merged neighbours that differ, to stay within the row budget: " + merged);
  }
  return text + "</TABLE>";
}

std::string legend_label() {
  auto note = [](const std::string& text) {
    return "<TR><TD COLSPAN=\"2\" ALIGN=\"LEFT\">" + xml_escape(text) + "</TD></TR>";
  };
  auto swatch = [](Mark mark, const std::string& text) {
    Palette p = palette_of(mark);
    return std::string("<TR><TD BGCOLOR=\"") + p.accent + "\" WIDTH=\"18\"></TD><TD ALIGN=\"LEFT\">" +
           xml_escape(text) + "</TD></TR>";
  };
  return std::string("<TABLE BORDER=\"1\" CELLBORDER=\"0\" CELLSPACING=\"2\" CELLPADDING=\"2\" COLOR=\"#9e9e9e\">") +
         "<TR><TD COLSPAN=\"2\" ALIGN=\"LEFT\"><B>legend</B></TD></TR>" +
         swatch(Mark::blocker, "served a long request (over 4× the median): the blocker") +
         swatch(Mark::blocker, "a wait that could block while a door was owed") +
         swatch(Mark::small_answer, "answered a small group (≤ 3 clients), e.g. /fast") +
         swatch(Mark::owed, "a batch stopped by its count: the door is owed") +
         swatch(Mark::descriptor_error, "accept failed (EMFILE, ENFILE, ...)") +
         swatch(Mark::idle, "idle: the wait timed out, nothing to do") +
         note("read, wrote: the bytes the kernel moved on clients' connections in those passes") +
         note("answers: complete answers the clients received, as they count them") +
         note("blue arcs: a request, from the pass it arrived in to the pass that answered it") +
         note("dashed box: still waiting when the run ended") + "</TABLE>";
}

namespace {

struct GroupRequests {
  std::vector<const RequestSpan*> spans;
};

std::string small_group_line(const sim::Trace& trace, const RequestSpan& r) {
  std::string text = trace.client_name(r.client) + " " + r.path + ": sent " + show_time(r.sent);
  if (!r.answered) return text + ", never answered";
  return text + ", answered " + show_time(*r.answered) + " (waited " + show_time(*r.answered - r.sent) + ")";
}

std::string group_line(const std::string& name, std::int32_t size, const GroupRequests& g) {
  Instant sent_min = Instant::max(), sent_max = Instant::min(), answer_min = Instant::max(), answer_max = Instant::min();
  Duration wait_min = Duration::max(), wait_max = Duration::min();
  int answered = 0;
  for (const RequestSpan* r : g.spans) {
    sent_min = std::min(sent_min, r->sent);
    sent_max = std::max(sent_max, r->sent);
    if (!r->answered) continue;
    ++answered;
    answer_min = std::min(answer_min, *r->answered);
    answer_max = std::max(answer_max, *r->answered);
    wait_min = std::min(wait_min, *r->answered - r->sent);
    wait_max = std::max(wait_max, *r->answered - r->sent);
  }
  std::string clients = std::to_string(size) + (size == 1 ? " client" : " clients");
  std::string text = name + " (" + clients + "): " + std::to_string(g.spans.size()) +
                     " sent " + show_range(sent_min, sent_max) + "; " + std::to_string(answered) + " answered";
  if (answered > 0) text += " " + show_range(answer_min, answer_max) + ", waits " + show_range(wait_min, wait_max);
  std::size_t missing = g.spans.size() - std::size_t(answered);
  if (missing > 0) text += "; " + std::to_string(missing) + " NEVER answered";
  return text;
}

}  // namespace

std::string requests_label(const sim::Trace& trace, const PassView& view) {
  std::map<std::int32_t, GroupRequests> groups;
  for (const RequestSpan& r : view.requests) {
    if (r.client >= 0 && std::size_t(r.client) < trace.clients.size()) {
      groups[trace.clients[std::size_t(r.client)].group].spans.push_back(&r);
    }
  }
  const LongRequestRule rule = long_request_rule(view);
  const Palette small = palette_of(Mark::small_answer), blocker = palette_of(Mark::blocker);
  std::string rows = "<TR><TD ALIGN=\"LEFT\"><B>requests</B></TD></TR>";
  std::size_t lines = 0;
  for (const auto& [group, g] : groups) {
    std::int32_t size = trace.group_sizes[std::size_t(group)];
    // A small group's requests one by one, unless there are many of them.
    if (size > small_group_max || g.spans.size() > std::size_t(small_group_max)) {
      const char* accent = size > small_group_max ? nullptr : small.accent;
      if (lines++ < max_request_lines) rows += line(group_line(trace.groups[std::size_t(group)], size, g), accent);
      continue;
    }
    for (const RequestSpan* r : g.spans) {
      if (lines++ >= max_request_lines) continue;
      rows += line(small_group_line(trace, *r), rule.is_long(*r) ? blocker.accent : small.accent);
    }
  }
  if (lines > max_request_lines) rows += line("… and " + std::to_string(lines - max_request_lines) + " more");
  if (lines == 0) rows += line("no requests were sent");
  return "<TABLE BORDER=\"1\" CELLBORDER=\"0\" CELLSPACING=\"2\" CELLPADDING=\"2\" COLOR=\"#9e9e9e\">" +
         rows + "</TABLE>";
}

std::string span_label(const sim::Trace& trace, const RequestSpan& span) {
  std::string text = trace.client_name(span.client) + " " + span.path;
  if (!span.answered) return text;
  return text + "\nwaited " + show_time(*span.answered - span.sent);
}

}  // namespace loopsim::reports::timeline_detail
