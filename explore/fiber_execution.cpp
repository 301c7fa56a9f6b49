#include "explore/fiber_execution.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "base/assert.hpp"
#include "base/stack_watch.hpp"
#include "scenario/scenario.hpp"
#include "sim/world.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define LOOPSIM_FIBER_ASAN 1
#endif

namespace loopsim::explore {

namespace ctxd = boost::context::detail;

namespace {

constexpr std::size_t fiber_stack = 256 * 1024;

}  // namespace

// Named, not anonymous: FiberExecution::Switches holds one, and a type of the header's may not
// hold one with internal linkage (GCC's -Wsubobject-linkage, in a unity build).
namespace fiber_detail {

// The fiber stacks an execution's world allocates, so that a pause knows which stack it leaves
// (for the sanitizer); with an arena, passed on to its watch, which a snapshot reads.
class Stacks final : public base::StackWatch {
 public:
  explicit Stacks(base::StackWatch* inner) : inner_(inner) {}
  void allocated(void* low, std::size_t bytes) override {
    ranges_.emplace_back(static_cast<char*>(low), bytes);
    if (inner_ != nullptr) inner_->allocated(low, bytes);
  }
  void freed(void* low) override {
    std::erase_if(ranges_, [low](const auto& r) { return r.first == low; });
    if (inner_ != nullptr) inner_->freed(low);
  }
  void depth(const void* sp) override {
    if (inner_ != nullptr) inner_->depth(sp);
  }
  // The stack holding `at`: its lowest address and size.
  std::pair<const void*, std::size_t> of(const void* at) const {
    for (auto [low, bytes] : ranges_) {
      if (at >= low && at < low + bytes) return {low, bytes};
    }
    return {nullptr, 0};
  }

 private:
  base::StackWatch* inner_;
  std::vector<std::pair<char*, std::size_t>> ranges_;
};

}  // namespace fiber_detail

namespace {

using fiber_detail::Stacks;

struct FiberSaved final : Saved {
  Arena::Image image;
  ctxd::fcontext_t fiber = nullptr;
  Stop stop;
  std::uint64_t steps = 0;
  const void* paused_on = nullptr;
  std::size_t bytes() const override { return image.bytes(); }
};

}  // namespace

// The sanitizer's bookkeeping of which stack is running (a no-op without it).
struct FiberExecution::Switches {
  fiber_detail::Stacks stacks;
  const void* main_low = nullptr;  // the explorer's stack, learnt when the fiber first runs
  std::size_t main_size = 0;
  const void* paused_on = nullptr;  // an address on the stack the fiber side paused on

