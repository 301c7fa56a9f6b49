// An execution that runs in a fiber of its own, so that it can stop anywhere for the explorer:
// at a decision asked deep inside a simulated thread's kernel call as well as between steps.
// The fiber's body reports each stop through pause(), which switches to the explorer and
// returns the explorer's pick when it switches back.
//
// With an arena, the fiber's stack and everything the body allocates live in it, and the
// execution can be saved at a stop and restored there: the fiber is resumed where it stood.
#pragma once

#include <boost/context/detail/fcontext.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "explore/arena.hpp"
#include "explore/system.hpp"

namespace loopsim::explore {

class FiberExecution : public Execution {
 public:
  // `arena`: null for an execution on the ordinary heap, which cannot be saved.
  explicit FiberExecution(std::unique_ptr<Arena> arena);
  ~FiberExecution() override;

  Stop advance() override;
  void decide(std::uint32_t pick) override { pick_ = pick; }
  std::unique_ptr<Saved> save() override;
  void restore(const Saved& saved) override;
  void recycle(std::unique_ptr<Saved> saved) override;
  void abandon() override;
  std::uint64_t steps() const override { return steps_; }

 protected:
  // The execution itself, in the fiber. It reports every stop with pause() and ends with an
  // end stop; it returns only after the explorer lets it finish (abandon, or the destructor of
  // an execution on the ordinary heap).
  virtual void body() = 0;
  // From the fiber: hands `stop` to advance()'s caller; returns the pick for a decision.
  std::uint32_t pause(const Stop& stop);
  // True once the explorer wants nothing more: pause() then returns 0 at once, and the body
  // runs to its end unwatched.
  bool abandoned() const { return abandoned_; }
  // The stop last handed out (a restored execution's, as it was saved).
  const Stop& paused_at() const { return stop_; }
  std::uint64_t steps_ = 0;

 private:
  static void entry(boost::context::detail::transfer_t from);
  void switch_to_fiber();
  struct Switches;

  std::unique_ptr<Arena> arena_;
  std::unique_ptr<Switches> switches_;
  void* stack_ = nullptr;
  std::size_t stack_bytes_ = 0;
  boost::context::detail::fcontext_t fiber_ = nullptr;  // where the fiber side waits
  boost::context::detail::fcontext_t main_ = nullptr;   // where advance() waits
  Stop stop_;
  std::uint32_t pick_ = 0;
  bool started_ = false;
  bool finished_ = false;  // the body returned
  bool abandoned_ = false;
  // An exception the body let out, copied outside the arena and thrown again by advance() as
  // what it was: a sim::ScenarioError (a target's error, exit 2 as in `loopsim run`), or
  // anything else as a std::runtime_error. (A run's limits cut its trace: sim::RunGuard.)
  struct Failure {
    enum class Kind : std::uint8_t { other, scenario };
    Kind kind = Kind::other;
    std::string what;
    std::string hint;
  };
  std::optional<Failure> failure_;
  std::vector<std::unique_ptr<Saved>> spare_;  // recycled saves, their buffers kept
};

}  // namespace loopsim::explore
