// Executions in forked processes, resumed from snapshots. The processes:
//
// - the explorer, which keeps the state graph and drives one execution at a time;
// - the origin, forked before the search grows: a snapshot of "nothing started yet", which
//   starts an execution for a prefix (replaying it) when no snapshot of its last decision exists;
// - snapshots: forked by an execution just before a decision the explorer will branch on, and
//   paused there. Each alternative the explorer sends one resumes a fork of it, which takes the
//   alternative and goes on;
// - executions: each talks to the explorer over its snapshot's socket, a step per command.
//
// Exactly one execution runs at a time; the others are paused in a read. A snapshot serves one
// alternative at a time: it waits until its execution is done with the socket (a byte on a
// pipe, or the pipe's end if the execution died, which it reports). A finished execution stays
// until its own snapshots have ended, so that every process is reaped by its parent; a snapshot
// ends when the explorer closes its socket, which it does once no branch needs it.
//
// Every process but the explorer leaves by _exit: nothing of the explorer's (its stdio buffers,
// a test framework's state) runs twice.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "explore/runner.hpp"

namespace loopsim::explore {

namespace {

// ---- Messages: chunked over SOCK_SEQPACKET, descriptors with the last chunk ----

enum class Op : std::uint8_t { resume, stop };
enum class Kind : std::uint8_t { state, outcome, stopped, error, died };

class Writer {
 public:
  template <class T>
  void put(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    const char* p = reinterpret_cast<const char*>(&value);
    bytes_.insert(bytes_.end(), p, p + sizeof value);
  }
  void put(const std::string& text) {
    put(static_cast<std::uint64_t>(text.size()));
    bytes_.insert(bytes_.end(), text.begin(), text.end());
  }
  const std::vector<char>& bytes() const { return bytes_; }

 private:
  std::vector<char> bytes_;
};

class Reader {
 public:
  explicit Reader(const std::vector<char>& bytes) : bytes_(bytes) {}
  template <class T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T value;
    need(sizeof value);
    std::memcpy(&value, bytes_.data() + at_, sizeof value);
    at_ += sizeof value;
    return value;
  }
  std::string text() {
    auto size = get<std::uint64_t>();
    need(size);
    std::string s(bytes_.data() + at_, size);
    at_ += size;
    return s;
  }

 private:
  void need(std::size_t n) const {
    if (bytes_.size() - at_ < n) throw std::runtime_error("explore: a truncated message from an execution");
  }
  const std::vector<char>& bytes_;
  std::size_t at_ = 0;
};

constexpr std::size_t chunk_bytes = 32 * 1024;

// Sends one message; false if the peer is gone.
bool send_message(int fd, const std::vector<char>& bytes, const std::vector<int>& fds = {}) {
  std::size_t at = 0;
  do {
    std::size_t n = std::min(chunk_bytes, bytes.size() - at);
    char more = at + n < bytes.size() ? 1 : 0;
    iovec iov[2] = {{&more, 1}, {const_cast<char*>(bytes.data()) + at, n}};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = 2;
    std::vector<char> control;
    if (!more && !fds.empty()) {
      control.assign(CMSG_SPACE(sizeof(int) * fds.size()), 0);
      msg.msg_control = control.data();
      msg.msg_controllen = control.size();
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
      std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    ssize_t sent;
    do {
      sent = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    if (sent < 0) return false;
    at += n;
  } while (at < bytes.size());
  return true;
}

// Receives one message; false at the end of the stream (the peer is gone).
bool receive_message(int fd, std::vector<char>& bytes, std::vector<int>& fds) {
  bytes.clear();
  fds.clear();
  std::vector<char> buffer(chunk_bytes + 1);
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 64)];
  for (;;) {
    iovec iov{buffer.data(), buffer.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t got;
    do {
      got = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    } while (got < 0 && errno == EINTR);
    if (got <= 0) return false;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      std::size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < n; ++i) {
        int received;
        std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        fds.push_back(received);
      }
    }
    if (msg.msg_flags & MSG_CTRUNC) throw std::runtime_error("explore: too many snapshots in one step");
    bytes.insert(bytes.end(), buffer.begin() + 1, buffer.begin() + got);
    if (buffer[0] == 0) return true;
  }
}

