// Fuzzes what loopsim reads of a target's process (target/target_wire.hpp): messages taken off the
// bytes a target sends, then each read as TargetProcess reads it: a choose's kind and options,
// a step's report, a trace's counts and events (trace/trace_codec.hpp), an error's failure byte.
// The target is any program; its bytes are not trusted.
//
// Input: the bytes of a target's side of the socket.
//
// A finding: a crash, a sanitizer report, any exception but std::runtime_error (a frame or a
// trace that is not one), a message taken past the input, or a choice passed with a kind that
// does not exist or fewer than 2 options.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "fuzz/finding.hpp"
#include "model/choice.hpp"
#include "target/target_wire.hpp"
#include "trace/trace_codec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace loopsim;
  namespace wire = sim::wire;
  std::string_view in = fuzz::text_of(data, size);
  try {
    while (auto message = wire::take_message(in)) {
      if (!wire::sent_by_target(message->type)) fuzz::finding("a message of a type a target does not send was taken");
      if (message->body.size() > wire::body_max) fuzz::finding("a body over body_max was taken");
      switch (message->type) {
        case wire::Type::choose:
          if (auto c = wire::decode_choose(message->body, model::choice_kinds)) {
            if (c->kind >= model::choice_kinds || c->options < 2) fuzz::finding("a choice that is not one was passed");
            (void)model::choice_kind_name(model::ChoiceKind(c->kind));
          }
          break;
        case wire::Type::report: (void)wire::decode_report(message->body); break;
        case wire::Type::trace: {
          std::size_t at = 0;
          (void)wire::get<std::uint64_t>(message->body, at);
          (void)wire::get<std::uint64_t>(message->body, at);
          (void)sim::decode_trace(std::string_view(message->body).substr(std::min(at, message->body.size())));
          break;
        }
        default: break;
      }
    }
  } catch (const std::runtime_error&) {
    return 0;
  }
  return 0;
}
