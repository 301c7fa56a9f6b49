// The scenario reader's [target] section: an unmodified program, where it runs and what it
// may cost, with exec[0] resolved as a shell would.
#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "scenario/properties.hpp"
#include "scenario/scenario.hpp"
#include "scenario/scenario_reading.hpp"
#include "scenario/units.hpp"

namespace loopsim::sim::reading {

constexpr std::string_view exec_hint = R"(e.g. exec = ["./uv_http", "--port", "8080"])";

std::vector<std::string> read_exec(C c, N n, K k) {
  std::vector<std::string> exec;
  for (const toml::node& item : c.as<toml::array>(n, k, "an array of strings", exec_hint)) {
    exec.push_back(c.as<std::string>(item, k, "a string", exec_hint));
    if (exec.back().find('\0') != std::string::npos)
      c.fail(item.source(), cat(k, ": an argument cannot hold a NUL"), exec_hint);
  }
  if (exec.empty() || exec.front().empty())
    c.fail(n.source(), cat(k, " must name a program"), exec_hint);
  return exec;
}


}  // namespace loopsim::sim::reading

namespace loopsim::sim {

// The target's folder: `dir` from the scenario file's folder, or that folder; absolute.
std::string target_folder(const std::string& file, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::path folder = fs::path(file).parent_path();
  if (!dir.empty()) folder = fs::path(dir).is_absolute() ? fs::path(dir) : folder / dir;
  return fs::absolute(folder.empty() ? fs::path(".") : folder, error).lexically_normal().string();
}

}  // namespace loopsim::sim

namespace loopsim::sim::reading {

// exec[0] as a path: with a slash, from the target's folder when relative; without one,
// looked up on PATH as a shell does. Empty when there is no such file.
std::string resolve_program(const std::string& folder, const std::string& name) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (name.find('/') != std::string::npos) {
    fs::path path = name.front() == '/' ? fs::path(name) : fs::path(folder) / name;
    return fs::is_regular_file(path, error) ? fs::absolute(path, error).lexically_normal().string() : std::string();
  }
  // Programs built with loopsim (itself, and its examples), beside it; then PATH.
  fs::path self = fs::read_symlink("/proc/self/exe", error).parent_path();
  for (const fs::path& built : {self / name, self / "examples" / name}) {
    if (!self.empty() && fs::is_regular_file(built, error)) return built.string();
  }
  const char* search = std::getenv("PATH");
  std::string_view dirs = search != nullptr ? search : "/usr/local/bin:/usr/bin:/bin";
  for (std::size_t start = 0; start <= dirs.size();) {
    std::size_t colon = std::min(dirs.find(':', start), dirs.size());
    fs::path dir(std::string(dirs.substr(start, colon - start)));
    if (!dir.empty() && fs::is_regular_file(dir / name, error)) return (dir / name).string();
    start = colon + 1;
  }
  return {};
}

void finish_target(const Context& c, const toml::table& table, Scenario& s) {
  if (!table.contains("exec"))
    c.fail(table.source(), "[target] needs exec, the program to run", exec_hint);
  if (!table.contains("port"))
    c.fail(table.source(), "[target] needs port, where the program listens", "e.g. port = 8080");
  TargetSpec& t = *s.target;
  t.folder = target_folder(c.file(), table["dir"].value_or(std::string()));
  std::error_code error;
  if (!std::filesystem::is_directory(t.folder, error)) {
    c.fail(table["dir"].node()->source(), cat("target.dir: no folder ", t.folder),
           "a relative dir is taken from the scenario file's folder");
  }
  t.program = resolve_program(t.folder, t.exec.front());
  if (t.program.empty())
    c.fail(table["exec"].node()->source(),
           cat("target.exec: no program \"", t.exec.front(), "\"",
               t.exec.front().find('/') != std::string::npos ? " (a relative path is taken from the target's folder)"
                                                             : " on PATH"),
           "a path with a slash is taken from the target's folder (target.dir, or the scenario file's); a bare name is looked for beside loopsim and among the examples built with it, then on PATH");
}

const Field<Scenario> target_fields[] = {
    {"exec", [](C c, N n, K k, auto& s) { s.target->exec = read_exec(c, n, k); }},
    {"port", [](C c, N n, K k, auto& s) { s.target->port = int(read_integer(c, n, k, 1, 65535)); }},
    {"call_cost", [](C c, N n, K k, auto& s) { s.target->call_cost = read_duration(c, n, k); }},
    {"dir", [](C c, N n, K k, auto&) { read_string(c, n, k); }},  // resolved in finish_target
    {"preemptions", [](C c, N n, K k, auto& s) { s.target->preemptions = int(read_integer(c, n, k, 0, 1000)); }},
    {"spin_limit", [](C c, N n, K k, auto& s) { s.target->spin_limit = read_duration(c, n, k, true); }},
};
const Section<Scenario> target_section{"target", "[target]", target_fields, {}, finish_target};

}  // namespace loopsim::sim::reading