void close_fd(int fd) {
  if (fd >= 0) ::close(fd);
}

// Waits for every child (children of a process that is about to leave).
void reap_all() {
  for (;;) {
    pid_t pid = ::wait(nullptr);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) return;
  }
}

void reap_finished() {
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

using ForkPolicy = ForkingOptions;

struct Resume {
  std::uint64_t ticket = 0;
  std::uint32_t snapshots = 0;
  std::vector<std::uint32_t> picks;
  int done = -1;  // the pipe to tell the snapshot the execution is done with the socket
};

// A snapshot (or the origin) serving alternatives on `fd`. Returns only in a resumed copy, with
// what it is to do; the snapshot itself leaves when the explorer closes the socket.
Resume serve(int fd) {
  std::vector<char> bytes;
  std::vector<int> fds;
  for (;;) {
    reap_finished();
    if (!receive_message(fd, bytes, fds)) {
      reap_all();
      ::_exit(0);
    }
    Reader in(bytes);
    Resume resume;
    // A stop meant for an execution that had already finished: nothing to do.
    if (in.get<Op>() != Op::resume) continue;
    resume.ticket = in.get<std::uint64_t>();
    resume.snapshots = in.get<std::uint32_t>();
    auto count = in.get<std::uint64_t>();
    resume.picks.resize(count);
    for (auto& pick : resume.picks) pick = in.get<std::uint32_t>();
    int done[2];
    if (::pipe2(done, O_CLOEXEC) != 0) ::_exit(4);
    pid_t pid = ::fork();
    if (pid == 0) {
      close_fd(done[0]);
      resume.done = done[1];
      return resume;
    }
    close_fd(done[1]);
    char byte = 0;
    ssize_t got = -1;
    if (pid > 0) {
      do {
        got = ::read(done[0], &byte, 1);
      } while (got < 0 && errno == EINTR);
    }
    close_fd(done[0]);
    if (got != 1) {
      // The execution never finished with the socket: it died (or could not be forked).
      int status = 0;
      if (pid > 0) {
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
      }
      Writer out;
      out.put(Kind::died);
      out.put(resume.ticket);
      out.put(static_cast<std::int32_t>(pid > 0 ? status : -1));
      send_message(fd, out.bytes());
    }
  }
}

// ---- The execution's side ----

// One per process that runs executions: the origin's copy starts it, a snapshot's copy resumes
// it. It is the execution's chooser, so it sees every decision as it is made.
class Worker final : public model::Chooser {
 public:
  Worker(const System& system, const ForkPolicy& policy) : system_(system), policy_(policy) {}

  // In a copy of the origin: starts an execution that makes `resume.picks` first.
  [[noreturn]] void start(int channel, Resume resume) {
    try {
      adopt(channel, resume, 0);
      execution_ = system_.start(*this);
      if (resume.picks.empty()) {
        send_state(true, 0, execution_->accepted());
      } else {
        step_and_report();
      }
      run_to_end();
    } catch (const std::exception& e) {
      fail(e.what());
    }
  }

  std::uint32_t choose(model::ChoiceKind kind, std::uint32_t options) override {
    std::size_t i = made_.size();
    std::uint32_t pick = 0;
    int snapshot = -1;
    if (i < replay_from_ + picks_.size()) {
      pick = std::min(picks_[i - replay_from_], options - 1);
    } else if (budget_ > 0 && i < policy_.depth && generation_ + 2 <= policy_.generations &&
               steps_ - base_steps_ >= policy_.steps) {
      --budget_;
      std::optional<std::uint32_t> resumed;
      snapshot = take_snapshot(resumed);
      if (resumed) pick = std::min(*resumed, options - 1);
    }
    made_.push_back(model::Choice{kind, options, pick});
    snapshot_fds_.push_back(snapshot);
    return pick;
  }

 private:
  // Takes the decisions of `resume.picks` from decision `at` on.
  void adopt(int channel, const Resume& resume, std::size_t at) {
    channel_ = channel;
    done_ = resume.done;
    ticket_ = resume.ticket;
    budget_ = resume.snapshots;
    picks_ = resume.picks;
    replay_from_ = at;
  }

  // Forks a snapshot paused before this decision. Returns its socket here, or -1 in a resumed
  // copy of it, with the pick it was resumed with in `resumed`.
  int take_snapshot(std::optional<std::uint32_t>& resumed) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) return -1;
    pid_t pid = ::fork();
    if (pid < 0) {
      close_fd(pair[0]);
      close_fd(pair[1]);
      return -1;  // no room for a process: this decision's alternatives are replayed instead
    }
    if (pid > 0) {
      close_fd(pair[1]);
      return pair[0];
    }
    // The snapshot: it keeps nothing of the execution's but its memory.
    close_fd(pair[0]);
    close_fd(channel_);
    close_fd(done_);
    for (int fd : snapshot_fds_) close_fd(fd);
    generation_ += 2;
    base_steps_ = steps_;
    Resume resume = serve(pair[1]);
    // A resumed copy: the decisions before this one in the step are behind it, not its own.
    adopt(pair[1], resume, made_.size());
    std::fill(snapshot_fds_.begin(), snapshot_fds_.end(), -1);
    if (resume.picks.empty()) ::_exit(4);
    resumed = resume.picks.front();
    return -1;
  }

  // Runs a step, and the steps after it that replay the picks (silently), then reports it.
  bool step_and_report() {
    std::size_t before;
    std::uint64_t accepted_before;
    bool stepped;
    do {
      before = made_.size();
      accepted_before = execution_->accepted();
      stepped = execution_->step();
      // A copy resumed inside the step comes out here too, with its own channel and picks.
      if (stepped) ++steps_;
      if (made_.size() < replay_from_ + picks_.size()) ++replayed_;
    } while (stepped && made_.size() < replay_from_ + picks_.size());
    if (!stepped && made_.size() < replay_from_ + picks_.size()) {
      throw std::logic_error("explore: a replay ended before its prefix");
    }
    send_state(stepped, before, accepted_before);
    return stepped;
  }

  // Runs to the end, reporting every step, unless the explorer says stop first. The explorer
  // reads the reports as they come; it does not answer them, so that a step costs no round trip.
  [[noreturn]] void run_to_end() {
    for (;;) {
      if (stop_requested()) {
        Writer out;
        out.put(Kind::stopped);
        out.put(ticket_);
        send_message(channel_, out.bytes());
        leave();
      }
      if (!step_and_report()) {
        send_outcome(execution_->finish());
        leave();
      }
    }
  }

  bool stop_requested() {
    char op;
    ssize_t got;
    do {
      got = ::recv(channel_, &op, 1, MSG_DONTWAIT);
    } while (got < 0 && errno == EINTR);
    if (got == 0) leave();  // the explorer is gone
    return got > 0;
  }

  void send_state(bool stepped, std::size_t first, std::uint64_t accepted_before) {
    Writer out;
    out.put(Kind::state);
    out.put(ticket_);
    out.put(stepped);
    out.put(execution_->digest());
    out.put(execution_->backlog());
    out.put(accepted_before);
    out.put(execution_->accepted());
    out.put(execution_->now().count());
    out.put(execution_->quiescent());
    out.put(steps_);
    out.put(replayed_);
    out.put(static_cast<std::uint64_t>(first));
    out.put(static_cast<std::uint64_t>(made_.size() - first));
    std::vector<int> fds;
    for (std::size_t i = first; i < made_.size(); ++i) {
      out.put(made_[i].kind);
      out.put(made_[i].options);
      out.put(made_[i].pick);
      bool snapshot = i < snapshot_fds_.size() && snapshot_fds_[i] >= 0;
      out.put(snapshot);
      if (snapshot) fds.push_back(snapshot_fds_[i]);
    }
    if (!send_message(channel_, out.bytes(), fds)) leave();
    for (int fd : fds) close_fd(fd);
    for (std::size_t i = first; i < snapshot_fds_.size(); ++i) snapshot_fds_[i] = -1;
    replayed_ = 0;
  }

  void send_outcome(const Outcome& outcome) {
    Writer out;
    out.put(Kind::outcome);
    out.put(ticket_);
    out.put(static_cast<std::uint64_t>(outcome.verdicts.size()));
    for (const checker::Verdict& v : outcome.verdicts) {
      out.put(v.property);
      out.put(v.of);
      out.put(v.held);
      out.put(v.measured);
      out.put(v.bound);
      out.put(v.unit);
      out.put(v.bound_text);
      out.put(v.detail);
      out.put(v.first_bad.has_value());
      out.put(static_cast<std::uint64_t>(v.first_bad.value_or(0)));
    }
    out.put(static_cast<std::uint64_t>(outcome.violated.size()));
    for (const std::string& name : outcome.violated) out.put(name);
    send_message(channel_, out.bytes());
  }

  [[noreturn]] void fail(const std::string& what) {
    Writer out;
    out.put(Kind::error);
    out.put(ticket_);
    out.put(what);
    send_message(channel_, out.bytes());
    ::_exit(3);
  }

  // Done with the socket: the snapshot may serve its next alternative. This process stays
  // until its own snapshots have ended.
  [[noreturn]] void leave() {
    close_fd(channel_);
    for (int fd : snapshot_fds_) close_fd(fd);
    char byte = 'd';
    if (done_ >= 0) {
      while (::write(done_, &byte, 1) < 0 && errno == EINTR) {
      }
    }
    close_fd(done_);
    reap_all();
    ::_exit(0);
  }

  const System& system_;
  const ForkPolicy& policy_;
  int channel_ = -1;
  int done_ = -1;
  std::uint64_t ticket_ = 0;
  std::uint32_t budget_ = 0;
  std::vector<std::uint32_t> picks_;  // the decisions to take from decision replay_from_ on
  std::size_t replay_from_ = 0;
  std::vector<model::Choice> made_;
  std::vector<int> snapshot_fds_;  // beside made_: a snapshot's socket not yet sent, or -1
  std::unique_ptr<Execution> execution_;
  std::uint64_t steps_ = 0;
  std::uint64_t replayed_ = 0;      // steps replayed since the last report
  std::uint64_t base_steps_ = 0;    // steps_ when the snapshot this process descends from was taken
  std::uint32_t generation_ = 0;    // forks between the origin and this process
};

