// Writing an export or report to a file without ever leaving a half-written one behind.
#pragma once

#include <functional>
#include <ostream>
#include <string>

namespace mimic::traces {

// Calls `write` on a temporary file next to `path`, then renames it into place. "-" writes to
// standard output. Throws IoError naming the file (directory missing, not writable, disk full).
void write_output_file(const std::string& path, const std::function<void(std::ostream&)>& write);

}  // namespace mimic::traces
