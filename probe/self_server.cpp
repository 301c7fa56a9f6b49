#include "probe/self_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "scenario/scenario.hpp"

namespace loopsim::probe {

namespace {
constexpr const char* hint = "--live 127.0.0.1:8080 (a server on loopback), or --live self (loopsim live --config FILE)";
}  // namespace

std::uint16_t SelfServer::start(const std::string& file, const std::vector<std::string>& set) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw sim::ScenarioError("--live:1:1: pipe: " + std::string(std::strerror(errno)), hint);
  std::vector<std::string> argv = {"loopsim", "live", "--listen", "127.0.0.1:0", "--config", file};
  for (const std::string& s : set) {
    argv.push_back("--set");
    argv.push_back(s);
  }
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    ::execv("/proc/self/exe", args.data());
    _exit(127);
  }
  ::close(out[1]);
  std::string line;
  pollfd p{out[0], POLLIN, 0};
  while (line.find('\n') == std::string::npos && ::poll(&p, 1, 10'000) > 0) {
    char buffer[256];
    ssize_t n = ::read(out[0], buffer, sizeof buffer);
    if (n <= 0) break;
    line.append(buffer, std::size_t(n));
  }
  ::close(out[0]);
  const std::string prefix = "listening on 127.0.0.1:";
  if (line.rfind(prefix, 0) != 0) {
    stop();
    throw sim::ScenarioError("--live:1:1: loopsim live --config " + file + " did not start (it said \"" +
                                 line.substr(0, line.find('\n')) + "\")",
                             "run loopsim live --config " + file + " to see why");
  }
  return std::uint16_t(std::stoi(line.substr(prefix.size())));
}

int SelfServer::stop() {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGTERM);
  int status = 0;
  for (int i = 0; i < 400; ++i) {  // its drain: idle connections close at once
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = 0;
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    ::usleep(50'000);
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, &status, 0);
  pid_ = 0;
  return -1;
}

}  // namespace loopsim::probe