// ---- The explorer's side ----

class Pool;

class ForkedSnapshot final : public Snapshot {
 public:
  // `counted`: one of the snapshots the pool's limit bounds (the origin is not).
  ForkedSnapshot(Pool& pool, int fd, bool counted = true);
  ~ForkedSnapshot() override;
  int fd() const { return fd_; }

 private:
  Pool& pool_;
  int fd_;
  bool counted_;
};

class Pool {
 public:
  std::uint32_t limit = 0;
  std::uint32_t alive = 0;
  std::uint64_t taken = 0;
  std::uint64_t tickets = 0;
};

ForkedSnapshot::ForkedSnapshot(Pool& pool, int fd, bool counted) : pool_(pool), fd_(fd), counted_(counted) {
  if (!counted_) return;
  ++pool_.alive;
  ++pool_.taken;
}

ForkedSnapshot::~ForkedSnapshot() {
  if (counted_) --pool_.alive;
  close_fd(fd_);
}

std::string died_text(std::int32_t status) {
  if (status < 0) return "could not be forked";
  if (WIFSIGNALED(status)) return "died of signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended";
}

class ForkedRunner final : public Runner {
 public:
  ForkedRunner(Pool& pool, std::shared_ptr<Snapshot> held, int fd, std::uint64_t ticket)
      : pool_(pool), held_(std::move(held)), fd_(fd), ticket_(ticket) {}
  // An execution left before its end is told to stop, and its last reports are read past.
  ~ForkedRunner() override {
    if (done_) return;
    Writer out;
    out.put(Op::stop);
    if (!send_message(fd_, out.bytes())) return;
    try {
      for (;;) {
        if (!receive_message(fd_, bytes_, fds_)) return;
        for (int fd : fds_) close_fd(fd);
        Reader in(bytes_);
        auto kind = in.get<Kind>();
        if (in.get<std::uint64_t>() == ticket_ && kind != Kind::state) return;
      }
    } catch (const std::exception&) {
    }
  }

