// For tests: runs the loopsim binary (LOOPSIM_BINARY) with arguments through the shell and
// returns its exit status and output.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace loopsim::testing {

struct Outcome {
  int status = -1;     // the exit status; -1 if it did not exit normally
  std::string output;  // stdout, and stderr too unless `separate_stderr`
};

inline Outcome run_loopsim(const std::string& args, bool separate_stderr = false) {
  std::string command = std::string(LOOPSIM_BINARY) + " " + args + (separate_stderr ? " 2>/dev/null" : " 2>&1");
  Outcome outcome;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return outcome;
  char buffer[4096];
  while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) outcome.output.append(buffer, n);
  int status = pclose(pipe);
  outcome.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return outcome;
}

// Paths in the temporary directory that no other test process uses (ctest runs them in
// parallel, and other checkouts may run the same tests at once), removed when the process ends.
class TempPaths {
 public:
  std::string make(const std::string& name) {
    auto unique = "loopsim-" + std::to_string(getpid()) + "-" + name;
    paths_.push_back((std::filesystem::temp_directory_path() / unique).string());
    return paths_.back();
  }
  ~TempPaths() {
    std::error_code ignored;
    for (const auto& path : paths_) std::filesystem::remove_all(path, ignored);
  }

 private:
  std::vector<std::string> paths_;
};

inline std::string temp_path(const std::string& name) {
  static TempPaths paths;
  return paths.make(name);
}

// A file's whole text ("" when it cannot be read).
inline std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline const std::string accept_burst = std::string(LOOPSIM_SOURCE_DIR) + "/scenarios/accept-burst.toml";

}  // namespace loopsim::testing