  explicit Switches(base::StackWatch* inner) : stacks(inner) {}
  void to_fiber([[maybe_unused]] void** fake) const {
#ifdef LOOPSIM_FIBER_ASAN
    auto [low, size] = stacks.of(paused_on);
    __sanitizer_start_switch_fiber(fake, low, size);
#endif
  }
  void back_in_main([[maybe_unused]] void* fake) {
#ifdef LOOPSIM_FIBER_ASAN
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
  }
  void to_main([[maybe_unused]] void** fake) const {
#ifdef LOOPSIM_FIBER_ASAN
    __sanitizer_start_switch_fiber(fake, main_low, main_size);
#endif
  }
  void in_fiber([[maybe_unused]] void* fake, [[maybe_unused]] bool first) {
#ifdef LOOPSIM_FIBER_ASAN
    if (first) {
      __sanitizer_finish_switch_fiber(fake, &main_low, &main_size);
    } else {
      __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
    }
#endif
  }
};

FiberExecution::FiberExecution(std::unique_ptr<Arena> arena)
    : arena_(std::move(arena)), switches_(std::make_unique<Switches>(arena_ ? arena_->watch() : nullptr)) {}

FiberExecution::~FiberExecution() {
  // A fiber on the ordinary heap is let run to its end, so that what it holds is freed; one in
  // an arena goes with the arena.
  if (started_ && !finished_ && !arena_) abandon();
  if (stack_ != nullptr && !arena_) ::operator delete(stack_);
}

void FiberExecution::switch_to_fiber() {
  std::optional<Arena::Use> use;
  if (arena_) use.emplace(*arena_);
  base::StackWatch* watch = base::stack_watch;
  base::stack_watch = &switches_->stacks;
  void* fake = nullptr;
  switches_->to_fiber(&fake);
  ctxd::transfer_t back = ctxd::jump_fcontext(fiber_, this);
  switches_->back_in_main(fake);
  fiber_ = back.fctx;
  base::stack_watch = watch;
}

void FiberExecution::entry(ctxd::transfer_t from) {
  auto* self = static_cast<FiberExecution*>(from.data);
  self->main_ = from.fctx;
  self->switches_->in_fiber(nullptr, true);
  try {
    self->body();
  } catch (const sim::ScenarioError& e) {
    Arena::Pause outside;  // the message outlives the arena's state
    self->failure_ = Failure{Failure::Kind::scenario, e.what(), e.hint};
  } catch (const std::exception& e) {
    Arena::Pause outside;
    self->failure_ = Failure{Failure::Kind::other, e.what(), {}};
  }
  self->finished_ = true;
  void* fake = nullptr;
  self->switches_->to_main(&fake);
  ctxd::jump_fcontext(self->main_, nullptr);
  LOOPSIM_ASSERT(false);  // a finished fiber is never resumed
}

Stop FiberExecution::advance() {
  LOOPSIM_ASSERT(!finished_);
  if (!started_) {
    started_ = true;
    {
      std::optional<Arena::Use> use;
      if (arena_) use.emplace(*arena_);
      stack_ = ::operator new(fiber_stack);  // in the arena, if there is one
      stack_bytes_ = fiber_stack;
    }
    switches_->stacks.allocated(stack_, stack_bytes_);
    switches_->paused_on = stack_;
    fiber_ = ctxd::make_fcontext(static_cast<char*>(stack_) + stack_bytes_, stack_bytes_, &entry);
  }
  switch_to_fiber();
  if (failure_) {
    Failure failure = std::move(*failure_);
    failure_.reset();
    switch (failure.kind) {
      case Failure::Kind::scenario: throw sim::ScenarioError(failure.what, failure.hint);
      case Failure::Kind::other: break;
    }
    throw std::runtime_error(failure.what);
  }
  if (finished_) throw std::logic_error("explore: an execution ended without an end stop");
  return stop_;
}

std::uint32_t FiberExecution::pause(const Stop& stop) {
  if (abandoned_) return 0;
  stop_ = stop;
  char here = 0;
  base::note_stack_depth(&here);
  switches_->paused_on = &here;
  void* fake = nullptr;
  switches_->to_main(&fake);
  ctxd::transfer_t resumed = ctxd::jump_fcontext(main_, nullptr);
  switches_->in_fiber(fake, false);
  main_ = resumed.fctx;
  return abandoned_ ? 0 : pick_;
}

std::unique_ptr<Saved> FiberExecution::save() {
  if (!arena_ || !started_ || finished_) return nullptr;
  std::unique_ptr<FiberSaved> saved;
  if (spare_.empty()) {
    saved = std::make_unique<FiberSaved>();
  } else {
    saved.reset(static_cast<FiberSaved*>(spare_.back().release()));
    spare_.pop_back();
  }
  // A snapshot is taken paused, at a stop: the fiber's context is what a restore resumes.
  LOOPSIM_ASSERT(fiber_ != nullptr && !abandoned_);
  arena_->save(saved->image);
  saved->fiber = fiber_;
  saved->stop = stop_;
  saved->steps = steps_;
  saved->paused_on = switches_->paused_on;
  return saved;
}

void FiberExecution::restore(const Saved& saved) {
  const auto& from = dynamic_cast<const FiberSaved&>(saved);
  LOOPSIM_ASSERT(arena_ != nullptr && started_);
  LOOPSIM_ASSERT(from.fiber != nullptr);  // a snapshot holds a paused fiber to go on with
  LOOPSIM_ASSERT(from.paused_on != nullptr);  // and where its stack stood, for the stacks' record
  arena_->restore(from.image);
  fiber_ = from.fiber;
  stop_ = from.stop;
  steps_ = from.steps;
  switches_->paused_on = from.paused_on;
  finished_ = false;
  abandoned_ = false;
}

void FiberExecution::recycle(std::unique_ptr<Saved> saved) {
  if (saved && spare_.size() < 4096) spare_.push_back(std::move(saved));
}

void FiberExecution::abandon() {
  if (!started_ || finished_) return;
  if (arena_) {
    finished_ = true;  // nothing to free: the arena holds it all
    return;
  }
  abandoned_ = true;
  while (!finished_) switch_to_fiber();
}

}  // namespace loopsim::explore