  // The execution runs ahead of the explorer; a step is its next report.
  Report step(std::uint32_t) override { return receive_state(); }

  Outcome finish() override {
    Reader in = receive(Kind::outcome);
    done_ = true;
    Outcome outcome;
    outcome.verdicts.resize(in.get<std::uint64_t>());
    for (checker::Verdict& v : outcome.verdicts) {
      v.property = in.text();
      v.of = in.text();
      v.held = in.get<bool>();
      v.measured = in.get<std::int64_t>();
      v.bound = in.get<std::int64_t>();
      v.unit = in.get<checker::Unit>();
      v.bound_text = in.text();
      v.detail = in.text();
      bool has_first_bad = in.get<bool>();
      auto first_bad = in.get<std::uint64_t>();
      if (has_first_bad) v.first_bad = first_bad;
    }
    outcome.violated.resize(in.get<std::uint64_t>());
    for (std::string& name : outcome.violated) name = in.text();
    return outcome;
  }

  Report receive_state() {
    Reader in = receive(Kind::state);
    Report r;
    r.stepped = in.get<bool>();
    r.digest = in.get<std::uint64_t>();
    r.backlog = in.get<bool>();
    r.accepted_before = in.get<std::uint64_t>();
    r.accepted = in.get<std::uint64_t>();
    r.now = Nanos{in.get<Nanos::rep>()};
    r.quiescent = in.get<bool>();
    r.steps = in.get<std::uint64_t>();
    r.replayed = in.get<std::uint64_t>();
    r.first = in.get<std::uint64_t>();
    r.decisions.resize(in.get<std::uint64_t>());
    r.snapshots.resize(r.decisions.size());
    std::size_t next_fd = 0;
    for (std::size_t i = 0; i < r.decisions.size(); ++i) {
      r.decisions[i].kind = in.get<model::ChoiceKind>();
      r.decisions[i].options = in.get<std::uint32_t>();
      r.decisions[i].pick = in.get<std::uint32_t>();
      if (in.get<bool>()) {
        if (next_fd >= fds_.size()) throw std::runtime_error("explore: a snapshot's socket went missing");
        r.snapshots[i] = std::make_shared<ForkedSnapshot>(pool_, fds_[next_fd++]);
      }
    }
    for (std::size_t i = next_fd; i < fds_.size(); ++i) close_fd(fds_[i]);
    return r;
  }

