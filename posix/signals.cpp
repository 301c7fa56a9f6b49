// Signals in virtual time: the seam keeps the dispositions of the signals a scenario can send,
// and delivers each to the program's main thread as Linux would, on its way back from a call.
#include <signal.h>

#include <cstring>

#include "posix/seam.hpp"
#include "sim/scenario.hpp"

namespace loopsim::posix {

bool Seam::simulated_signal(int signal) {
  for (const auto& [number, name] : sim::action_signals) {
    if (number == signal) return true;
  }
  return false;
}

long Seam::sigaction(int signal, const struct sigaction* action, struct sigaction* old) {
  struct sigaction none{};
  none.sa_handler = SIG_DFL;
  auto it = actions_.find(signal);
  if (old != nullptr) *old = it != actions_.end() ? it->second : none;
  if (action != nullptr) actions_[signal] = *action;
  return 0;
}

void Seam::signal(int signal) {
  pending_signals_ |= std::uint64_t(1) << signal;
  kernel_->interrupt(thread_);
}

void Seam::raise_signal(int signal) {
  pending_signals_ |= std::uint64_t(1) << signal;
  if (this_thread() == nullptr) deliver_signals();
}

bool Seam::restarts() const {
  for (int signal = 1; signal < 64; ++signal) {
    if ((pending_signals_ & (std::uint64_t(1) << signal)) == 0) continue;
    auto it = actions_.find(signal);
    if (it == actions_.end()) return false;  // the default action ends the process: no restart
    const struct sigaction& a = it->second;
    if (a.sa_handler != SIG_IGN && (a.sa_flags & SA_RESTART) == 0) return false;
  }
  return true;
}

void Seam::deliver_signals() {
  while (pending_signals_ != 0) {
    const int signal = __builtin_ctzll(pending_signals_);
    pending_signals_ &= ~(std::uint64_t(1) << signal);
    struct sigaction a{};
    a.sa_handler = SIG_DFL;
    if (auto it = actions_.find(signal); it != actions_.end()) a = it->second;
    if (a.sa_handler == SIG_IGN) continue;
    if (sim::stopping_signal(signal)) trace_->events.push_back(sim::ev::ShutdownBegin{now(), 0});
    if (a.sa_handler == SIG_DFL) exited(128 + signal);  // each of these ends the process
    if (a.sa_flags & SA_RESETHAND) actions_[signal].sa_handler = SIG_DFL;
    if (a.sa_flags & SA_SIGINFO) {
      siginfo_t info;
      std::memset(&info, 0, sizeof info);
      info.si_signo = signal;
      info.si_code = SI_USER;
      a.sa_sigaction(signal, &info, nullptr);
    } else {
      a.sa_handler(signal);
    }
  }
}

}  // namespace loopsim::posix
