#include "realloop/output.hpp"

#include <algorithm>
#include <cstring>

#include "base/assert.hpp"
#include "realloop/http.hpp"

namespace loopsim {

namespace {
constexpr std::size_t fill_chunk = 64 * 1024;  // filler made at a time when the output is unbounded
}

void Output::append(std::string_view bytes) {
  LOOPSIM_ASSERT(fill_left_ == 0);  // would land inside the filler's body
  if (sent_ == bytes_.size()) clear();
  bytes_.append(bytes);
}

void Output::append(const http::Response& response, std::string_view date) {
  LOOPSIM_ASSERT(fill_left_ == 0);
  if (sent_ == bytes_.size()) clear();
  http::serialize(response, bytes_, date);
}

void Output::fill(std::uint64_t n) {
  LOOPSIM_ASSERT(fill_left_ == 0);
  fill_left_ = n;
  fill_made_ = 0;
}

void Output::top_up(std::size_t bound) {
  if (fill_left_ == 0) return;
  const std::size_t want = bound > 0 ? bound : fill_chunk;
  if (size() >= want) return;
  if (sent_ > 0) {  // the written front goes before the buffer grows
    bytes_.erase(0, sent_);
    sent_ = 0;
  }
  const std::string_view pattern = http::filler;
  std::uint64_t n = std::min<std::uint64_t>(fill_left_, want - size());
  for (; n > 0; --n, --fill_left_, ++fill_made_) bytes_ += pattern[fill_made_ % pattern.size()];
}

void Output::written(std::size_t n) {
  LOOPSIM_ASSERT(n <= size());
  sent_ += n;
  if (sent_ == bytes_.size()) {
    bytes_.clear();
    sent_ = 0;
  } else if (sent_ >= 64 * 1024 && sent_ * 2 >= bytes_.size()) {  // amortised: each byte moved at most once more
    bytes_.erase(0, sent_);
    sent_ = 0;
  }
}

void Output::clear() {
  bytes_.clear();
  sent_ = 0;
}

namespace {
// The parts of an output's digest, by name: for the digest-drop test (state::Sink::kept).
constexpr state::Field unsent_part = state::f::part("output.unsent");
constexpr state::Field fill_left_part = state::f::part("output.fill_left");
constexpr state::Field fill_made_part = state::f::part("output.fill_made");
}  // namespace

void Output::digest_state(state::Sink& sink, Instant /*now*/) const {
  if (sink.kept(unsent_part)) {
    const std::string_view waiting = unsent();
    sink.add(std::int64_t(waiting.size()));
    sink.add(std::int64_t(state::bytes_hash(waiting)));
  }
  if (sink.kept(fill_left_part)) sink.add(std::int64_t(fill_left_));
  if (sink.kept(fill_made_part)) sink.add(std::int64_t(fill_made_ % http::filler.size()));
}

}  // namespace loopsim