 private:
  // The next message for this execution, of kind `want`; an error or a death is thrown.
  Reader receive(Kind want) {
    for (;;) {
      if (!receive_message(fd_, bytes_, fds_)) {
        done_ = true;
        throw std::runtime_error("explore: an execution's process is gone");
      }
      Reader in(bytes_);
      auto kind = in.get<Kind>();
      if (in.get<std::uint64_t>() != ticket_) {
        for (int fd : fds_) close_fd(fd);
        continue;  // the last words of an earlier execution
      }
      if (kind == want) return in;
      done_ = true;
      if (kind == Kind::error) throw std::runtime_error(in.text());
      if (kind == Kind::died) {
        throw std::runtime_error("explore: an execution " + died_text(in.get<std::int32_t>()) +
                                 " (a bug in the loop or the simulation: replay its choices with `loopsim run`)");
      }
      throw std::runtime_error("explore: an unexpected message from an execution");
    }
  }

  Pool& pool_;
  std::shared_ptr<Snapshot> held_;  // the snapshot this execution was resumed from
  int fd_;
  std::uint64_t ticket_;
  bool done_ = false;
  std::vector<char> bytes_;
  std::vector<int> fds_;
};

class ForkingRunners final : public Runners {
 public:
  ForkingRunners(const System& system, const ForkingOptions& options)
      : system_(system), options_(options), replaying_(replaying_runners(system)) {
    std::uint32_t limit = options.limit;
    pool_.limit = limit;
    // The explorer holds a socket per snapshot: make room for them, or say why there is none.
    rlimit files{};
    if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY &&
        files.rlim_cur < rlim_t{limit} + 64) {
      if (files.rlim_max == RLIM_INFINITY || files.rlim_max >= rlim_t{limit} + 64) {
        files.rlim_cur = rlim_t{limit} + 64;
        ::setrlimit(RLIMIT_NOFILE, &files);
      } else {
        throw std::runtime_error("explore: " + std::to_string(limit) + " snapshots need " + std::to_string(limit + 64) +
                                 " descriptors, and the hard limit (ulimit -Hn) is " +
                                 std::to_string(files.rlim_max) + "; ask for fewer snapshots");
      }
    }
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
      throw std::runtime_error(std::string("explore: socketpair: ") + std::strerror(errno));
    }
    origin_pid_ = ::fork();
    if (origin_pid_ < 0) {
      close_fd(pair[0]);
      close_fd(pair[1]);
      throw std::runtime_error(std::string("explore: fork: ") + std::strerror(errno));
    }
    if (origin_pid_ == 0) {
      close_fd(pair[0]);
      ::signal(SIGPIPE, SIG_IGN);
      Resume resume = serve(pair[1]);
      Worker worker(system_, options_);
      worker.start(pair[1], resume);
    }
    close_fd(pair[1]);
    origin_ = std::make_shared<ForkedSnapshot>(pool_, pair[0], false);
  }

  ~ForkingRunners() override {
    origin_.reset();  // the origin ends, once every execution it started has
    while (::waitpid(origin_pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }

  std::unique_ptr<Runner> begin(const std::vector<model::Choice>& prefix, const std::shared_ptr<Snapshot>& base,
                                std::size_t base_at, std::uint32_t snapshots, Report& first) override {
    // With no snapshot to resume from, a replay in this process costs no fork and no messages.
    // The first execution runs forked, so that its decisions can be snapshotted.
    if (!base && !prefix.empty()) return replaying_->begin(prefix, base, base_at, snapshots, first);
    const std::shared_ptr<Snapshot>& from = base ? base : origin_;
    if (!base) base_at = 0;
    int fd = static_cast<ForkedSnapshot&>(*from).fd();
    std::uint64_t ticket = ++pool_.tickets;
    Writer out;
    out.put(Op::resume);
    out.put(ticket);
    out.put(snapshots);
    out.put(static_cast<std::uint64_t>(prefix.size() - base_at));
    for (std::size_t i = base_at; i < prefix.size(); ++i) out.put(prefix[i].pick);
    if (!send_message(fd, out.bytes())) throw std::runtime_error("explore: a snapshot's process is gone");
    auto runner = std::make_unique<ForkedRunner>(pool_, from, fd, ticket);
    first = runner->receive_state();
    return runner;
  }

  std::uint32_t room() const override { return pool_.alive >= pool_.limit ? 0 : pool_.limit - pool_.alive; }
  std::uint64_t taken() const override { return pool_.taken; }

 private:
  const System& system_;
  ForkingOptions options_;
  std::unique_ptr<Runners> replaying_;
  Pool pool_;
  pid_t origin_pid_ = -1;
  std::shared_ptr<Snapshot> origin_;
};

}  // namespace

std::unique_ptr<Runners> forking_runners(const System& system, const ForkingOptions& options) {
  return std::make_unique<ForkingRunners>(system, options);
}

}  // namespace loopsim::explore
