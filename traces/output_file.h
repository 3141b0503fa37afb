// Writing an export or report to a file without ever leaving a half-written one behind.
#pragma once

#include <functional>
#include <ostream>
#include <string>

namespace mimic::traces {

// Calls `write` on a temporary file next to `path`, then renames it into place; a symbolic link's
// target is written (the link stays), and a device or FIFO is written in place. "-" writes to
// standard output. Throws IoError naming the file (directory missing, not writable, disk full, or
// an SQLite database there: a trace is never overwritten by an export or a report).
void write_output_file(const std::string& path, const std::function<void(std::ostream&)>& write);

// The checks write_output_file makes before writing (for commands that check their outputs before
// the work): throws IoError naming the file.
void check_output_path(const std::string& path);

}  // namespace mimic::traces
