// R13: one connection's answers on their way out. Written from a cursor rather than erased from
// the front (a write of n bytes costs n, however slowly the peer reads), and a filler body
// (/bytes) made only as room appears, so that no more than the output bound of it is ever held.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "realloop/state.hpp"

namespace loopsim {

namespace http {
struct Response;
}

class Output {
 public:
  // Nothing left to write: no bytes, no filler to come.
  bool empty() const { return sent_ == bytes_.size() && fill_left_ == 0; }
  // The bytes made and not yet written (filler still to come is not counted).
  std::size_t size() const { return bytes_.size() - sent_; }
  std::string_view unsent() const { return std::string_view(bytes_).substr(sent_); }
  // Filler bytes still to be made: while there are any, nothing may be appended after them.
  std::uint64_t fill_left() const { return fill_left_; }

  void append(std::string_view bytes);
  // A response's head and body serialized in place (its filler, if any, is `fill`'s), with
  // `date` as its Date field (none if empty).
  void append(const http::Response& response, std::string_view date = {});
  // `n` bytes of http::filler to follow what is there, made by top_up.
  void fill(std::uint64_t n);
  // Makes filler until `bound` bytes wait (or the filler ends): at least one chunk of it when the
  // bound is 0 (none).
  void top_up(std::size_t bound);
  // The kernel took the first `n` unsent bytes.
  void written(std::size_t n);
  void clear();

  // What waits to be written, as a std::string of it would digest: how far it was written is not
  // state.
  void digest_state(state::Sink& sink, Instant now) const;

 private:
  std::string bytes_;
  std::size_t sent_ = 0;
  std::uint64_t fill_left_ = 0;
  std::uint64_t fill_made_ = 0;  // of the current filler: where in its pattern the next byte is
};

}  // namespace loopsim
