// Writing the files a command names, for every command: only regular files, never through a
// symbolic link, never into a FIFO or a device, never over one of the command's own inputs.
// (What a command reads goes through open_input, scenario/scenario.hpp: a regular file of bounded
// size.)
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace loopsim::sim {

// Why `path` may not be written, "" when it may: it is a symbolic link, or it exists and is not
// a regular file (a folder, a FIFO, a device, a socket). Never blocks. Every `why` here reads
// after "cannot write PATH" (": it is a symbolic link, ...").
std::string unwritable_output(const std::string& path);

// Whether `a` and `b` are one existing file (the same st_dev and st_ino, links followed),
// whatever their names.
bool same_file(const std::string& a, const std::string& b);

// The first of `inputs` that `output` would write over, or "" when none.
std::string input_overwritten(const std::string& output, const std::vector<std::string>& inputs);

// Opens `path` for writing, made or emptied, as unwritable_output allows: O_NOFOLLOW, and a
// non-blocking open checked with fstat, so that a FIFO or a device planted after the check is
// refused too, never waited on. Returns the descriptor (O_CLOEXEC), or -1 with `why` set.
int open_output(const std::string& path, std::string& why);

// Writes `path` (as open_output opens it) through `write`. Returns "" or why it could not.
std::string write_output_file(const std::string& path, const std::function<void(std::ostream&)>& write);

}  // namespace loopsim::sim
