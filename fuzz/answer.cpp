// Fuzzes the answer framing that the probe (live) and the simulated clients share
// (sim/workload.hpp): parse_answer over a whole buffer, and AnswerStream fed the same bytes in
// pieces whose sizes the input's first byte sets, as a socket would hand them over.
//
// Input: a piece size byte, then the bytes a server sends on one connection.
//
// A finding: a crash, a sanitizer report, an answer length past the buffer, a stream that holds
// more than one head, or the two readers disagreeing: on the same bytes the stream must give
// the answers parse_answer frames one after another (interim 1xx ones left out), with their
// statuses, and be malformed exactly where parse_answer is.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/finding.hpp"
#include "sim/workload.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace loopsim;
  if (size == 0) return 0;
  const std::size_t piece = std::size_t(data[0]) + 1;
  const std::string_view bytes = fuzz::text_of(data + 1, size - 1);

  // parse_answer, answer after answer.
  std::vector<int> framed;
  bool malformed = false;
  for (std::string_view rest = bytes; !rest.empty();) {
    int status = 0;
    const std::size_t length = sim::parse_answer(rest, status);
    if (length == 0) break;
    if (length == sim::answer_malformed) {
      malformed = true;
      break;
    }
    if (length > rest.size()) fuzz::finding("an answer longer than the buffer");
    if (status < 100 || status > 999) fuzz::finding("a status outside 100..999 framed");
    if (status < 100 || status >= 200 || status == 101) framed.push_back(status);
    rest.remove_prefix(length);
  }

  // The stream, in pieces.
  sim::AnswerStream stream;
  std::vector<int> streamed;
  bool stream_malformed = false;
  for (std::size_t at = 0; at < bytes.size() && !stream_malformed; at += piece) {
    std::string_view part = bytes.substr(at, piece);
    while (!part.empty()) {
      int status = 0;
      const auto step = stream.next(part, status);
      if (step == sim::AnswerStream::Step::malformed) {
        stream_malformed = true;
        break;
      }
      if (step == sim::AnswerStream::Step::answer) streamed.push_back(status);
    }
  }
  if (streamed != framed) fuzz::finding("the stream framed other answers than parse_answer");
  if (stream_malformed != malformed) fuzz::finding("the stream and parse_answer disagree on what cannot be framed");
  return 0;
}
