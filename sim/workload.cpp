#include "sim/workload.hpp"

#include <charconv>
#include <cmath>

#include "model/choice.hpp"

namespace loopsim::sim {

namespace {

constexpr std::string_view content_length = "Content-Length: ";

// A uniform draw in [0, 1) from 53 bits of SplitMix64.
double unit_draw(std::uint64_t& state) { return double(model::splitmix64(state) >> 11) * 0x1p-53; }

}  // namespace

std::string request_text(const std::string& path, bool close, const ClientGroup& group) {
  std::string text = "GET " + path + " HTTP/1.1\r\nHost: loopsim\r\n";
  if (close) text += "Connection: close\r\n";
  switch (group.stall) {
    case ClientGroup::Stall::none:
      if (group.body > 0) {
        text += "Content-Length: " + std::to_string(group.body) + "\r\n\r\n";
        text.append(std::size_t(group.body), 'b');
      } else {
        text += "\r\n";
      }
      break;
    case ClientGroup::Stall::head: break;  // the head's end never comes
    case ClientGroup::Stall::body: text += "Content-Length: 64\r\n\r\n0123456789abcdef"; break;
  }
  return text;
}

std::size_t parse_answer(std::string_view input, int& status) {
  auto head_end = input.find("\r\n\r\n");
  if (head_end == std::string_view::npos || input.size() < 12) return 0;
  std::from_chars(input.data() + 9, input.data() + 12, status);
  auto head = input.substr(0, head_end);
  std::size_t body = 0;
  if (auto at = head.find(content_length); at != std::string_view::npos) {
    auto digits = head.substr(at + content_length.size());
    std::from_chars(digits.data(), digits.data() + digits.size(), body);
  }
  std::size_t total = head_end + 4 + body;
  return input.size() >= total ? total : 0;
}

Arrivals::Arrivals(const ClientGroup& group, std::uint64_t seed, std::int32_t group_index)
    : group_(group), state_(seed ^ (0xa0761d6478bd642full * std::uint64_t(group_index + 1))) {}

Window Arrivals::next(int member) {
  if (group_.rate <= 0) return group_.connect_at;
  if (group_.arrivals == ClientGroup::Arrivals::uniform)
    return group_.connect_at.shifted(Nanos(std::llround(double(member) * 1e9 / group_.rate)));
  if (member > 0) elapsed_ += -std::log1p(-unit_draw(state_)) * 1e9 / group_.rate;
  return group_.connect_at.shifted(Nanos(std::llround(elapsed_)));
}

std::uint64_t draw_salt(Drawn what, std::int64_t a, std::int64_t b, std::int64_t c) {
  std::uint64_t state = std::uint64_t(what) * 0x2545f4914f6cdd1dull;
  for (std::int64_t v : {a, b, c}) {
    state ^= std::uint64_t(v);
    state = model::splitmix64(state);
  }
  return state;
}

std::size_t request_limit(const ClientGroup& group) {
  if (!group.closed_loop()) return group.requests.size();
  return group.closed_requests > 0 ? std::size_t(group.closed_requests) : SIZE_MAX;
}

bool sends_more(const ClientGroup& group, std::size_t sent, Nanos deadline, Nanos now) {
  if (sent >= request_limit(group)) return false;
  return !group.closed_loop() || deadline == Nanos{0} || now < deadline;
}

std::uint64_t path_draws(const ClientGroup& group, std::uint64_t seed, std::int32_t client) {
  if (!group.closed_loop() || group.paths.size() < 2) return 0;
  return seed ^ (0xe7037ed1a0b428dbull * std::uint64_t(client + 1));
}

const std::string& next_path(const ClientGroup& group, std::uint64_t& draws) {
  if (group.paths.empty()) return group.path;
  if (group.paths.size() == 1) return group.paths.front().path;
  std::int64_t total = 0;
  for (const auto& p : group.paths) total += p.weight;
  auto pick = std::int64_t(model::splitmix64(draws) % std::uint64_t(total));
  for (const auto& p : group.paths) {
    if (pick < p.weight) return p.path;
    pick -= p.weight;
  }
  return group.paths.back().path;
}

}  // namespace loopsim::sim
